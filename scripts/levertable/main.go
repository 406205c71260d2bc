// Command levertable prints the lever table: for each lever, on this host
// (ndst advise --verify: the runtime knobs, set and put back) and in a VM
// (scripts/vm-predict.sh --param: the boot parameters, a boot without and
// a boot with), the time predicted with the lever against the time measured
// with it, and whether the lever's effect has the measured sign.
// scripts/lever-table.sh measures and runs it.
//
//	go run ./scripts/levertable [-markdown] RECORD-DIR
//
// RECORD-DIR holds what one run of scripts/lever-table.sh measured:
// levers.json (the manifest, type Manifest), the host's verification JSON
// files and the VM boots' transcripts it names. Every VM prediction is made
// again here, from the transcripts, with this tree's model (the first
// boot's calibration, the lever applied to the emulated kernel: nothing of
// the second boot is a calibration input); the host's predictions are the
// ones advise --verify printed in the same run as its measurements.
//
// A lever is verified when every one of its cells is within 20% with the
// lever and has the sign of the measured effect (a change within 5%, or
// within twice the standard error of the two medians' difference when
// larger, bench.Threshold, shown as ±N%, is none); the
// table marks the others and the summary counts the cells that pass.
// Exit status: 0 the table was printed; 2 bad arguments or record.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/advise"
	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/safefile"
)

// Manifest is levers.json.
type Manifest struct {
	// Host is the host's part: its kernel and the verification files
	// (ndst --json advise --verify outputs), one a workload.
	Host *HostPart `json:"host,omitempty"`
	// VM are the VM cells: one boot without and one with the lever.
	VM []VMCell `json:"vm,omitempty"`
	// Load is the host's load average before and after the run.
	Load []string `json:"load,omitempty"`
}

// HostPart names the host's verifications.
type HostPart struct {
	Kernel string   `json:"kernel"`
	Verify []string `json:"verify"`
}

// VMCell is one lever in one guest.
type VMCell struct {
	Kernel  string   `json:"kernel"` // the package booted
	CPUs    int      `json:"cpus"`
	Params  []string `json:"params"`
	Without string   `json:"without"` // transcripts, relative to the record
	With    string   `json:"with"`
}

// Cell is one row of the table.
type Cell struct {
	Lever     string  `json:"lever"`
	Where     string  `json:"where"`    // "host" or the guest
	Workload  string  `json:"workload"` // N and mode
	Before    int64   `json:"measured_before_ns"`
	After     int64   `json:"measured_after_ns"`
	PBefore   int64   `json:"predicted_before_ns"`
	PAfter    int64   `json:"predicted_after_ns"`
	Error     float64 `json:"relative_error"`
	Threshold float64 `json:"effect_threshold"`
	// Idle is the share of the host's CPU time that was idle during the
	// timed teardowns (host cells; -1 unknown).
	Idle      float64 `json:"idle_share"`
	MEffect   string  `json:"measured_effect"`
	PEffect   string  `json:"predicted_effect"`
	SignRight bool    `json:"sign_right"`
	Skipped   string  `json:"skipped,omitempty"`
}

// Within reports whether the cell's prediction with the lever is within
// the target.
func (c Cell) Within() bool { return c.Skipped == "" && math.Abs(c.Error) <= bench.PredictThreshold }

// OK is Within with the right sign.
func (c Cell) OK() bool { return c.Within() && c.SignRight }

func main() {
	md := flag.Bool("markdown", false, "print a Markdown table (the README's)")
	asJSON := flag.Bool("json", false, "print the cells as JSON")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "levertable: usage: levertable [-markdown|-json] RECORD-DIR")
		os.Exit(2)
	}
	cells, m, err := Build(context.Background(), flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "levertable: %v\n", err)
		os.Exit(2)
	}
	switch {
	case *asJSON:
		err = json.NewEncoder(os.Stdout).Encode(cells)
	default:
		err = WriteTable(os.Stdout, cells, m, *md)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "levertable: %v\n", err)
		os.Exit(1)
	}
}

