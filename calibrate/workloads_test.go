package calibrate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
)

// TestFitWorkloadsRecoversItsRuns: runs emulated with known workload costs
// (a macvlan cheaper to unregister than the device, an IPv4 address dearer
// to delete than the built-in) are the measurements; from the built-in
// starting values the fit must give every run back within 1% (closure).
func TestFitWorkloadsRecoversItsRuns(t *testing.T) {
	tab, err := costs.Load("../ndst/emu/testdata/host-6.18-costs.json")
	if err != nil {
		t.Fatal(err)
	}
	base, err := hostModel(tab.Host)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]int64{
		"link_up_ns": 30_000, "addr6_add_ns": 9_000, "anycast_ns": 2_000, "addr4_add_ns": 6_000,
		"link_down_ns": 150_000, "addr6_del_ns": 60_000, "addr4_del_ns": 120_000,
		"macvlan_register_ns": 50_000, "macvlan_unregister_ns": -40_000, "netns_veth_ns": 700_000,
	}
	known := *tab
	known.Extra = maps.Clone(tab.Extra)
	if known.Extra == nil {
		known.Extra = map[string]int64{}
	}
	maps.Copy(known.Extra, truth)
	ctx := context.Background()
	whats := []string{WorkAddr6Add, WorkAddr6Del, WorkAddrAdd, WorkAddrDel,
		fmt.Sprintf(WorkChildAdd, ndst.KindMacvlan), fmt.Sprintf(WorkChildDel, ndst.KindMacvlan), WorkVethNetns}
	r := &Report{Table: tab, Kind: "ifb", Figures: FiguresMidMean}
	r.Table.Extra = maps.Clone(tab.Extra)
	if r.Table.Extra == nil {
		r.Table.Extra = map[string]int64{}
	}
	for _, w := range whats {
		ns, err := emulatedWorkload(ctx, base, &known, "ifb", w, workloadCount, MidMean)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		r.Workloads = append(r.Workloads, WorkloadPoint{What: w, Count: workloadCount, MeasuredNS: ns, Rounds: 1})
	}
	if err := r.fitWorkloads(ctx, base); err != nil {
		t.Fatal(err)
	}
	if err := r.workloadClosure(ctx, base); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Closure {
		if math.Abs(p.Error) > 0.01 {
			t.Errorf("%s: measured %d, emulated %d (%+.1f%%), want within 1%%", p.What, p.MeasuredNS, p.EmulatedNS, 100*p.Error)
		}
	}
	if v := r.Table.Extra["macvlan_unregister_ns"]; v >= 0 {
		t.Errorf("macvlan_unregister_ns fitted to %d, want negative (truth %d)", v, truth["macvlan_unregister_ns"])
	}
	if !HasWorkloadCosts(r.Table) {
		t.Error("HasWorkloadCosts = false after the fit")
	}
}

// TestFitWorkloadsBalancesARunBelowItsBase: an IPv4 run measured faster
// than the IPv6 run it adds an address to (as noise on a busy host makes
// it) cannot be given back by its own cost, which stops at 0; the fit must
// then set the IPv6 costs the two share where the two runs' errors balance,
// rather than close the IPv6 run and leave the IPv4 run its whole miss.
func TestFitWorkloadsBalancesARunBelowItsBase(t *testing.T) {
	tab, err := costs.Load("../ndst/emu/testdata/host-6.18-costs.json")
	if err != nil {
		t.Fatal(err)
	}
	base, err := hostModel(tab.Host)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := &Report{Table: tab, Kind: "ifb", Figures: FiguresMidMean}
	r.Table.Extra = maps.Clone(tab.Extra)
	if r.Table.Extra == nil {
		r.Table.Extra = map[string]int64{}
	}
	for _, w := range []string{WorkAddr6Add, WorkAddrAdd} {
		ns, err := emulatedWorkload(ctx, base, tab, "ifb", w, workloadCount, MidMean)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		r.Workloads = append(r.Workloads, WorkloadPoint{What: w, Count: workloadCount, MeasuredNS: ns, Rounds: 1})
	}
	// The IPv6 run slower than the run with one address more.
	r.Workloads[0].MeasuredNS = r.Workloads[1].MeasuredNS * 110 / 100
	if err := r.fitWorkloads(ctx, base); err != nil {
		t.Fatal(err)
	}
	if err := r.workloadClosure(ctx, base); err != nil {
		t.Fatal(err)
	}
	if v := r.Table.Extra["addr4_add_ns"]; v != 0 {
		t.Errorf("addr4_add_ns = %d, want 0 (its bound)", v)
	}
	e0, e1 := r.Closure[0].Error, r.Closure[1].Error
	t.Logf("%s %+.1f%%, %s %+.1f%%", r.Closure[0].What, 100*e0, r.Closure[1].What, 100*e1)
	if e0 >= 0 || e1 <= 0 || math.Abs(e0+e1) > 0.01 {
		t.Errorf("errors %+.1f%% and %+.1f%%: want opposite signs that balance within 1%%", 100*e0, 100*e1)
	}
}
