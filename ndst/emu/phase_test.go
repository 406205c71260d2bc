package emu

import (
	"context"
	"math"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// With Config.StartPhase the command starts at that phase of the tick, not
// at a seeded one: without jitter, two seeds at one phase give the same
// delete time, and the phases of a PhaseSweep give the times a delete
// takes from different points in the tick (its waits end on ticks).
func TestStartPhase(t *testing.T) {
	ctx := context.Background()
	del := func(c Config) int64 {
		t.Helper()
		b, err := Open(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Add(ctx, ndst.AddRequest{Count: 100, Template: mustTemplate(t)}); err != nil {
			t.Fatal(err)
		}
		d, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32})
		if err != nil {
			t.Fatal(err)
		}
		return *d.VirtualNS
	}
	base := Config{Profile: "6.18", HZ: 250, CPUs: 2, Jitter: -1, Ephemeral: true}
	seen := map[int64]bool{}
	sweep := PhaseSweep(base, 8)
	for i, c := range sweep {
		if want := (float64(i) + 0.5) / 8; *c.StartPhase != want || c.Seed != uint64(i) {
			t.Fatalf("PhaseSweep()[%d]: phase %g, seed %d; want %g, %d", i, *c.StartPhase, c.Seed, want, i)
		}
		a := del(c)
		c.Seed += 100
		if b := del(c); a != b {
			t.Errorf("phase %g: seeds %d and %d give %d and %d ns; want the same time (no jitter, the phase fixed)", *c.StartPhase, c.Seed-100, c.Seed, a, b)
		}
		seen[a] = true
	}
	if len(seen) < 2 {
		t.Errorf("8 start phases gave one delete time %v; want the tick's steps to show", seen)
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		c := base
		c.StartPhase = &bad
		if _, err := Open(ctx, c); err == nil || !ndst.IsUsage(err) {
			t.Errorf("StartPhase %g: Open() = %v; want a usage error", bad, err)
		}
	}
}
