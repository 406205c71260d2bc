package bench

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// rec is a completed record of a cell with the given per-device time.
func rec(c Cell, perDevice float64) Record {
	return Record{Cell: c, Runs: 1, OK: 1, MeanNS: perDevice * float64(c.Count), PerDeviceNS: perDevice, Batched: c.Batch == "batched"}
}

func cellOf(strategy string, cpus int, batch string, n int) Cell {
	return Cell{Backend: "sim", Profile: "6.18", Strategy: strategy, HZ: 250, CPUs: cpus, Preempt: "none", Batch: batch, Count: n}
}

func TestPlanChartChoosesTheChartFromTheMatrix(t *testing.T) {
	// One N: bars, one per strategy, no merging (bars never hide each other).
	var rs []Record
	for _, st := range []string{"tick", "wake", "barrier"} {
		rs = append(rs, rec(cellOf(st, 1, "batched", 1000), 3e6))
	}
	ch := planChart(rs)
	if !ch.bars || len(ch.panels) != 1 || len(ch.series) != 3 {
		t.Errorf("one N: bars %v, %d panels, %d series; want bars, 1 panel, 3 series", ch.bars, len(ch.panels), len(ch.series))
	}

	// Several N: lines; tick and wake coincide and are drawn once.
	rs = nil
	for _, n := range []int{100, 1000} {
		rs = append(rs, rec(cellOf("tick", 1, "batched", n), 3e6), rec(cellOf("wake", 1, "batched", n), 3e6),
			rec(cellOf("barrier", 1, "batched", n), 4e6))
	}
	ch = planChart(rs)
	var labels []string
	for _, s := range ch.series {
		labels = append(labels, s.label)
	}
	if ch.bars || len(ch.panels) != 1 || !slices.Equal(labels, []string{"tick = wake", "barrier"}) {
		t.Errorf("several N: bars %v, %d panels, series %q; want lines, 1 panel, [tick = wake barrier]", ch.bars, len(ch.panels), labels)
	}

	// Another dimension varies: one panel per value, the same series in each.
	rs = nil
	for _, cpus := range []int{1, 2} {
		for _, batch := range []string{"batched", "one-by-one"} {
			for _, n := range []int{100, 1000} {
				rs = append(rs, rec(cellOf("tick", cpus, batch, n), float64(cpus)*1e6), rec(cellOf("barrier", cpus, batch, n), 5e6))
			}
		}
	}
	ch = planChart(rs)
	var titles []string
	for _, p := range ch.panels {
		titles = append(titles, p.title)
	}
	want := []string{"1 CPU, batched", "1 CPU, one-by-one", "2 CPUs, batched", "2 CPUs, one-by-one"}
	if !slices.Equal(titles, want) || len(ch.series) != 2 {
		t.Errorf("CPUs and batch vary: panels %q, %d series; want panels %q and 2 series", titles, len(ch.series), want)
	}

	// Without a varying strategy, the first varying dimension names the series.
	rs = nil
	for _, batch := range []string{"batched", "one-by-one"} {
		for _, n := range []int{100, 1000} {
			rs = append(rs, rec(cellOf("tick", 1, batch, n), 2e6))
		}
	}
	rs[2].PerDeviceNS = 9e6
	ch = planChart(rs)
	if len(ch.series) != 2 || ch.series[0].label != "batched" || ch.series[1].label != "one-by-one" || len(ch.panels) != 1 {
		t.Errorf("only the batch mode varies: series %+v, %d panels; want batched and one-by-one in one panel", ch.series, len(ch.panels))
	}
}

func TestSeriesStylesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := range 2 * len(palette) {
		ls, gs := seriesStyle(i)
		k := fmt.Sprintf("%v %T %v", ls.Color, gs.Shape, ls.Dashes)
		if seen[k] {
			t.Errorf("series %d has the style of an earlier one (%s)", i, k)
		}
		seen[k] = true
	}
}

