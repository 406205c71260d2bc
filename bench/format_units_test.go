package bench

import (
	"strings"
	"testing"
)

func TestColumnUnit(t *testing.T) {
	for _, c := range []struct {
		vs   []float64
		want string
	}{
		{[]float64{3e6, 300e6}, "ms"},
		{[]float64{148e6, 200.4e9}, "ms"}, // 200400 ms: still under 7 digits
		{[]float64{3e6, 2e13}, "s"},       // 20000000 ms would need 8 digits
		{[]float64{500, 900}, "ns"},
		{[]float64{1500, 2e6}, "µs"},
		{[]float64{0, 0}, "ms"},
	} {
		if got := columnUnit(c.vs).name; got != c.want {
			t.Errorf("columnUnit(%v) = %s, want %s", c.vs, got, c.want)
		}
	}
	if got := columnUnit([]float64{3e6}).format(3_000_028); got != "3.000" {
		t.Errorf("format = %q", got)
	}
}

// TestTableOneUnitPerColumn: every time column names its unit once, in its
// header, and its cells are plain numbers.
func TestTableOneUnitPerColumn(t *testing.T) {
	rs := []Record{
		{Cell: Cell{Backend: "sim", Profile: "6.18", Strategy: "tick", Count: 10}, Runs: 1, OK: 1, MinNS: 3e6, MedianNS: 3e6, MeanNS: 3e6, MaxNS: 3e6, PerDeviceNS: 3e5},
		{Cell: Cell{Backend: "sim", Profile: "6.18", Strategy: "expedited", Count: 10}, Runs: 1, OK: 1, MinNS: 2e9, MedianNS: 2e9, MeanNS: 2e9, MaxNS: 2e9, PerDeviceNS: 2e8},
	}
	h, body, merged := rows(rs)
	if merged {
		t.Errorf("different rows were merged")
	}
	joined := strings.Join(h, "|")
	for _, want := range []string{"min (ms)", "median (ms)", "max (ms)", "per device (µs)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("header %q lacks %q", joined, want)
		}
	}
	for _, row := range body {
		for _, cell := range row {
			if strings.HasSuffix(cell, "ms") || strings.HasSuffix(cell, "µs") {
				t.Errorf("a cell carries its own unit: %q in %v", cell, row)
			}
		}
	}
}

// TestIdenticalRowsMerged: emulated cells that differ only in their
// strategy and agree in every column are one row naming the strategies.
func TestIdenticalRowsMerged(t *testing.T) {
	one, rel := 1.0, 1.0
	sd := 0.01
	mk := func(s string, r *float64, rsd *float64) Record {
		return Record{Cell: Cell{Backend: "sim", Profile: "6.18", Strategy: s, Count: 10}, Runs: 1, OK: 1,
			MinNS: 5e6, MedianNS: 5e6, MeanNS: 5e6, MaxNS: 5e6, PerDeviceNS: 5e5, Relative: r, RelativeSD: rsd,
			Counters: map[string]float64{"grace_periods": 1}}
	}
	other := mk("msleep250", &one, nil)
	other.MinNS, other.MeanNS = 9e6, 9e6
	two := 1.8
	other.Relative = &two
	rs := []Record{mk("tick", &one, nil), mk("backoff", &rel, &sd), other}
	_, body, merged := rows(rs)
	if !merged || len(body) != 2 || body[0][0] != "tick, backoff" {
		t.Fatalf("rows = %v (merged %v); want tick and backoff in one row, msleep250 in its own", body, merged)
	}
	rep := &Report{Results: rs, Matrix: Matrix{Cells: 3, Runs: 1, Seed: 1}}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if i, j := strings.Index(out, mergedNote), strings.Index(out, "strategy"); i < 0 || j < 0 || i > strings.Index(out, "tick, backoff") {
		t.Errorf("the note on merged rows is not before the table:\n%s", out)
	}
}

func TestGroupWarnings(t *testing.T) {
	got := groupWarnings([]string{
		"expedited on 2.6.33, HZ=1000, N=10: livelock in 3 of 3 runs",
		"expedited on 2.6.33, HZ=1000, N=100: livelock in 3 of 3 runs",
		"tick on 6.18, HZ=250, N=10: something else",
		"a warning without a cell",
		"a warning without a cell",
	})
	want := []string{
		"expedited on 2.6.33, HZ=1000, N=10 and N=100: livelock in 3 of 3 runs",
		"tick on 6.18, HZ=250, N=10: something else",
		"a warning without a cell",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("groupWarnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
