package calibrate

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/sim"
)

// TestHostModelStalls: a table's stalls become the emulated machine's; a
// table without them models a machine that never stalls, and says so.
func TestHostModelStalls(t *testing.T) {
	h := &costs.Host{Kernel: "6.1.0-test", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.1", RCU: "tree"}
	c, err := hostModel(h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stalls.Enabled() || len(c.MachineNotes) != 1 || !strings.Contains(c.MachineNotes[0], "never stalls") {
		t.Errorf("no stalls in the table: model stalls %+v, notes %q", c.Stalls, c.MachineNotes)
	}
	h.Stalls = &costs.Stalls{ThresholdNS: 50_000, CPUs: 2,
		StallSet: costs.StallSet{SpunNS: 2e9, Count: 400, StalledNS: 2e8, PerSecond: 222, LengthsNS: []int64{60_000, 400_000, 3_000_000}},
		OneBusy:  &costs.StallSet{SpunNS: 2e9, Count: 300, StalledNS: 2.5e8, PerSecond: 150, LengthsNS: []int64{400_000, 3_000_000}}}
	c, err = hostModel(h)
	if err != nil {
		t.Fatal(err)
	}
	want := sim.StallSet{PerSecond: 222, Durations: []sim.Time{60 * sim.Microsecond, 400 * sim.Microsecond, 3 * sim.Millisecond}}
	if c.Stalls.PerSecond != want.PerSecond || len(c.Stalls.Durations) != 3 || c.Stalls.Durations[2] != want.Durations[2] ||
		c.Stalls.OneBusy.PerSecond != 150 || len(c.Stalls.OneBusy.Durations) != 2 || len(c.MachineNotes) != 0 {
		t.Errorf("model stalls %+v, notes %q; want %+v and no note", c.Stalls, c.MachineNotes, want)
	}

	// The stalling machine's one-by-one deletes take another time (longer
	// where a stall delays the work or the tick that starts a grace
	// period, shorter where it delays the tick that would have come just
	// before the grace period's end past it), and it says how much it
	// stalled; the same seed gives the same time.
	del := func(c emu.Config) (int64, map[string]int64) {
		t.Helper()
		c.Seed = 3
		b, err := emu.Open(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		tmpl, _ := ndst.ParseTemplate("s%d")
		if _, err := b.Add(context.Background(), ndst.AddRequest{Count: 30, Template: tmpl}); err != nil {
			t.Fatal(err)
		}
		r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: true})
		if err != nil {
			t.Fatal(err)
		}
		return *r.VirtualNS, r.Counters
	}
	plain, _ := hostModel(&costs.Host{Kernel: "6.1.0-test", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.1", RCU: "tree"})
	t0, c0 := del(plain)
	t1, c1 := del(c)
	t2, _ := del(c)
	if _, ok := c0["machine_stalls"]; ok {
		t.Errorf("a machine without stalls counts them: %v", c0["machine_stalls"])
	}
	if c1["machine_stalls"] == 0 || t1 == t0 || t1 != t2 {
		t.Errorf("30 one-by-one deletes: %d ns without stalls, %d and %d ns with (%d stalls); want another time, and the same twice", t0, t1, t2, c1["machine_stalls"])
	}
	t.Logf("30 one-by-one deletes: %.1f ms without stalls, %.1f ms with %d stalls of %.1f ms in all", float64(t0)/1e6, float64(t1)/1e6, c1["machine_stalls"], float64(c1["machine_stalled_ns"])/1e6)
}

func TestStallStretch(t *testing.T) {
	h := &costs.Host{Stalls: &costs.Stalls{StallSet: costs.StallSet{PerSecond: 500, LengthsNS: []int64{1e6, 3e6}}}}
	if got := stallStretch(h); math.Abs(got-2) > 1e-9 {
		t.Errorf("500 stalls of 2 ms per second: stretch %g, want 2", got)
	}
	h.Stalls.OneBusy = &costs.StallSet{PerSecond: 100, LengthsNS: []int64{1e6}}
	if got := stallStretch(h); math.Abs(got-1.1) > 1e-9 {
		t.Errorf("one busy CPU, 100 stalls of 1 ms per second: stretch %g, want 1.1", got)
	}
	if got := stallStretch(&costs.Host{}); got != 1 {
		t.Errorf("no stalls: stretch %g, want 1", got)
	}
}
