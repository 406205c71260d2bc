package emu

import (
	"context"
	"slices"
	"testing"
)

// Emulated membarrier(GLOBAL) calls wait for a grace period each (at
// least the tick the first FQS scan waits for at HZ=250), the same for
// the same seed, and longer when the machine's other work keeps grace
// periods running (rcu/otherwork.go).
func TestMembarrier(t *testing.T) {
	ctx := context.Background()
	p50 := func(other float64) (int64, []int64) {
		b, err := Open(ctx, Config{Profile: "6.18", HZ: 250, CPUs: 2, Seed: 3, Ephemeral: true, RCUOtherWork: other})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		lats, err := b.Membarrier(ctx, 100)
		if err != nil || len(lats) != 100 {
			t.Fatalf("Membarrier: %d latencies, %v", len(lats), err)
		}
		s := slices.Clone(lats)
		slices.Sort(s)
		if s[0] < 4_000_000 {
			t.Errorf("other work %g: a call took %d ns, less than a tick", other, s[0])
		}
		return s[50], lats
	}
	idle, a := p50(0)
	_, b := p50(0)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different latencies")
	}
	if busy, _ := p50(100); busy <= idle {
		t.Errorf("median %d ns with other work, %d without; want it longer", busy, idle)
	}
	bk, err := Open(ctx, Config{Profile: "6.18", HZ: 250, CPUs: 2, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	if _, err := bk.Membarrier(ctx, 0); err == nil {
		t.Error("Membarrier(0) accepted")
	}
}
