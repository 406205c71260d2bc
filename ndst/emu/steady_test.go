package emu

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// TestSteadyTicksChangeNoFigure: a wait loop that spins (the expedited
// strategy where synchronize_rcu_expedited is a no-op) gives the same
// result, every counter, phase, latency, kernel-log line and error, whether
// the engine fast-forwards over its steady ticks or runs every one of them
// (sim.Config.EveryTick): across lines, HZ, preemption models, jitter, the
// soft-lockup report, a holder released by an event, a give-up inside the
// spin, and event budgets that stop the run at points inside the skipped
// ticks (on a tick and on a spin step).
func TestSteadyTicksChangeNoFigure(t *testing.T) {
	type cell struct {
		name string
		cfg  Config
		n    int
		one  bool
	}
	exp := func(name string, c Config, n int) cell {
		c.Strategy, c.Ephemeral = "expedited", true
		c.Profile = cmpOr(c.Profile, "2.6.32")
		c.HZ = cmpOr(c.HZ, 1000)
		c.CPUs = cmpOr(c.CPUs, 1)
		return cell{name: name, cfg: c, n: n}
	}
	cells := []cell{
		exp("2.6.32 default cell", Config{Seed: 1}, 1000),
		exp("2.6.32 HZ=100", Config{HZ: 100, Seed: 2}, 20),
		exp("2.6.32 HZ=250 one by one", Config{HZ: 250, Seed: 3}, 20),
		exp("2.6.32 voluntary", Config{Preempt: "voluntary", Seed: 4}, 20),
		exp("2.6.32 no jitter", Config{Jitter: -1, Seed: 5}, 20),
		exp("2.6.32 2 CPUs", Config{CPUs: 2, Seed: 6}, 20),
		exp("2.6.33 soft lockup", Config{Profile: "2.6.33", Seed: 7}, 20),
		exp("2.6.32 give-up in the spin", Config{GiveUp: 3500 * time.Millisecond, Seed: 8}, 5),
		exp("2.6.32 no detector", Config{Watchdog: -1, Seed: 9}, 20),
		exp("2.6.32 dst held 2.5s", Config{Seed: 10, Holds: []netdev.Hold{{Holder: netdev.HolderDst, For: 2500 * sim.Millisecond}}}, 5),
	}
	cells[2].one = true
	for i, budget := range []int64{120_000, 4096*40 + 1, 4096*41 + 2, 4096*63 + 3, 1_000_003, 1_000_004} {
		c := exp(fmt.Sprintf("2.6.32 budget %d", budget), Config{MaxEvents: budget, Seed: uint64(20 + i)}, 600)
		cells = append(cells, c)
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			run := func(every bool) (string, string) {
				cfg := c.cfg
				cfg.EveryTick = every
				b, err := Open(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if _, err := b.Add(context.Background(), ndst.AddRequest{Count: c.n, Template: mustTemplate(t)}); err != nil {
					t.Fatal(err)
				}
				res, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: c.one})
				return virtualJSON(t, res), fmt.Sprint(err)
			}
			fast, fastErr := run(false)
			every, everyErr := run(true)
			if fastErr != everyErr {
				t.Errorf("error fast-forwarded: %s\nevery tick:             %s", fastErr, everyErr)
			}
			if fast != every {
				t.Errorf("results differ:\nfast-forwarded: %s\nevery tick:     %s", fast, every)
			}
			if strings.HasPrefix(c.name, "2.6.32 budget") && !strings.Contains(fastErr, "stopped after") {
				t.Errorf("the budget did not stop the run: %s", fastErr)
			}
		})
	}
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a == zero {
		return b
	}
	return a
}

// virtualJSON is a result as JSON without its wall-clock fields.
func virtualJSON(t *testing.T, r *ndst.Result) string {
	t.Helper()
	if r == nil {
		return "null"
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				if strings.Contains(k, "wall") {
					delete(x, k)
				} else {
					x[k] = strip(y)
				}
			}
		case []any:
			for i := range x {
				x[i] = strip(x[i])
			}
		}
		return v
	}
	out, _ := json.Marshal(strip(v))
	return string(out)
}
