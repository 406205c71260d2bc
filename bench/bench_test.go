package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

var update = flag.Bool("update", false, "rewrite golden files")

// small is a quick matrix with a livelocking cell (the expedited loop on
// 2.6.33, whose rebroadcast has no route-cache flush to escape through) and
// two N.
func small() *Spec {
	return &Spec{
		Backends: []string{"sim"}, Profiles: []string{"2.6.33"},
		Strategies: []string{"tick", "expedited", "barrier"},
		HZ:         []int{1000}, CPUs: []int{1}, Preempts: []string{"none"},
		Batches: []string{"batched"}, Counts: []int{10, 100},
		Runs: 3, Seed: 1, Watchdog: 2 * time.Second,
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Spec)
		want   string // substring of the error; "" for none
	}{
		{"ok", func(*Spec) {}, ""},
		{"unknown strategy", func(s *Spec) { s.Strategies = []string{"tick", "nap"} }, `--strategy: unknown name "nap"`},
		{"unknown profile", func(s *Spec) { s.Profiles = []string{"2.6.30"} }, `--profile: unknown name "2.6.30"`},
		{"unknown preempt", func(s *Spec) { s.Preempts = []string{"eager"} }, `--preempt: unknown name "eager"`},
		{"unknown batch", func(s *Spec) { s.Batches = []string{"bulk"} }, `--batch: unknown name "bulk"`},
		{"unknown backend", func(s *Spec) { s.Backends = []string{"qemu"} }, `--backend: unknown name "qemu"`},
		{"empty name", func(s *Spec) { s.Strategies = []string{""} }, "--strategy: empty name"},
		{"empty strategies", func(s *Spec) { s.Strategies = nil }, "--strategy: empty list"},
		{"empty counts", func(s *Spec) { s.Counts = nil }, "--count: empty list"},
		{"empty hz", func(s *Spec) { s.HZ = nil }, "--hz: empty list"},
		{"duplicate", func(s *Spec) { s.Strategies = []string{"tick", "tick"} }, `"tick" is listed twice`},
		{"duplicate count", func(s *Spec) { s.Counts = []int{5, 5} }, "--count: 5 is listed twice"},
		{"hz range", func(s *Spec) { s.HZ = []int{0} }, "--hz: 0 is out of range"},
		{"cpus range", func(s *Spec) { s.CPUs = []int{5000} }, "--cpus: 5000 is out of range"},
		{"count range", func(s *Spec) { s.Counts = []int{0} }, "--count: 0 is out of range"},
		{"runs", func(s *Spec) { s.Runs = 0 }, "--runs: 0 is out of range"},
		{"too many cells", func(s *Spec) {
			s.Counts = make([]int, 4000)
			for i := range s.Counts {
				s.Counts[i] = i + 1
			}
		}, "more than 10000 needs --yes"},
		{"too many cells confirmed", func(s *Spec) {
			s.Counts = make([]int, 4000)
			for i := range s.Counts {
				s.Counts[i] = i + 1
			}
			s.Confirmed = true
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := small()
			tc.change(s)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			case tc.want != "" && !ndst.IsUsage(err):
				t.Fatalf("Validate() = %T, want a *ndst.UsageError", err)
			}
		})
	}
}

