package calibrate

import (
	"context"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
)

// The rate of the other work's RCU callbacks is none when the emulated
// membarrier median already reaches the measured one, and grows with the
// measured median; the table's host keeps it and the emulated host uses it.
func TestSolveOtherWork(t *testing.T) {
	host := func() *costs.Host {
		return &costs.Host{Kernel: "6.18.0", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.18", RCU: "tree-preempt"}
	}
	var last float64
	for i, p50 := range []int64{4_000_000, 7_000_000, 9_000_000} {
		r := &Report{GP: &costs.Distribution{N: 200, P50NS: p50}, Table: &costs.Table{Host: host()}}
		if err := r.solveOtherWork(context.Background()); err != nil {
			t.Fatal(err)
		}
		o := r.OtherWork
		if o == nil || r.Table.Host.OtherWork != o {
			t.Fatalf("p50 %d: no rate solved, or not in the table's host", p50)
		}
		switch {
		case i == 0 && (o.PerCPUSecond != 0 || !strings.Contains(r.otherWorkSummary(), "no RCU callbacks")):
			t.Errorf("p50 %d below the idle emulated %d: rate %g, summary %q; want none", p50, o.IdleP50NS, o.PerCPUSecond, r.otherWorkSummary())
		case i > 0 && (o.PerCPUSecond <= last || o.EmulatedP50NS < p50):
			t.Errorf("p50 %d: rate %g (emulated median %d), want more than %g with a median at least the measured", p50, o.PerCPUSecond, o.EmulatedP50NS, last)
		}
		last = o.PerCPUSecond
		c, err := HostModel(r.Table)
		if err != nil || c.RCUOtherWork != o.PerCPUSecond {
			t.Errorf("HostModel: other work %g, %v; want %g", c.RCUOtherWork, err, o.PerCPUSecond)
		}
	}
	// A median the emulated host cannot reach: the bound, one a tick.
	r0 := &Report{GP: &costs.Distribution{N: 200, P50NS: 40_000_000}, Table: &costs.Table{Host: host()}}
	if err := r0.solveOtherWork(context.Background()); err != nil || r0.OtherWork.PerCPUSecond != 250 || !strings.Contains(r0.otherWorkSummary(), "the bound") {
		t.Errorf("p50 40 ms: %v, %+v, %q; want the bound, 250 at HZ=250", err, r0.OtherWork, r0.otherWorkSummary())
	}
	// No membarrier figures (one CPU, or no membarrier): nothing solved.
	r := &Report{Table: &costs.Table{Host: host()}}
	if err := r.solveOtherWork(context.Background()); err != nil || r.OtherWork != nil || r.otherWorkSummary() != "" {
		t.Errorf("without GP figures: %v, %+v", err, r.OtherWork)
	}
}

// TestHostOtherWorkNotNearer: a table whose rate, the bound, emulated a
// median farther from the measured one than none (a 2-vCPU guest's:
// 13.92 ms at 250 a CPU a second, 14.43 ms with none, 14.84 ms measured)
// runs its emulated host with none, and the report says why.
func TestHostOtherWorkNotNearer(t *testing.T) {
	h := &costs.Host{Kernel: "6.1.0", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.1", RCU: "tree-preempt",
		GPLatency: &costs.Distribution{N: 200, P50NS: 14_844_820},
		OtherWork: &costs.OtherWork{PerCPUSecond: 250, IdleP50NS: 14_432_606, EmulatedP50NS: 13_921_874}}
	c, err := HostModel(&costs.Table{Host: h})
	if err != nil || c.RCUOtherWork != 0 || HostOtherWork(h) != 0 {
		t.Errorf("HostModel: other work %g, %v; HostOtherWork %g; want none", c.RCUOtherWork, err, HostOtherWork(h))
	}
	h.GPLatency.P50NS = 13_000_000 // now the bound is nearer
	if got := HostOtherWork(h); got != 250 {
		t.Errorf("HostOtherWork with a measured median nearer the bound = %g, want 250", got)
	}
	r := &Report{GP: &costs.Distribution{N: 200, P50NS: 14_844_820},
		OtherWork: &costs.OtherWork{IdleP50NS: 14_432_606, EmulatedP50NS: 14_432_606, BoundP50NS: 13_921_874}}
	if s := r.otherWorkSummary(); !strings.Contains(s, "is nearer the measured 14.84ms than with one a tick on every CPU, 13.92ms") {
		t.Errorf("otherWorkSummary() = %q, want it to say the bound came no nearer", s)
	}
}
