package calibrate

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/sim"
)

func TestLatenessTakesTheFloorOff(t *testing.T) {
	l := lateness([]int64{30, 10, 20, 5010, 110})
	if l == nil || l.FloorNS != 10 || l.N != 5 || l.MinNS != 10 || l.MaxNS != 5010 {
		t.Fatalf("lateness %+v", l)
	}
	if !slices.Equal(l.GroupsNS, []int64{0, 10, 20, 100, 5000}) {
		t.Errorf("groups %v, want the samples less 10", l.GroupsNS)
	}
	if lateness(nil) != nil {
		t.Error("no samples: a lateness")
	}
}

// TestHostModelTickLateness: a table's timer lateness makes the emulated
// machine's ticks late; one-by-one deletes then take longer (a late tick
// delays the grace period's start, its end and the callbacks), with the
// same time for the same seed, and count their late ticks; a table without
// it has ticks on time and no such counters.
func TestHostModelTickLateness(t *testing.T) {
	h := &costs.Host{Kernel: "6.1.0-test", HZ: 250, CPUs: 1, Preempt: "none", Profile: "6.1", RCU: "tree-preempt"}
	plain, err := hostModel(h)
	if err != nil {
		t.Fatal(err)
	}
	if plain.TickLateness != nil {
		t.Fatalf("no lateness in the table: model %v", plain.TickLateness)
	}
	h.TimerLateness = &costs.Lateness{Distribution: costs.Distribution{N: 4}, GroupsNS: []int64{0, 200_000, 1_000_000, 3_000_000}}
	late, err := hostModel(h)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sim.Time{0, 200 * sim.Microsecond, sim.Millisecond, 3 * sim.Millisecond}; !slices.Equal(late.TickLateness, want) {
		t.Fatalf("model lateness %v, want %v", late.TickLateness, want)
	}
	del := func(c emu.Config) (int64, map[string]int64) {
		t.Helper()
		c.Seed = 5
		b, err := emu.Open(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		tmpl, _ := ndst.ParseTemplate("l%d")
		if _, err := b.Add(context.Background(), ndst.AddRequest{Count: 40, Template: tmpl}); err != nil {
			t.Fatal(err)
		}
		r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: true})
		if err != nil {
			t.Fatal(err)
		}
		return *r.VirtualNS, r.Counters
	}
	t0, c0 := del(plain)
	t1, c1 := del(late)
	t2, _ := del(late)
	if _, ok := c0["late_ticks"]; ok {
		t.Errorf("ticks on time, yet counted late: %d", c0["late_ticks"])
	}
	if c1["late_ticks"] == 0 || c1["ticks_late_ns"] == 0 || t1 <= t0 || t1 != t2 {
		t.Errorf("40 one-by-one deletes: %d ns on time, %d and %d ns late (%d late ticks); want longer, and the same twice", t0, t1, t2, c1["late_ticks"])
	}
	t.Logf("40 one-by-one deletes: %.1f ms with ticks on time, %.1f ms with %d late ticks (%.1f ms late in all)",
		float64(t0)/1e6, float64(t1)/1e6, c1["late_ticks"], float64(c1["ticks_late_ns"])/1e6)
}
