package advise

import (
	"context"
	"strings"
	"testing"
)

func machine() Machine {
	return Machine{Profile: "6.18", HZ: 250, CPUs: 2, Preempt: "none"}
}

// TestRanking: the levers come out sorted by time saved, each in the list
// its effect puts it in, with before and after from the same baseline.
func TestRanking(t *testing.T) {
	a, err := Run(context.Background(), Options{Workload: Workload{Devices: 200, OneByOne: true}, Machine: machine()})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Levers) == 0 {
		t.Fatal("no lever saves time on 200 devices deleted one by one")
	}
	for i, l := range a.Levers {
		if l.BeforeNS != a.Baseline.NS || l.AfterNS >= l.BeforeNS || l.Saved < Threshold || l.Reason == "" || l.Apply == "" || l.Cost == "" {
			t.Errorf("lever %d %+v: want before = the baseline, after shorter, a reason, how to apply it and its cost", i, l)
		}
		if i > 0 && l.SavedNS > a.Levers[i-1].SavedNS {
			t.Errorf("lever %d saves %d, more than lever %d's %d", i, l.SavedNS, i-1, a.Levers[i-1].SavedNS)
		}
	}
	if a.Levers[0].Kind != KindWorkload {
		t.Errorf("deleting one by one: the first lever is %s, want the batch", a.Levers[0].Setting)
	}
	for _, l := range a.Slower {
		if l.Result == "ok" && l.AfterNS <= l.BeforeNS {
			t.Errorf("slower lever %s is not slower", l.Setting)
		}
	}
	for _, l := range append(append([]Lever{}, a.Levers...), a.NoEffect...) {
		if l.Kind == KindRuntime && (!l.RuntimeSettable || l.Path == "" || l.Value == "" || l.Current == "") {
			t.Errorf("runtime lever %s lacks what a measurement needs: %+v", l.Setting, l)
		}
		if l.Kind == KindRuntime && !strings.Contains(l.Apply, l.Path) && !strings.HasPrefix(l.Apply, "sysctl -w") {
			t.Errorf("runtime lever %s: apply %q does not name its file", l.Setting, l.Apply)
		}
	}
}

// TestDeterministic: the same request gives the same advice.
func TestDeterministic(t *testing.T) {
	o := Options{Workload: Workload{Namespaces: 20, Veth: true, OneByOne: true}, Machine: machine()}
	a, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var x, y strings.Builder
	_ = a.WriteText(&x)
	_ = b.WriteText(&y)
	if x.String() != y.String() {
		t.Errorf("two runs of the same advice differ:\n%s\n---\n%s", x.String(), y.String())
	}
}

type fakeVerifier struct{ checked, verified bool }

func (f *fakeVerifier) Check(*Advice) error { f.checked = true; return nil }
func (f *fakeVerifier) Verify(_ context.Context, a *Advice) error {
	f.verified = true
	for i := range a.Levers {
		if a.Levers[i].RuntimeSettable {
			a.Levers[i].Measured = &Measurement{BeforeNS: 2, AfterNS: 1}
		}
	}
	return nil
}

// TestVerifierHook: --verify goes through the registered Verifier, and
// without one is refused before anything runs.
func TestVerifierHook(t *testing.T) {
	old := verifier
	t.Cleanup(func() { verifier = old })
	verifier = nil
	if err := CheckVerify(&Advice{}); err != ErrNoVerifier {
		t.Errorf("CheckVerify without a verifier = %v, want ErrNoVerifier", err)
	}
	f := &fakeVerifier{}
	RegisterVerifier(f)
	a, err := Run(context.Background(), Options{Workload: Workload{Devices: 50, OneByOne: true}, Machine: Machine{Profile: "6.1", HZ: 250, CPUs: 2, Preempt: "rt"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(context.Background(), a); err != nil || !f.checked || !f.verified || !a.Verified {
		t.Fatalf("Verify = %v (checked %v, verified %v, advice verified %v)", err, f.checked, f.verified, a.Verified)
	}
	var out strings.Builder
	if err := a.WriteText(&out); err != nil || !strings.Contains(out.String(), "measured") {
		t.Errorf("a verified advice's text does not show the measurements:\n%s", out.String())
	}
}

// BenchmarkDefaultAdvise is advise's default workload (1000 devices in one
// batch) on this project's machine (the target: under 2 s of wall time;
// scripts/speed.sh measures the command itself).
func BenchmarkDefaultAdvise(b *testing.B) {
	for b.Loop() {
		if _, err := Run(context.Background(), Options{Workload: Workload{Devices: 1000}, Machine: machine()}); err != nil {
			b.Fatal(err)
		}
	}
}
