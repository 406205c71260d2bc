package emu

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
)

// TestEventBudget: a delete that would wait hours for a reference that
// never comes, with the soft-lockup detector off, stops at the event
// budget with a BudgetError that says what allowed it, at the same virtual
// time on every run, leaving the state as it was.
func TestEventBudget(t *testing.T) {
	ctx := context.Background()
	stopAt := func() time.Duration {
		c := Config{HZ: 1000, CPUs: 2, Preempt: "full", Profile: "6.18", Strategy: "expedited", Watchdog: -1, Ephemeral: true,
			GiveUp: 24 * time.Hour, MaxEvents: 500_000,
			Holds: []netdev.Hold{{Holder: netdev.HolderDst, Forever: true}}}
		b, err := Open(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Add(ctx, ndst.AddRequest{Count: 10, Template: dummyTemplate}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 10})
		var be *BudgetError
		if !errors.As(err, &be) || r == nil || r.Result != ndst.ResultError || !strings.Contains(err.Error(), "--give-up of 24h0m0s") ||
			!strings.Contains(err.Error(), "--watchdog 0") {
			t.Fatalf("Del with a forever hold and a 24 h give-up = %+v, %v; want a BudgetError naming --give-up and --watchdog", r, err)
		}
		if be.Events < 500_000 || be.Events > 500_000+4096 {
			t.Errorf("stopped after %d events, want the budget (500000) within one interrupt poll", be.Events)
		}
		if b.Devices() != 10 {
			t.Errorf("the stopped delete changed the registry: %d devices", b.Devices())
		}
		t.Logf("stopped at %v virtual after %v wall", be.At, time.Since(start).Round(time.Millisecond))
		return be.At
	}
	if a, b := stopAt(), stopAt(); a != b {
		t.Errorf("the budget stopped two identical runs at %v and %v virtual; want the same time", a, b)
	}
}
