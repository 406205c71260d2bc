package bench

import (
	"bytes"
	"context"
	"github.com/ndst-project/ndst/costs"
	"strings"
	"testing"
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
