package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

func TestFitLine(t *testing.T) {
	tests := []struct {
		xs, ys []float64
		want   Line
	}{
		{[]float64{100, 1000, 4000}, []float64{20 + 0.1*100, 20 + 0.1*1000, 20 + 0.1*4000}, Line{20, 0.1}},
		{[]float64{5, 5}, []float64{3, 5}, Line{FixedNS: 4}},
	}
	for _, tc := range tests {
		got := fitLine(tc.xs, tc.ys)
		if math.Abs(got.FixedNS-tc.want.FixedNS) > 1e-9 || math.Abs(got.PerDeviceNS-tc.want.PerDeviceNS) > 1e-12 {
			t.Errorf("fitLine(%v, %v) = %+v, want %+v", tc.xs, tc.ys, got, tc.want)
		}
	}
}

func hostTable(h *costs.Host) *costs.Table {
	t := costs.Default()
	t.Source, t.Host = "test", h
	return t
}

func TestPredictCheck(t *testing.T) {
	ok := hostTable(&costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none"})
	tests := []struct {
		name string
		spec PredictSpec
		want string
	}{
		{"ok", PredictSpec{Counts: []int{10}, Runs: 1, SimRuns: 1, Costs: ok}, ""},
		{"lazy is full", PredictSpec{Counts: []int{10}, Runs: 1, SimRuns: 1, Costs: hostTable(&costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "lazy"})}, ""},
		{"no host", PredictSpec{Counts: []int{10}, Runs: 1, SimRuns: 1, Costs: hostTable(nil)}, "no host section"},
		{"no costs", PredictSpec{Counts: []int{10}, Runs: 1, SimRuns: 1}, "no cost table"},
		{"empty", PredictSpec{Runs: 1, SimRuns: 1, Costs: ok}, "empty list"},
		{"range", PredictSpec{Counts: []int{0}, Runs: 1, SimRuns: 1, Costs: ok}, "out of range"},
		{"dup", PredictSpec{Counts: []int{7, 7}, Runs: 1, SimRuns: 1, Costs: ok}, "listed twice"},
		{"runs", PredictSpec{Counts: []int{7}, Runs: 0, SimRuns: 1, Costs: ok}, "--runs"},
		{"preempt", PredictSpec{Counts: []int{7}, Runs: 1, SimRuns: 1, Costs: hostTable(&costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "odd"})}, "unknown preemption model"},
	}
	for _, tc := range tests {
		err := tc.spec.Check()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// skipUnlessNetlink skips real-kernel tests without root or netlink.
func skipUnlessNetlink(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for a throwaway network namespace")
	}
}

func TestPredictOnHost(t *testing.T) {
	skipUnlessNetlink(t)
	ns := fmt.Sprintf("ndst-ptest-%d", os.Getpid())
	t.Cleanup(func() { _ = nlbackend.Reset(context.Background(), nlbackend.Options{Netns: ns}) })
	s := &PredictSpec{Counts: []int{4, 8}, Runs: 1, SimRuns: 2, Seed: 1,
		Costs:   hostTable(&costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none"}),
		Netlink: nlbackend.Options{Netns: ns, Kind: "ifb"}}
	p, err := Predict(context.Background(), s)
	if err != nil {
		t.Fatalf("Predict(4, 8) = %v", err)
	}
	if len(p.Rows) != 6 {
		t.Fatalf("Predict(4, 8): %d rows, want 6 (2 N x batched, one-by-one, add)", len(p.Rows))
	}
	for _, r := range p.Rows {
		if r.MeasuredNS <= 0 || r.PredictedNS <= 0 {
			t.Errorf("Predict row %+v: want positive measured and predicted times", r)
		}
	}
	var b bytes.Buffer
	if err := p.WriteTable(&b); err != nil || !strings.Contains(b.String(), "one-by-one") {
		t.Errorf("WriteTable() = %v, %q", err, b.String())
	}
}

func TestBenchNetlinkCells(t *testing.T) {
	skipUnlessNetlink(t)
	ns := fmt.Sprintf("ndst-btest-%d", os.Getpid())
	t.Cleanup(func() { _ = nlbackend.Reset(context.Background(), nlbackend.Options{Netns: ns}) })
	s := small()
	s.Backends, s.Batches, s.Counts, s.Runs = []string{"netlink"}, []string{"batched", "one-by-one"}, []int{4}, 2
	s.Netlink = nlbackend.Options{Netns: ns, Kind: "ifb"}
	rep, err := Run(context.Background(), s, nil)
	if err != nil {
		t.Fatalf("Run(netlink) = %v", err)
	}
	for _, r := range rep.Results {
		if r.OK != 2 || r.Clock != "wall" || r.MeanNS <= 0 || r.Count != 4 {
			t.Errorf("netlink record %s: ok %d clock %s mean %v, want 2 ok runs on the wall clock", r.Cell, r.OK, r.Clock, r.MeanNS)
		}
	}
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("Run(netlink) left namespace %s behind", ns)
	}
}
