package bench

import (
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

func runsOf(ns ...int64) []Sample {
	var s []Sample
	for _, x := range ns {
		s = append(s, Sample{Result: ndst.ResultOK, DelNS: x})
	}
	return s
}

func TestOutliers(t *testing.T) {
	out, med := outliers(runsOf(100, 101, 99, 102, 98, 400))
	if len(out) != 1 || out[0] != 400 || med != 100 {
		t.Errorf("outliers = %v, median %d; want [400] around 100", out, med)
	}
	if out, _ := outliers(runsOf(100, 101, 99, 102, 98)); len(out) != 0 {
		t.Errorf("outliers among close runs: %v", out)
	}
	if out, _ := outliers(runsOf(100, 400)); out != nil {
		t.Errorf("two runs cannot have outliers: %v", out)
	}
	r := &Record{Cell: Cell{Backend: "netlink", Batch: "batched", Count: 100}, OK: 6}
	if w := outlierWarning(r, runsOf(100, 101, 99, 102, 98, 400)); !strings.Contains(w, "1 of 6 runs are statistical outliers") || r.Outliers != 1 {
		t.Errorf("warning %q, outliers %d", w, r.Outliers)
	}
	sim := &Record{Cell: Cell{Backend: "sim"}, OK: 6}
	if w := outlierWarning(sim, runsOf(100, 101, 99, 102, 98, 400)); w != "" {
		t.Errorf("an emulated cell got an outlier warning: %q", w)
	}
}

func TestSummary(t *testing.T) {
	one, three, sd := 1.0, 3.2, 0.12
	rs := []Record{
		{Cell: Cell{Backend: "netlink", Batch: "one-by-one", Count: 100}, OK: 3, Relative: &three, RelativeSD: &sd},
		{Cell: Cell{Backend: "netlink", Batch: "batched", Count: 100}, OK: 3, Relative: &one, RelativeSD: new(float64)},
		{Cell: Cell{Backend: "sim", Batch: "batched", Count: 100}, OK: 3, Relative: &one, RelativeSD: new(float64)},
	}
	got := summaries(rs)
	want := "real kernel, N=100: 'batched' ran 3.20 ± 0.12 times faster than 'one-by-one'"
	if len(got) != 1 || got[0] != want {
		t.Errorf("summaries = %q, want [%q]", got, want)
	}
}

func TestWarmupOnlyForTheRealKernel(t *testing.T) {
	s := &Spec{Backends: []string{"sim"}, Profiles: []string{"6.18"}, Strategies: []string{"tick"}, HZ: []int{250}, CPUs: []int{1},
		Preempts: []string{"none"}, Batches: []string{"batched"}, Counts: []int{10}, Runs: 1, Warmup: 2}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--warmup") {
		t.Errorf("Validate(sim, --warmup 2) = %v; want a usage error", err)
	}
}