// TestSavePlotEveryChart writes each kind of chart as PNG, as a person would
// open it: a valid image of a sensible size.
func TestSavePlotEveryChart(t *testing.T) {
	dir := t.TempDir()
	livelocked := rec(cellOf("expedited", 1, "batched", 1000), 0)
	livelocked.OK, livelocked.Livelocks = 0, 1
	bars := []Record{rec(cellOf("msleep250", 1, "batched", 1000), 253e6), rec(cellOf("tick", 1, "batched", 1000), 3e6), livelocked}
	var multiples []Record
	for _, cpus := range []int{1, 2} {
		for _, n := range []int{100, 1000, 10000} {
			multiples = append(multiples, rec(cellOf("tick", cpus, "one-by-one", n), 12e6), rec(cellOf("barrier", cpus, "one-by-one", n), float64(cpus)*4e6))
		}
	}
	for name, rs := range map[string][]Record{"bars.png": bars, "multiples.png": multiples} {
		rep := &Report{Matrix: Matrix{Runs: 1}, Results: rs}
		path := filepath.Join(dir, name)
		if err := rep.SavePlot(path); err != nil {
			t.Fatalf("SavePlot(%s) = %v", name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w < 600 || h < 400 || w > 3000 || h > 3000 {
			t.Errorf("%s is %dx%d pixels, want a readable size", name, w, h)
		}
	}
}

func TestSameStrategyNotes(t *testing.T) {
	never := map[string]float64{"sleeps": 0, "wait_checks": 100}
	var rs []Record
	for _, st := range []string{"tick", "barrier", "wake"} {
		r := rec(cellOf(st, 1, "batched", 100), 2.5e6)
		r.Counters = never
		rs = append(rs, r)
	}
	notes := sameStrategyNotes(rs)
	if len(notes) != 1 || !strings.Contains(notes[0], "profile 6.18 every strategy takes the same time") ||
		!strings.Contains(notes[0], "never slept") {
		t.Errorf("sameStrategyNotes(identical, no sleeps) = %q, want one note naming the profile and why", notes)
	}
	rs[1].MeanNS *= 1.5
	if notes := sameStrategyNotes(rs); len(notes) != 0 {
		t.Errorf("sameStrategyNotes(one differs) = %q, want none", notes)
	}
}

func TestRelativeWithinOneBackend(t *testing.T) {
	sim := rec(Cell{Backend: "sim", Strategy: "tick", Batch: "batched", Count: 100}, 1e6)
	real := rec(Cell{Backend: "netlink", Strategy: "-", Batch: "batched", Count: 100}, 40e6)
	slow := rec(Cell{Backend: "sim", Strategy: "msleep250", Batch: "batched", Count: 100}, 2e6)
	rs := []Record{sim, real, slow}
	relate(rs)
	for i, want := range []float64{1, 1, 2} {
		if rs[i].Relative == nil || *rs[i].Relative != want {
			t.Errorf("relate: %s relative = %v, want %v (each backend against its own fastest)", rs[i].Cell, rs[i].Relative, want)
		}
	}
}

func TestVarianceWarningOfTheRealKernelSaysNoSeed(t *testing.T) {
	c := Cell{Backend: "netlink", Profile: hostProfile, Strategy: "-", Preempt: "-", Batch: "batched", Count: 100}
	var smp []Sample
	for _, d := range []int64{10e6, 20e6, 30e6} {
		smp = append(smp, Sample{Result: ndst.ResultOK, DelNS: d})
	}
	r := reduce(c, smp)
	w := warnings(&r, smp, 3)
	if len(w) != 1 || strings.Contains(w[0], "seed") || !strings.Contains(w[0], "load") {
		t.Errorf("netlink variance warning = %q, want one about the host's load and not about seeds", w)
	}
}

func TestNoRelativeColumnWithoutAComparison(t *testing.T) {
	rs := []Record{
		rec(Cell{Backend: "sim", Strategy: "backoff", Batch: "batched", Count: 1000}, 2.5e6),
		rec(Cell{Backend: "netlink", Strategy: "-", Batch: "batched", Count: 1000}, 115e3),
	}
	relate(rs)
	if h, _, _ := rows(rs); slices.Contains(h, "relative") {
		t.Errorf("rows(one sim and one netlink cell) has a relative column %q; nothing compares like with like", h)
	}
	rs = append(rs, rec(Cell{Backend: "sim", Strategy: "tick", Batch: "batched", Count: 1000}, 3e6))
	relate(rs)
	if h, _, _ := rows(rs); !slices.Contains(h, "relative") {
		t.Errorf("rows(two sim cells) = %q, want a relative column", h)
	}
}

// TestBarsOnlyForCellsOfThePanel: with sim and netlink cells, each backend's
// panel has bars for its own cells only, and the real-kernel cell is named.
func TestBarsOnlyForCellsOfThePanel(t *testing.T) {
	rs := []Record{
		rec(cellOf("tick", 1, "batched", 100), 1.5e6), rec(cellOf("backoff", 1, "batched", 100), 1.5e6),
		rec(Cell{Backend: "netlink", Profile: hostProfile, Strategy: "-", HZ: 250, CPUs: 2, Preempt: "none", Batch: "batched", Count: 100}, 0.4e6),
	}
	ch := planChart(rs)
	if !ch.bars || len(ch.panels) != 2 {
		t.Fatalf("sim and netlink at one N: bars %v, %d panels; want bars in 2 panels", ch.bars, len(ch.panels))
	}
	var bars []string
	for s := range ch.series {
		if ch.panels[1].has(s) {
			bars = append(bars, ch.series[s].label)
		}
	}
	if !slices.Equal(bars, []string{"real kernel"}) {
		t.Errorf("the netlink panel has bars %q, want only [real kernel]", bars)
	}
}

// TestPlotKernelsOnOneAxis: several kernel lines are series of one panel,
// not a panel each; a cell the line cannot run is counted and marked (n/a),
// not dropped; a "batched" cell of a line that deletes one by one says so.
func TestPlotKernelsOnOneAxis(t *testing.T) {
	var rs []Record
	for i, pr := range []string{"2.6.31", "2.6.32", "6.18"} {
		for j, st := range []string{"tick", "expedited"} {
			for _, n := range []int{100, 1000} {
				c := cellOf(st, 1, "batched", n)
				c.Profile = pr
				r := rec(c, float64(1+i+3*j)*1e6)
				r.Batched = pr == "6.18"
				if st == "expedited" && pr == "2.6.31" {
					r = Record{Cell: c, Runs: 0, NotApplicable: "no synchronize_rcu_expedited on 2.6.31"}
				}
				rs = append(rs, r)
			}
		}
	}
	ch := planChart(rs)
	if len(ch.panels) != 1 {
		t.Fatalf("%d panels, want the kernels on one axis", len(ch.panels))
	}
	var labels []string
	for _, s := range ch.series {
		labels = append(labels, s.label)
	}
	if len(ch.series) != 6 || !slices.Contains(labels, "tick, profile 2.6.32") {
		t.Errorf("series %q; want strategy × profile", labels)
	}
	if ch.na != 2 {
		t.Errorf("n/a cells counted %d, want 2 (expedited on 2.6.31 at both N)", ch.na)
	}
	rep := &Report{Results: rs, Matrix: Matrix{Runs: 1}}
	title := strings.Join(rep.plotTitle(ch), "\n")
	for _, want := range []string{"one by one on 2.6.31, 2.6.32", "2 cell(s) their kernel line cannot run (n/a: expedited on 2.6.31)"} {
		if !strings.Contains(title, want) {
			t.Errorf("title lacks %q:\n%s", want, title)
		}
	}
	if err := rep.SavePlot(filepath.Join(t.TempDir(), "k.svg")); err != nil {
		t.Errorf("SavePlot: %v", err)
	}
	// With the batch mode varying, the batched panel says which lines
	// deleted one by one.
	for _, r := range slices.Clone(rs) {
		r.Batch, r.Batched = "one-by-one", false
		rs = append(rs, r)
	}
	ch = planChart(rs)
	if len(ch.panels) != 2 || !strings.Contains(ch.panels[0].title, "batched (one by one on 2.6.31, 2.6.32") || strings.Contains(ch.panels[1].title, "(") {
		t.Errorf("panels %q, %q; want the batched one to name the lines that deleted one by one", ch.panels[0].title, ch.panels[1].title)
	}
}
