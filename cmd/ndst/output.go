package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
)

// printResult renders one timed command, as text or as one JSON object.
func (g *globalOptions) printResult(r *ndst.Result) error {
	if g.json {
		return writeJSON(g.stdout, r)
	}
	return writeResultText(g.stdout, r)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeResultText prints what the time(1) user expects first (the times),
// then the distribution and the counters that explain them.
func writeResultText(w io.Writer, r *ndst.Result) error {
	var b strings.Builder
	what := "created"
	if r.Op == "del" {
		what = "deleted"
		if r.Batched {
			what += " as one batch"
		} else {
			what += " one by one"
		}
	}
	if r.Result == ndst.ResultOK || r.Backend != "sim" {
		fmt.Fprintf(&b, "%s: %d devices %s on the %s backend", r.Op, r.Count, what, r.Backend)
	} else {
		fmt.Fprintf(&b, "%s: stopped (%s) on the %s backend; nothing was changed", r.Op, r.Result, r.Backend)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, " (%d skipped)", r.Skipped)
	}
	b.WriteString("\n")
	if r.Profile != nil {
		fmt.Fprintf(&b, "kernel:  profile %s, strategy %s, HZ=%d, %d CPU(s), preempt %s, seed %d\n",
			*r.Profile, deref(r.Strategy), derefInt(r.HZ), derefInt(r.CPUs), deref(r.Preempt), derefU64(r.Seed))
	} else if r.HZ != nil || r.CPUs != nil {
		fmt.Fprintf(&b, "host:    HZ=%s, %s CPU(s), preempt %s\n", optInt(r.HZ), optInt(r.CPUs), optStr(r.Preempt))
	}
	if r.Kind != "" {
		fmt.Fprintf(&b, "kind:    %s\n", r.Kind)
	}
	if r.VirtualNS != nil {
		fmt.Fprintf(&b, "virtual: %s   (what the emulated kernel takes)\n", fmtDur(*r.VirtualNS))
	}
	fmt.Fprintf(&b, "wall:    %s   (what ndst took)\n", fmtDur(r.WallNS))
	if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "per device: min %s, median %s, p99 %s, max %s\n",
			fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
	}
	if c := r.Counters; len(c) > 0 {
		b.WriteString("counters:")
		keys := slices.Sorted(maps.Keys(c))
		for i, k := range keys {
			if i%6 == 0 {
				b.WriteString("\n ")
			}
			v := fmt.Sprint(c[k])
			if strings.HasSuffix(k, "_ns") {
				v = fmtDur(c[k])
			}
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
		b.WriteString("\n")
	}
	if len(r.KernelLog) > 0 {
		b.WriteString("kernel log:\n")
		for _, l := range r.KernelLog {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "result: %s", r.Result)
	if r.Error != "" {
		fmt.Fprintf(&b, " (%s)", r.Error)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// printList renders a device listing.
func (g *globalOptions) printList(backend string, devs []ndst.Device) error {
	if g.json {
		return writeJSON(g.stdout, struct {
			Backend string        `json:"backend"`
			Count   int           `json:"count"`
			Devices []ndst.Device `json:"devices"`
		}{backend, len(devs), devs})
	}
	bw := bufio.NewWriter(g.stdout)
	defer bw.Flush()
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IFINDEX\tNAME\tKIND\tSTATE\tREFCNT")
	for _, d := range devs {
		name := d.Name
		if d.Foreign {
			name += " (not ndst's)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", d.Ifindex, name, d.Kind, d.State, d.Refcount)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(bw, "%d devices\n", len(devs))
	return bw.Flush()
}

// fmtDur prints nanoseconds the way time(1) users read them.
func fmtDur(ns int64) string { return bench.FormatDuration(float64(ns)) }

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func derefU64(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func optInt(p *int) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func optStr(p *string) string {
	if p == nil {
		return "?"
	}
	return *p
}

func writeJSONIndent(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
