package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

func netnsSpec() *Spec {
	return &Spec{
		Backends: []string{"sim"}, Profiles: []string{"6.18"}, Strategies: []string{"backoff"},
		HZ: []int{250}, CPUs: []int{2}, Preempts: []string{"none"},
		Batches: []string{"batched", "one-by-one"}, Counts: []int{1000},
		NetnsCounts: []int{3, 6}, NetnsVeth: []bool{false, true}, NetnsLinks: []int{1},
		Runs: 2, Seed: 1,
	}
}

func TestNetnsCells(t *testing.T) {
	s := netnsSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	if len(cells) != s.NumCells() || len(cells) != 2*2*2 {
		t.Fatalf("Cells() = %d cells, NumCells() = %d; want 8 (style × N × veth)", len(cells), s.NumCells())
	}
	rep, err := Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Record{}
	for _, r := range rep.Results {
		if r.OK != r.Runs || !r.NetnsCell() {
			t.Fatalf("cell %s: %d of %d runs ok, warnings %v", r.Cell, r.OK, r.Runs, r.Warnings)
		}
		c := r.Counters
		if !(c["netns_returned_ns"] < c["netns_gone_ns"] && c["netns_gone_ns"] < float64(r.MeanNS)) {
			t.Errorf("cell %s: returned %v, gone %v, done %v; want in that order", r.Cell, c["netns_returned_ns"], c["netns_gone_ns"], r.MeanNS)
		}
		byKey[r.Batch+r.netnsWhat()+string(rune('0'+r.Namespaces))] = r
	}
	// One at a time, every namespace is a cleanup run of its own.
	if r := byKey["one-by-one"+"lo+1 links+veth"+"6"]; r.Counters["cleanup_batches"] != 6 {
		t.Errorf("one-by-one N=6 cleanup runs = %v, want 6", r.Counters["cleanup_batches"])
	}
	if all, one := byKey["batched"+"lo+1 links"+"6"], byKey["one-by-one"+"lo+1 links"+"6"]; !(one.MeanNS > 2*all.MeanNS) {
		t.Errorf("N=6: one at a time %v, all at once %v; waiting for each should cost more than twice as much", one.MeanNS, all.MeanNS)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cleanup of N namespaces", "namespaces of", "lo+1 links+veth", "returned", "devices gone", "cleanup runs"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

func TestNetnsValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*Spec)
		want   string
	}{
		{func(s *Spec) { s.Backends = []string{"sim", "netlink"} }, "emulated kernel only"},
		{func(s *Spec) { s.NetnsCounts = []int{0} }, "--netns-count: 0 is out of range"},
		{func(s *Spec) { s.NetnsCounts = []int{3, 3} }, "listed twice"},
		{func(s *Spec) { s.NetnsLinks = []int{-1} }, "--netns-links: -1"},
		{func(s *Spec) { s.NetnsVeth = []bool{true, true} }, "--netns-veth"},
		{func(s *Spec) { s.NetnsCounts = nil }, "give --netns-count too"},
	} {
		s := netnsSpec()
		tc.change(s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}

func TestPredictNetnsSim(t *testing.T) {
	ct, err := costs.Load("../ndst/emu/testdata/host-6.18-costs.json")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := PredictNetnsSim(context.Background(), NetnsPredictSpec{Counts: []int{10, 100}, Costs: ct, Runs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*2*2 {
		t.Fatalf("PredictNetnsSim = %d rows, want 8 (N × veth × style)", len(rows))
	}
	for _, r := range rows {
		if r.OK != 1 || !(r.ReturnedNS < r.GoneNS && r.GoneNS < r.DoneNS) {
			t.Errorf("row %+v: want one ok run with returned < gone < done", r)
		}
	}
}

// netnsHostTable is a host table with namespace costs.
func netnsHostTable() *costs.Table {
	t := hostTable(&costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.18", RCU: "tree-preempt"})
	t.Extra = map[string]int64{"netns_setup_ns": 900_000, "netns_put_ns": 150_000, "netns_exit_ns": 120_000}
	return t
}

func TestPredictNetnsNeedsNetnsCosts(t *testing.T) {
	ct := hostTable(&costs.Host{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none", Profile: "6.18"})
	_, err := PredictNetns(context.Background(), NetnsPredictSpec{Counts: []int{2}, Costs: ct})
	var u *ndst.UsageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "no namespace calibration") {
		t.Fatalf("PredictNetns with a table without namespace costs = %v; want a usage error naming the calibration", err)
	}
}

func TestNetnsPredictionTable(t *testing.T) {
	pr := &NetnsPrediction{Kernel: "6.18.0-test", Profile: "6.18", RCU: "tree-preempt", HZ: 250, CPUs: 2, Preempt: "none",
		Costs: "test", Kind: "ifb", Limit: NetnsPredictLimit, Within: 1, Compared: 2, LoadAvg: []string{"0.1", "0.2"},
		Warnings: []string{"N=10 with veth one-by-one: the cleanup-done prediction is off by -30% (more than 25%)"},
		Rows: []NetnsPredictRow{
			{Namespaces: 10, LoUp: true, Style: ndst.StyleAllAtOnce, MeasuredReturnedNS: 2e6, MeasuredGoneNS: 40e6, MeasuredDoneNS: 80e6,
				MeasuredRuns: []int64{80e6}, MeasuredCleanups: 2, Error: -0.1, GoneError: -0.05,
				Predicted: NetnsSimRow{Namespaces: 10, ReturnedNS: 1e6, GoneNS: 38e6, DoneNS: 72e6, CleanupRuns: 2, Runs: 5}},
			{Namespaces: 10, Veth: true, LoUp: true, Style: ndst.StyleOneByOne, MeasuredDoneNS: 400e6, MeasuredRuns: []int64{400e6},
				Error: -0.3, Predicted: NetnsSimRow{DoneNS: 280e6, Runs: 5}},
			// A cell no run could measure: n/a, not compared.
			{Namespaces: 100, LoUp: true, Style: ndst.StyleAllAtOnce, Predicted: NetnsSimRow{DoneNS: 300e6, Runs: 5}},
		}}
	var b bytes.Buffer
	if err := pr.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"kernel 6.18.0-test against the emulated line 6.18", "lo up", "median of 1 run(s)", "median of 5 seed(s)",
		"80.000", "72.000", "done (ms) real", "-10.0%", "-30.0%", "all-at-once", "one-by-one", "within 25% (cleanup done): 1 of 2 cells (1 not measured, n/a: not compared)",
		"warning: N=10 with veth one-by-one"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteTable() lacks %q:\n%s", want, out)
		}
	}
}

// TestPredictNetnsOnHost runs a small prediction on this host's kernel: every
// cell is measured, and nothing predict created is left behind.
func TestPredictNetnsOnHost(t *testing.T) {
	skipUnlessNetlink(t)
	ns := fmt.Sprintf("ndst-pntest-%d", os.Getpid())
	t.Cleanup(func() { _ = nlbackend.Reset(context.Background(), nlbackend.Options{Netns: ns}) })
	pr, err := PredictNetns(context.Background(), NetnsPredictSpec{Counts: []int{2}, LoUp: true, Runs: 1, Seed: 1,
		Costs: netnsHostTable(), RealRuns: 1, Netlink: nlbackend.Options{Netns: ns, Kind: "ifb"}})
	if err != nil {
		t.Fatalf("PredictNetns(2) = %v", err)
	}
	if len(pr.Rows) != 4 {
		t.Fatalf("PredictNetns(2): %d rows, want 4 (veth or not x all at once or one at a time)", len(pr.Rows))
	}
	for _, r := range pr.Rows {
		if r.MeasuredDoneNS <= 0 || r.MeasuredGoneNS <= 0 || r.MeasuredGoneNS > r.MeasuredDoneNS || r.Predicted.DoneNS <= 0 {
			t.Errorf("row %+v: want measured gone <= done, both positive, and a prediction", r)
		}
	}
	left, _ := filepath.Glob(fmt.Sprintf("/run/netns/ndst-p%d-*", os.Getpid()))
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil || len(left) > 0 {
		t.Errorf("left behind: the throwaway namespace (stat err %v) or namespaces %v", err, left)
	}
}
