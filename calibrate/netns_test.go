package calibrate

import (
	"context"
	"math"
	"testing"

	"github.com/ndst-project/ndst/costs"
)

// TestFitNetnsRecoversCosts: measurements made by the emulated kernel itself
// with known namespace costs are fitted back to those costs, and the
// closure of the fitted table reproduces every namespace run.
func TestFitNetnsRecoversCosts(t *testing.T) {
	ctx := context.Background()
	// This project's host as calibrated (device costs), with known
	// namespace costs.
	truth, err := costs.Load("../ndst/emu/testdata/host-6.18-costs.json")
	if err != nil {
		t.Fatal(err)
	}
	truth.Source = "truth"
	truth.Host = &costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.18", RCU: "tree-preempt"}
	// A run's own cost of two ticks: a smaller one can hide in the waits
	// that end on ticks, and the fit then leaves it at 0 with the same
	// closure.
	truth.Extra = map[string]int64{keyNetnsSetup: 900_000, keyNetnsPut: 150_000, keyNetnsExit: 120_000, keyNetnsExitBatch: 8_000_000}
	base, err := hostModel(truth.Host)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{netnsSmall, netnsLarge}
	measured, err := emulatedNetns(ctx, base, truth, sizes, MidMean)
	if err != nil {
		t.Fatal(err)
	}
	fit := *truth
	fit.Source, fit.Extra = "fit", map[string]int64{}
	r := &Report{Netns: measured, Table: &fit}
	if HasNetnsCosts(&fit) {
		t.Fatal("HasNetnsCosts of a table without the keys = true")
	}
	if err := r.fitNetns(ctx, base); err != nil {
		t.Fatal(err)
	}
	if !HasNetnsCosts(&fit) {
		t.Fatal("HasNetnsCosts after the fit = false")
	}
	for k, tol := range map[string]float64{keyNetnsSetup: 0.02, keyNetnsPut: 0.02, keyNetnsExit: 0.15, keyNetnsExitBatch: 0.25} {
		got, want := float64(fit.Extra[k]), float64(truth.Extra[k])
		if math.Abs(got-want) > tol*want {
			t.Errorf("fitted %s = %.0f, want %.0f within %.0f%%", k, got, want, 100*tol)
		}
	}
	if err := r.netnsClosure(ctx, base); err != nil {
		t.Fatal(err)
	}
	if len(r.Closure) != 3*len(sizes) {
		t.Fatalf("closure has %d points, want %d (add, returned, done per size)", len(r.Closure), 3*len(sizes))
	}
	for _, p := range r.Closure {
		if math.Abs(p.Error) > ClosureLimit {
			t.Errorf("closure %s %d: %+.1f%%, want within %.0f%%", p.What, p.Devices, 100*p.Error, 100*ClosureLimit)
		}
	}
}

// TestFitNetnsSeparatesNamingFromTheCreate: with the unshares measured,
// the kernel's create (netns_setup_ns) is fitted to them, and what the
// named creates take beyond it to netns_files_ns; both come back, and the
// closure reproduces the unshares and the named creates.
func TestFitNetnsSeparatesNamingFromTheCreate(t *testing.T) {
	ctx := context.Background()
	truth, err := costs.Load("../ndst/emu/testdata/host-6.18-costs.json")
	if err != nil {
		t.Fatal(err)
	}
	truth.Source = "truth"
	truth.Host = &costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.18", RCU: "tree-preempt"}
	truth.Extra = map[string]int64{keyNetnsSetup: 900_000, keyNetnsFiles: 2_500_000, keyNetnsPut: 150_000, keyNetnsExit: 120_000}
	base, err := hostModel(truth.Host)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{netnsSmall, netnsLarge}
	measured, err := emulatedNetns(ctx, base, truth, sizes, MidMean)
	if err != nil {
		t.Fatal(err)
	}
	un, err := emulatedUnshare(ctx, base, truth, MidMean)
	if err != nil {
		t.Fatal(err)
	}
	fit := *truth
	fit.Source, fit.Extra = "fit", map[string]int64{}
	r := &Report{Netns: measured, Unshare: &UnsharePoint{Namespaces: unshareCount, CreatedNS: un, Rounds: 1}, Table: &fit}
	if err := r.fitNetns(ctx, base); err != nil {
		t.Fatal(err)
	}
	for k, tol := range map[string]float64{keyNetnsSetup: 0.02, keyNetnsFiles: 0.02, keyNetnsPut: 0.02, keyNetnsExit: 0.15} {
		got, want := float64(fit.Extra[k]), float64(truth.Extra[k])
		if math.Abs(got-want) > tol*want {
			t.Errorf("fitted %s = %.0f, want %.0f within %.0f%%", k, got, want, 100*tol)
		}
	}
	if err := r.netnsClosure(ctx, base); err != nil {
		t.Fatal(err)
	}
	if err := r.unshareClosure(ctx, base); err != nil {
		t.Fatal(err)
	}
	if len(r.Closure) != 3*len(sizes)+1 || r.Closure[len(r.Closure)-1].What != NetnsUnshare {
		t.Fatalf("closure = %+v, want add, returned, done per size and the unshares", r.Closure)
	}
	for _, p := range r.Closure {
		if math.Abs(p.Error) > ClosureLimit {
			t.Errorf("closure %s %d: %+.1f%%, want within %.0f%%", p.What, p.Devices, 100*p.Error, 100*ClosureLimit)
		}
	}
	// A report from before the unshares fits the create to the named
	// creates alone, with no naming cost.
	old := *truth
	old.Source, old.Extra = "old", map[string]int64{}
	r = &Report{Netns: measured, Table: &old}
	if err := r.fitNetns(ctx, base); err != nil {
		t.Fatal(err)
	}
	if _, ok := old.Extra[keyNetnsFiles]; ok || old.Extra[keyNetnsSetup] < truth.Extra[keyNetnsSetup]+truth.Extra[keyNetnsFiles]/2 {
		t.Errorf("a report without unshares fitted %v, want netns_setup_ns to hold the naming and no netns_files_ns", old.Extra)
	}
}