// Build reads a record and makes its cells, the VM ones predicted afresh.
func Build(ctx context.Context, dir string) ([]Cell, *Manifest, error) {
	var m Manifest
	if err := readJSON(filepath.Join(dir, "levers.json"), &m); err != nil {
		return nil, nil, err
	}
	var cells []Cell
	if m.Host != nil {
		for _, f := range m.Host.Verify {
			var a advise.Advice
			if err := readJSON(filepath.Join(dir, f), &a); err != nil {
				return nil, nil, err
			}
			if !a.Verified {
				return nil, nil, fmt.Errorf("%s is not a verified advice (ndst --json advise --verify writes one)", f)
			}
			for _, group := range [][]advise.Lever{a.Levers, a.NoEffect, a.Slower} {
				for _, l := range group {
					if !l.RuntimeSettable || l.Measured == nil {
						continue
					}
					c := Cell{Lever: l.Setting, Where: "host " + m.Host.Kernel, Workload: shortWorkload(a.Workload),
						Before: l.Measured.BeforeNS, After: l.Measured.AfterNS, PBefore: l.BeforeNS, PAfter: l.AfterNS, Skipped: l.Measured.Skipped,
						Idle: l.Measured.IdleShare}
					if c.Skipped == "" {
						c.Error = rel(c.PAfter, c.After)
						c.Threshold = bench.Threshold(l.Measured.BeforeRunsNS, l.Measured.AfterRunsNS)
						c.MEffect, c.PEffect = bench.EffectWithin(c.Before, c.After, c.Threshold), bench.EffectWithin(c.PBefore, c.PAfter, c.Threshold)
						c.SignRight = c.MEffect == c.PEffect
					}
					cells = append(cells, c)
				}
			}
		}
	}
	for _, c := range m.VM {
		lp, err := predictCell(ctx, dir, c)
		if err != nil {
			return nil, nil, err
		}
		where := fmt.Sprintf("VM %s, %d CPU", strings.TrimPrefix(c.Kernel, "linux-image-"), c.CPUs)
		for _, r := range lp.Rows {
			mode := "one batch"
			if r.Batch == "one-by-one" {
				mode = "one by one"
			}
			cells = append(cells, Cell{Lever: strings.Join(c.Params, " "), Where: where, Workload: fmt.Sprintf("%d devices, %s", r.Count, mode), Idle: -1,
				Before: r.MeasuredBeforeNS, After: r.MeasuredAfterNS, PBefore: r.PredictedBeforeNS, PAfter: r.PredictedAfterNS,
				Error: r.Error, Threshold: r.Threshold, MEffect: r.MeasuredEffect, PEffect: r.PredictedEffect, SignRight: r.SignRight})
		}
	}
	return cells, &m, nil
}

// predictCell predicts a VM cell's two boots with the first one's
// calibration.
func predictCell(ctx context.Context, dir string, c VMCell) (*bench.LeverPrediction, error) {
	read := func(name string) (*bench.PredictSpec, *bench.Recorded, error) {
		b, err := safefile.ReadFile(ctx, filepath.Join(dir, name), 64<<20, safefile.NoLinks)
		if err != nil {
			return nil, nil, err
		}
		t, rec, err := bench.ParseGuestLog(bytes.NewReader(b))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		s := &bench.PredictSpec{Costs: t, Recorded: rec, Runs: 1, SimRuns: calibrate.ClosurePhases, Seed: 1}
		for n := range rec.Del {
			s.Counts = append(s.Counts, n)
		}
		slices.Sort(s.Counts)
		return s, rec, nil
	}
	s, _, err := read(c.Without)
	if err != nil {
		return nil, err
	}
	_, with, err := read(c.With)
	if err != nil {
		return nil, err
	}
	params := slices.Clone(c.Params)
	return bench.PredictLever(ctx, s, with, params, func(cfg *emu.Config) error {
		cfg.Params = append(cfg.Params, params...)
		return nil
	})
}

