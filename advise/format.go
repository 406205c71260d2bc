package advise

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ndst-project/ndst/bench"
)

// WriteJSON prints the advice as one JSON object.
func (a *Advice) WriteJSON(w io.Writer) error {
	out := *a
	for _, l := range []*[]Lever{&out.Levers, &out.NoEffect, &out.Slower, &out.NotApplicable} {
		if *l == nil {
			*l = []Lever{}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func dur(ns int64) string { return bench.FormatDuration(float64(ns)) }

// machineLine describes the emulated machine.
func (a *Advice) machineLine() string {
	m := a.Machine
	strategy := m.Strategy
	if strategy == "" {
		strategy = "the line's own wait loop"
	}
	s := fmt.Sprintf("line %s, %s, HZ=%d, %d CPU(s), preempt %s", m.Profile, strategy, m.HZ, m.CPUs, m.Preempt)
	if m.RCU != "" {
		s += ", " + m.RCU + " RCU"
	}
	if m.Costs != nil {
		s += ", cost table " + m.Costs.Source
	}
	return s
}

// WriteText prints the advice for a person: the workload and machine, the
// time as it is, the levers by time saved (each with how to apply it, why
// it helps and what it costs), then those without effect, those that slow
// it and those that do not apply.
func (a *Advice) WriteText(w io.Writer) error {
	var b strings.Builder
	unit := "device"
	if a.Workload.Namespaces > 0 {
		unit = "namespace"
	}
	fmt.Fprintf(&b, "advise:  %s, on the emulated kernel\n", a.Workload)
	fmt.Fprintf(&b, "machine: %s\n", a.machineLine())
	for _, s := range a.Machine.Settings {
		fmt.Fprintf(&b, "         %-8s %-14s from %s\n", s.Name, s.Value, s.From)
	}
	fmt.Fprintf(&b, "now:     %s (%s per %s): %s\n", dur(a.Baseline.NS), bench.FormatDuration(a.Baseline.PerItemNS), unit, a.Baseline.Why)
	for _, n := range a.Notes {
		fmt.Fprintf(&b, "note:    %s\n", n)
	}
	measured := a.Verified
	fmt.Fprintf(&b, "\nlevers, by time saved (%d emulations, %d run(s) each, seed %d):\n", a.Emulations, a.Runs, a.Seed)
	if len(a.Levers) == 0 {
		b.WriteString("  none saves more than 1%\n")
	} else {
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		hdr := " #\tsaves\tpredicted after\tkind\tlever"
		if measured {
			hdr += "\tmeasured before\tmeasured after"
		}
		fmt.Fprintln(tw, hdr)
		for i, l := range a.Levers {
			row := fmt.Sprintf("%2d\t%s (%.0f%%)\t%s\t%s\t%s", i+1, dur(l.SavedNS), 100*l.Saved, dur(l.AfterNS), l.Kind, l.Setting)
			if measured {
				row += "\t" + measuredText(l.Measured, true) + "\t" + measuredText(l.Measured, false)
			}
			fmt.Fprintln(tw, row)
		}
		tw.Flush()
		for i, l := range a.Levers {
			fmt.Fprintf(&b, "\n%2d. %s (%s)\n", i+1, l.Setting, kindWords(l))
			fmt.Fprintf(&b, "    apply: %s\n", l.Apply)
			fmt.Fprintf(&b, "    why:   %s\n", l.Reason)
			fmt.Fprintf(&b, "    cost:  %s\n", l.Cost)
			if l.Measured != nil {
				fmt.Fprintf(&b, "    measured: %s\n", l.Measured.describe())
			}
		}
	}
	if len(a.NoEffect) > 0 {
		var names []string
		for _, l := range a.NoEffect {
			names = append(names, l.Setting)
		}
		fmt.Fprintf(&b, "\nno effect (within 1%%): %s\n", strings.Join(names, ", "))
	}
	if len(a.Slower) > 0 {
		b.WriteString("\nslower:\n")
		for _, l := range a.Slower {
			if l.Result != "ok" {
				fmt.Fprintf(&b, "  %s (%s): %s\n", l.Setting, l.Kind, l.Reason)
				continue
			}
			fmt.Fprintf(&b, "  %s (%s): %s → %s (+%.0f%%): %s\n", l.Setting, l.Kind, dur(l.BeforeNS), dur(l.AfterNS), -100*l.Saved, l.Reason)
		}
	}
	if len(a.NotApplicable) > 0 {
		b.WriteString("\nnot applicable:\n")
		for _, l := range a.NotApplicable {
			fmt.Fprintf(&b, "  %s: %s\n", l.Setting, l.NotApplicable)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func kindWords(l Lever) string {
	switch l.Kind {
	case KindRuntime:
		return "runtime: takes effect at once"
	case KindBoot:
		return "boot parameter: takes effect at the next boot"
	case KindBuild:
		return "build option: needs another kernel build"
	case KindKernel:
		return "kernel line"
	}
	return "workload change"
}

func measuredText(m *Measurement, before bool) string {
	switch {
	case m == nil:
		return "-"
	case m.Skipped != "":
		return "skipped"
	case before:
		return dur(m.BeforeNS)
	}
	return dur(m.AfterNS)
}
