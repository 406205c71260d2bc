package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// knobJSON is one knob of `ndst --json profiles --knobs`: what the knob is,
// and how each line has it. It is the catalogue a tool that sets knobs on a
// real kernel reads: name, file, kind, type, range and per-line defaults.
type knobJSON struct {
	Name    string         `json:"name"`
	Path    string         `json:"path,omitempty"`
	Aliases []string       `json:"aliases,omitempty"`
	Kind    string         `json:"kind"`
	Runtime bool           `json:"runtime_settable"`
	Type    string         `json:"type"`
	Range   string         `json:"range"`
	Min     *int64         `json:"min,omitempty"`
	Max     *int64         `json:"max,omitempty"`
	Choices []string       `json:"choices,omitempty"`
	Unit    string         `json:"unit,omitempty"`
	What    string         `json:"what"`
	Cost    string         `json:"cost"`
	Lines   []knobLineJSON `json:"lines"`
	Missing []string       `json:"lines_without,omitempty"`
}

type knobLineJSON struct {
	Line      string `json:"line"`
	Default   string `json:"default"`
	Since     string `json:"since,omitempty"`
	Commit    string `json:"commit,omitempty"`
	Title     string `json:"title,omitempty"`
	Confirmed bool   `json:"commit_confirmed"`
	Source    string `json:"source"`
}

// knobsMachine is the machine the defaults are given for.
type knobsMachine struct {
	HZ      int    `json:"hz"`
	CPUs    int    `json:"cpus"`
	Preempt string `json:"preempt"`
	// Defaulted: --preempt was not given, so a line that cannot run
	// Preempt shows its own default model (netdev.Profile.DefaultPreempt).
	Defaulted bool `json:"-"`
}

// linePreempt is the model a line's column is for.
func (m knobsMachine) linePreempt(p netdev.Profile) string {
	if def, _ := p.DefaultPreempt(); m.Defaulted && def != m.Preempt {
		return def
	}
	return m.Preempt
}

// lineDefaults resolves every line's knobs for the machine; a line that
// cannot run that machine (PREEMPT_RT on 2.6.3x) is left out.
func lineDefaults(m knobsMachine) (map[string]*netdev.Knobs, error) {
	if _, err := sim.ParsePreempt(m.Preempt); err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	out := map[string]*netdev.Knobs{}
	for _, name := range netdev.ProfileNames {
		p := netdev.Profiles[name]
		pre, _ := sim.ParsePreempt(m.linePreempt(p))
		c, err := p.Choose("", m.CPUs, pre)
		if err != nil {
			continue
		}
		k, err := p.ResolveKnobs(m.HZ, m.CPUs, pre, c.Name, nil, nil)
		if err != nil {
			return nil, err
		}
		out[name] = k
	}
	return out, nil
}

func knobCatalogue(m knobsMachine) ([]knobJSON, error) {
	defs, err := lineDefaults(m)
	if err != nil {
		return nil, err
	}
	var out []knobJSON
	for _, d := range knob.Catalog {
		j := knobJSON{Name: d.Name, Path: d.Path, Aliases: d.Aliases, Kind: d.Kind.String(), Runtime: d.Kind == knob.Runtime,
			Type: d.Type.String(), Range: d.RangeText(), Choices: d.Choices, Unit: d.Unit, What: d.What, Cost: d.Cost}
		if d.Type == knob.Int {
			lo, hi := d.Min, d.Max
			j.Min, j.Max = &lo, &hi
		}
		for _, name := range netdev.ProfileNames {
			p := netdev.Profiles[name]
			e, ok := p.LineKnob(d.Name)
			if !ok {
				j.Missing = append(j.Missing, name)
				continue
			}
			def := "n/a on this machine"
			if k := defs[name]; k != nil {
				if v, ok := k.Value(d.Name); ok {
					def = v.String()
				}
			}
			j.Lines = append(j.Lines, knobLineJSON{Line: name, Default: def, Since: e.Since, Commit: e.Commit, Title: e.Title,
				Confirmed: e.Confirmed, Source: e.Source})
		}
		out = append(out, j)
	}
	return out, nil
}

// writeKnobs prints the knob table: each knob's value during a run on each
// line (for the machine of the flags), its kind and file, then where each
// line's entry was read.
func writeKnobs(w io.Writer, m knobsMachine) error {
	cat, err := knobCatalogue(m)
	if err != nil {
		return err
	}
	var b strings.Builder
	var own []string
	for _, name := range netdev.ProfileNames {
		if pre := m.linePreempt(netdev.Profiles[name]); pre != m.Preempt {
			own = append(own, fmt.Sprintf(", %s on %s (its default; it has no %s)", pre, name, m.Preempt))
		}
	}
	fmt.Fprintf(&b, "knobs by line: the value during a run on --hz %d --cpus %d --preempt %s%s (\"-\": the line lacks the knob; --param NAME=VALUE sets one)\n\n",
		m.HZ, m.CPUs, m.Preempt, strings.Join(own, ""))
	tw := tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
	fmt.Fprint(tw, "knob\tkind")
	for _, name := range netdev.ProfileNames {
		fmt.Fprintf(tw, "\t%s", name)
	}
	fmt.Fprintln(tw, "\tfile")
	for _, k := range cat {
		fmt.Fprintf(tw, "%s\t%s", k.Name, k.Kind)
		for _, name := range netdev.ProfileNames {
			v := "-"
			for _, l := range k.Lines {
				if l.Line == name {
					v = l.Default
					if v == "n/a on this machine" {
						v = "n/a"
					}
				}
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		path := k.Path
		switch {
		case k.Kind == "build":
			path = "(the kernel's config)"
		case path == "":
			path = "(/proc/cmdline)"
		}
		fmt.Fprintf(tw, "\t%s\n", path)
	}
	tw.Flush()
	b.WriteString("\nwhat each knob does, what it costs, and where each line's entry was read (commit ids marked ? were not confirmed from a commit notice):\n")
	for _, k := range cat {
		fmt.Fprintf(&b, "\n%s (%s, %s: %s)\n  %s\n  cost: %s\n", k.Name, k.Kind, k.Type, k.Range, k.What, k.Cost)
		prev := ""
		for _, l := range k.Lines {
			line := fmt.Sprintf("%s %s %q: %s", l.Since, commitMark(l.Commit, l.Confirmed), l.Title, l.Source)
			if l.Since == "" {
				line = l.Source
			}
			if line == prev {
				continue
			}
			prev = line
			fmt.Fprintf(&b, "  from %s: %s\n", l.Line, strings.ReplaceAll(line, ` "": `, ": "))
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func commitMark(id string, confirmed bool) string {
	switch {
	case id == "":
		return "(commit not confirmed)"
	case !confirmed:
		return id + "?"
	}
	return id
}