// WriteTable prints the cells, grouped by lever, and the verdict per lever.
func WriteTable(w io.Writer, cells []Cell, m *Manifest, md bool) error {
	var b strings.Builder
	levers := []string{}
	for _, c := range cells {
		if !slices.Contains(levers, c.Lever) {
			levers = append(levers, c.Lever)
		}
	}
	verdict := map[string]string{}
	for _, l := range levers {
		n, ok := 0, 0
		for _, c := range cells {
			if c.Lever == l && c.Skipped == "" {
				n++
				if c.OK() {
					ok++
				}
			}
		}
		switch {
		case n == 0:
			verdict[l] = "not measured"
		case ok == n:
			verdict[l] = "verified"
		default:
			verdict[l] = fmt.Sprintf("not verified (%d of %d cells)", ok, n)
		}
	}
	dur := func(ns int64) string { return bench.FormatDuration(float64(ns)) }
	if md {
		b.WriteString("| lever | where | workload | measured without → with | predicted without → with | error with | effect measured / predicted | CPUs idle | |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, l := range levers {
		for _, c := range cells {
			if c.Lever != l {
				continue
			}
			if c.Skipped != "" {
				if md {
					fmt.Fprintf(&b, "| `%s` | %s | %s | skipped: %s | %s → %s | | | | |\n", c.Lever, c.Where, c.Workload, c.Skipped, dur(c.PBefore), dur(c.PAfter))
				} else {
					fmt.Fprintf(&b, "%s  %s  %s: skipped (%s)\n", c.Lever, c.Where, c.Workload, c.Skipped)
				}
				continue
			}
			mark := ""
			if !c.OK() {
				mark = "**✗**"
			}
			eff := fmt.Sprintf("%s %+.0f%% / %s %+.0f%% (±%.0f%%)", c.MEffect, 100*rel(c.After, c.Before), c.PEffect, 100*rel(c.PAfter, c.PBefore), 100*c.Threshold)
			errText := fmt.Sprintf("%+.1f%%", 100*c.Error)
			if md {
				if !c.Within() {
					errText = "**" + errText + "**"
				}
				if !c.SignRight {
					eff = "**" + eff + "**"
				}
				idle := ""
				if c.Idle >= 0 {
					idle = fmt.Sprintf("%.0f%%", 100*c.Idle)
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s → %s | %s → %s | %s | %s | %s | %s |\n", c.Lever, c.Where, c.Workload,
					dur(c.Before), dur(c.After), dur(c.PBefore), dur(c.PAfter), errText, eff, idle, mark)
			} else {
				fmt.Fprintf(&b, "%s  %s  %s: measured %s -> %s, predicted %s -> %s, error %s, effect %s %s\n", c.Lever, c.Where, c.Workload,
					dur(c.Before), dur(c.After), dur(c.PBefore), dur(c.PAfter), errText, eff, mark)
			}
		}
	}
	b.WriteString("\n")
	for _, l := range levers {
		fmt.Fprintf(&b, "- `%s`: %s\n", l, verdict[l])
	}
	if m != nil && len(m.Load) == 2 {
		fmt.Fprintf(&b, "\nhost load average before / after the run: %s / %s\n", m.Load[0], m.Load[1])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortWorkload names an advice's workload in a table cell.
func shortWorkload(w advise.Workload) string {
	switch {
	case w.Namespaces > 0 && w.Veth:
		s := fmt.Sprintf("%d pods (namespace and veth pair)", w.Namespaces)
		if w.OneByOne {
			return s + ", one at a time"
		}
		return s + ", all at once"
	case w.Namespaces > 0:
		if w.OneByOne {
			return fmt.Sprintf("%d namespaces, one at a time", w.Namespaces)
		}
		return fmt.Sprintf("%d namespaces, all at once", w.Namespaces)
	case w.OneByOne:
		return fmt.Sprintf("%d devices, one by one", w.Devices)
	}
	return fmt.Sprintf("%d devices, one batch", w.Devices)
}

func rel(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a-b) / float64(b)
}

func readJSON(path string, v any) error {
	b, err := safefile.ReadFile(context.Background(), path, 64<<20, safefile.NoLinks)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