func TestCellsALineLacksAreNotApplicable(t *testing.T) {
	// Cells whose kernel line lacks what they need are n/a with the
	// reason, and run nothing; the others run. A matrix of n/a cells only
	// is a usage error.
	s := small()
	s.RCU, s.CPUs = "tiny", []int{1, 2}
	s.Profiles = []string{"2.6.33"}
	rep, err := Run(context.Background(), s, nil)
	if err != nil {
		t.Fatalf("Run(rcu tiny, cpus 1,2) = %v, want the 1-CPU cells run and the 2-CPU ones n/a", err)
	}
	na := 0
	for _, r := range rep.Results {
		switch {
		case r.CPUs == 2:
			if !strings.Contains(r.NotApplicable, "--rcu tiny") || r.Runs != 0 || resultText(r) != "n/a" {
				t.Errorf("%s: not applicable %q, %d runs, result %q; want n/a naming --rcu tiny and no run", r.Cell, r.NotApplicable, r.Runs, resultText(r))
			}
			na++
		case r.NotApplicable != "" || r.OK != r.Runs || len(r.Phases) == 0:
			t.Errorf("%s: not applicable %q, %d of %d ok, %d phases; want it run, with its phases", r.Cell, r.NotApplicable, r.OK, r.Runs, len(r.Phases))
		}
	}
	if na == 0 || !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "n/a: ") }) {
		t.Errorf("%d n/a cells, notes %q; want the 2-CPU cells n/a and a note saying why", na, rep.Notes)
	}
	s = small()
	s.RCU, s.CPUs, s.Profiles = "tiny", []int{2}, []string{"2.6.33"}
	if err := s.Check(context.Background()); err == nil || !ndst.IsUsage(err) || !strings.Contains(err.Error(), "no cell of the matrix applies") {
		t.Errorf("Check(rcu tiny, cpus 2 only) = %v, want a usage error: no cell applies", err)
	}
}

func TestPhasesPerCellSumToTheTime(t *testing.T) {
	s := small()
	rep, err := Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.OK == 0 { // expedited livelocks on 2.6.33's one CPU
			continue
		}
		var sum float64
		for _, p := range r.Phases {
			sum += p.CPUNS + p.WaitNS
		}
		// The task's phases cover the delete from its first phase on;
		// the delete's virtual time adds only the syscall's entry.
		if sum <= 0 || sum > r.MeanNS*1.0001 || sum < r.MeanNS*0.99 {
			t.Errorf("%s: phases sum to %.0f ns, mean delete %.0f ns; want them to account for it", r.Cell, sum, r.MeanNS)
		}
		for i := 1; i < len(r.Phases); i++ {
			a, b := r.Phases[i-1], r.Phases[i]
			if a.CPUNS+a.WaitNS < b.CPUNS+b.WaitNS {
				t.Errorf("%s: phases not largest first: %v", r.Cell, r.Phases)
			}
		}
	}
	var b strings.Builder
	rep.ShowPhases = true
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "where each cell's time went") {
		t.Errorf("the table with ShowPhases has no phases:\n%s", b.String())
	}
}

func TestNumCells(t *testing.T) {
	tests := []struct {
		backends []string
		want     int
	}{
		{[]string{"sim"}, 3 * 2},
		{[]string{"netlink"}, 2},
		{[]string{"sim", "netlink"}, 3*2 + 2},
	}
	for _, tc := range tests {
		s := small()
		s.Backends = tc.backends
		if got, cells := s.NumCells(), len(s.Cells()); got != tc.want || cells != tc.want {
			t.Errorf("NumCells(%v) = %d (len(Cells()) = %d), want %d", tc.backends, got, cells, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []int64
		want Stats
	}{
		{[]int64{5}, Stats{Min: 5, Median: 5, Max: 5, Mean: 5}},
		{[]int64{3, 1, 2}, Stats{Min: 1, Median: 2, Max: 3, Mean: 2, Stddev: 1}},
		{[]int64{4, 1, 3, 2}, Stats{Min: 1, Median: 2, Max: 4, Mean: 2.5, Stddev: math.Sqrt(5.0 / 3)}},
		{nil, Stats{}},
	}
	for _, tc := range tests {
		got := Summarize(tc.in)
		if got.Min != tc.want.Min || got.Median != tc.want.Median || got.Max != tc.want.Max ||
			math.Abs(got.Mean-tc.want.Mean) > 1e-9 || math.Abs(got.Stddev-tc.want.Stddev) > 1e-9 {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRelativeToFastestOfSameN(t *testing.T) {
	rs := []Record{
		{Cell: Cell{Count: 10}, OK: 1, MeanNS: 100},
		{Cell: Cell{Count: 10}, OK: 1, MeanNS: 300, StddevNS: 30},
		{Cell: Cell{Count: 20}, OK: 1, MeanNS: 1000},
		{Cell: Cell{Count: 20}, OK: 0, MeanNS: 0},
	}
	relate(rs)
	want := []float64{1, 3, 1}
	for i, w := range want {
		if rs[i].Relative == nil || *rs[i].Relative != w {
			t.Errorf("relate: record %d Relative = %v, want %v", i, rs[i].Relative, w)
		}
	}
	if rs[3].Relative != nil {
		t.Errorf("relate: record without completed runs has Relative %v, want nil", *rs[3].Relative)
	}
	if sd := *rs[1].RelativeSD; math.Abs(sd-0.3) > 1e-9 {
		t.Errorf("relate: RelativeSD = %v, want 0.3", sd)
	}
}

func maskedJSON(t *testing.T, rep *Report) string {
	t.Helper()
	rep.MaskWall()
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestParallelEqualsSerial: the worker count changes nothing but the wall
// clock.
func TestParallelEqualsSerial(t *testing.T) {
	var outs []string
	for _, workers := range []int{1, 4} {
		s := small()
		s.Workers = workers
		rep, err := Run(context.Background(), s, nil)
		if err != nil {
			t.Fatalf("Run(workers=%d) = %v", workers, err)
		}
		outs = append(outs, maskedJSON(t, rep))
	}
	if outs[0] != outs[1] {
		t.Errorf("Run(workers=1) and Run(workers=4) differ:\n%s\n---\n%s", outs[0], outs[1])
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run go test ./bench -update)", path, err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test ./bench -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// syntheticReport builds a report from fixed samples, so that the golden
// files test the rendering and not the emulated kernel's current figures.
func syntheticReport() *Report {
	s := small()
	s.Strategies = []string{"tick", "expedited", "barrier"}
	cells := s.Cells()
	lat := func(base int64) *ndst.Latency {
		return &ndst.Latency{MinNS: base - 80_000, MedianNS: base, P99NS: base + 150_000, MaxNS: base + 150_000}
	}
	counters := func(gps, sleeps, wakeups, busy int64) map[string]int64 {
		return map[string]int64{"grace_periods": gps, "sleeps": sleeps, "wakeups": wakeups, "cpu_busy_ns": busy}
	}
	samples := make([][]Sample, len(cells))
	for i, c := range cells {
		n := int64(c.Count)
		for r := range s.Runs {
			seed := s.Seed + uint64(r)
			jit := int64(r) * 100_000
			x := Sample{Seed: seed, Result: ndst.ResultOK, AddNS: n * 1_001_000, AddWallNS: 12345, DelWallNS: 67890}
			switch c.Strategy {
			case "tick":
				x.DelNS, x.Latency, x.Counters = n*3_000_000+jit, lat(3_000_000), counters(n, n, n+3, n*2_570_000)
			case "barrier":
				x.DelNS, x.Latency, x.Counters = n*4_000_000+jit, lat(4_000_000), counters(2*n, 0, n+3, n*2_580_000)
			case "expedited":
				x.Result, x.StoppedIn = ndst.ResultLivelock, "del"
				x.Error = "BUG: soft lockup - CPU#0 stuck for 2s! [ndst] (at 2.001s virtual)"
				x.DelNS, x.Counters = 2_000_000_000, counters(0, 0, 4, 2_000_600_000)
				x.notes = []string{"teardown stopped", "the expedited strategy never sleeps; try --strategy tick or barrier"}
			}
			samples[i] = append(samples[i], x)
		}
	}
	return newReport(s, cells, samples)
}

func TestGoldenOutputs(t *testing.T) {
	rep := syntheticReport()
	rep.MaskWall()
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"table.golden", func(b *bytes.Buffer) error { return rep.WriteTable(b) }},
		{"report.golden.json", func(b *bytes.Buffer) error { return rep.WriteJSON(b) }},
		{"report.golden.csv", func(b *bytes.Buffer) error { return rep.WriteCSV(b) }},
		{"report.golden.md", func(b *bytes.Buffer) error { return rep.WriteMarkdown(b) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			t.Fatalf("write %s: %v", f.name, err)
		}
		golden(t, f.name, b.String())
	}
}

func TestLivelockIsAnOutcomeWithRemedy(t *testing.T) {
	rep, err := Run(context.Background(), small(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	for _, x := range rep.Results {
		if x.Strategy == "expedited" {
			r = x
			break
		}
	}
	if r.Livelocks != r.Runs || r.OK != 0 || r.Relative != nil {
		t.Fatalf("expedited record = livelocks %d ok %d of %d, want all livelocked", r.Livelocks, r.OK, r.Runs)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "soft-lockup watchdog") || !strings.Contains(r.Warnings[0], "--strategy tick") {
		t.Errorf("expedited warnings = %q, want the watchdog named and a remedy", r.Warnings)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep, err := Run(context.Background(), small(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("json.Unmarshal(WriteJSON()) = %v", err)
	}
	if len(back.Results) != len(rep.Results) || back.Results[0].MeanNS != rep.Results[0].MeanNS {
		t.Errorf("round trip: %d results, mean %v; want %d, %v", len(back.Results), back.Results[0].MeanNS,
			len(rep.Results), rep.Results[0].MeanNS)
	}
}

func TestSavePlot(t *testing.T) {
	rep, err := Run(context.Background(), small(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []struct{ name, magic string }{{"p.png", "\x89PNG"}, {"p.svg", "<?xml"}} {
		path := filepath.Join(dir, f.name)
		if err := rep.SavePlot(path); err != nil {
			t.Fatalf("SavePlot(%s) = %v", f.name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(b, []byte(f.magic)) {
			t.Errorf("SavePlot(%s) wrote %d bytes starting %q, want %q", f.name, len(b), b[:min(len(b), 5)], f.magic)
		}
	}
	if err := rep.SavePlot(filepath.Join(dir, "p.pdf")); err == nil {
		t.Errorf("SavePlot(p.pdf) = nil, want an error")
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, small(), nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled) = %v, want context.Canceled", err)
	}
}

func TestHighVarianceWarningSuggestsRuns(t *testing.T) {
	c := Cell{Backend: "sim", Profile: "6.18", Strategy: "tick", HZ: 250, CPUs: 2, Preempt: "none", Batch: "batched", Count: 10}
	var smp []Sample
	for i, d := range []int64{10e6, 20e6, 30e6} {
		smp = append(smp, Sample{Seed: uint64(i + 1), Result: ndst.ResultOK, DelNS: d})
	}
	r := reduce(c, smp)
	w := warnings(&r, smp, 3)
	if len(w) != 1 || !strings.Contains(w[0], "high variance") || !strings.Contains(w[0], "more --runs (now 3)") {
		t.Errorf("warnings(sd 50%% of the mean) = %q, want one high-variance warning suggesting more --runs", w)
	}
}

func TestMemoryIsCheckedOverTheRunsAtOnce(t *testing.T) {
	s := small()
	s.Counts, s.Runs, s.Workers = []int{1000, 5000}, 3, 4
	// 3 strategies × 3 runs of 5000, then 1000s: the 4 largest at once are
	// four runs of 5000.
	if got := s.peakDevices(4); got != 20000 {
		t.Errorf("peakDevices(4) = %d, want 20000", got)
	}
	if got := s.peakDevices(1); got != 5000 {
		t.Errorf("peakDevices(1) = %d, want 5000", got)
	}
	old := memoryEstimate
	t.Cleanup(func() { memoryEstimate = old })
	memoryEstimate = func(devices int) (uint64, uint64, bool) { return uint64(devices) * 100, 1_500_000, true }
	err := s.Check(context.Background())
	if err == nil || ndst.IsUsage(err) || !strings.Contains(err.Error(), "4 running at once (--jobs 4: 20000 devices)") ||
		!strings.Contains(err.Error(), "--yes") {
		t.Errorf("Check(4 runs of 5000 at once, 1.5 MB free) = %v; want a failure (not a usage error) with the estimate and what to change", err)
	}
	s.Workers = 1
	if err := s.Check(context.Background()); err != nil {
		t.Errorf("Check(one run at a time) = %v, want nil", err)
	}
	s.Workers, s.Confirmed = 4, true
	if err := s.Check(context.Background()); err != nil {
		t.Errorf("Check(--yes) = %v, want nil", err)
	}
}
