package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
)

// noteSet remembers the notes a command printed on stderr, so that a note
// that many runs of one command raise (a calibration's dozen real deletes,
// each saying how it timed the cleanup) is read once.
type noteSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

// note prints "ndst: MESSAGE" on stderr, once per command for each message.
func (g *globalOptions) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.notes.mu.Lock()
	defer g.notes.mu.Unlock()
	if g.notes.seen[msg] {
		return
	}
	if g.notes.seen == nil {
		g.notes.seen = map[string]bool{}
	}
	g.notes.seen[msg] = true
	fmt.Fprintf(g.stderr, "ndst: %s\n", msg)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeResultText prints what the time(1) user expects first (the times),
// then the distribution, the emulated kernel's own explanation and the
// outcome. The raw counters and the kernel log follow only when asked for
// (v.counters, v.kernelLog); a kernel log that is not shown is mentioned.
func writeResultText(w io.Writer, r *ndst.Result, v textDetail) error {
	var b strings.Builder
	where := "on the real kernel (--backend " + r.Backend + ")"
	if r.Backend == "sim" {
		where = "on the emulated kernel (--backend sim)"
	}
	what := "created"
	if r.Op == "del" {
		what = "deleted"
		switch {
		case r.Batched:
			what += " as one batch"
		case r.Stream:
			what += " one by one, in one request stream"
		default:
			what += " one by one"
		}
	}
	if r.Result == ndst.ResultOK || r.Backend != "sim" {
		fmt.Fprintf(&b, "%s: %s %s %s", r.Op, plural(r.Count, "device"), what, where)
	} else {
		fmt.Fprintf(&b, "%s: stopped (%s) %s; nothing was changed", r.Op, r.Result, where)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, "; %d skipped", r.Skipped)
	}
	b.WriteString("\n")
	if r.Profile != nil {
		fmt.Fprintf(&b, "kernel:  profile %s, strategy %s, HZ=%d, %s, preempt %s, seed %d",
			*r.Profile, deref(r.Strategy), derefInt(r.HZ), plural(derefInt(r.CPUs), "CPU"), deref(r.Preempt), derefU64(r.Seed))
		if r.CostTable != nil {
			fmt.Fprintf(&b, ", cost table %s", *r.CostTable)
		}
		b.WriteString("\n")
	} else if r.HZ != nil || r.CPUs != nil {
		cpus := "? CPUs"
		if r.CPUs != nil {
			cpus = plural(*r.CPUs, "CPU")
		}
		fmt.Fprintf(&b, "host:    HZ=%s, %s, preempt %s\n", optInt(r.HZ), cpus, optStr(r.Preempt))
	}
	if r.Kind != "" {
		fmt.Fprintf(&b, "kind:    %s\n", r.Kind)
	}
	if r.VirtualNS != nil {
		fmt.Fprintf(&b, "virtual: %-10s what the emulated kernel takes\n", fmtDur(*r.VirtualNS))
	}
	fmt.Fprintf(&b, "wall:    %-10s what ndst took\n", fmtDur(r.WallNS))
	if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "per device: min %s, median %s, p99 %s, max %s\n",
			fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
	}
	if r.Op == "del" {
		writePhases(&b, r)
	}
	writeOutcome(&b, r, v)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeOutcome ends a text result: the explanation, the notes, the counters
// and the kernel log when asked for, and the outcome.
func writeOutcome(b *strings.Builder, r *ndst.Result, v textDetail) {
	for i, l := range r.Explain {
		label := "why:     "
		if i > 0 {
			label = "         "
		}
		fmt.Fprintf(b, "%s%s\n", label, l)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note:    %s\n", n)
	}
	if v.counters && len(r.Counters) > 0 {
		writeCounters(b, r.Counters)
	}
	switch {
	case len(r.KernelLog) == 0:
	case v.kernelLog:
		b.WriteString("kernel log:\n")
		for _, l := range r.KernelLog {
			fmt.Fprintf(b, "  %s\n", l)
		}
	default:
		fmt.Fprintf(b, "kernel log: %s (-v prints them)\n", plural(len(r.KernelLog), "message"))
	}
	fmt.Fprintf(b, "result:  %s", r.Result)
	if r.Error != "" {
		fmt.Fprintf(b, " (%s)", r.Error)
	}
	b.WriteString("\n")
}

// textDetail says what a text result shows beyond its summary.
type textDetail struct {
	counters  bool // the raw counters (-v or --counters)
	kernelLog bool // the kernel's messages (-v)
}

// writeCounters prints the counters three to a line, sorted by name, with
// durations (names ending in _ns) as durations and counts as counts.
func writeCounters(b *strings.Builder, c map[string]int64) {
	const perLine = 3
	keys := slices.Sorted(maps.Keys(c))
	names, vals := make([]string, len(keys)), make([]string, len(keys))
	nameW, valW := make([]int, perLine), make([]int, perLine)
	for i, k := range keys {
		names[i], vals[i] = k, strconv.FormatInt(c[k], 10)
		if strings.HasSuffix(k, "_ns") {
			names[i], vals[i] = strings.TrimSuffix(k, "_ns"), fmtDur(c[k])
		}
		col := i % perLine
		nameW[col] = max(nameW[col], utf8.RuneCountInString(names[i]))
		valW[col] = max(valW[col], utf8.RuneCountInString(vals[i]))
	}
	b.WriteString("counters:\n")
	for i := range keys {
		col := i % perLine
		if col == 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(b, " %-*s %*s", nameW[col], names[i], valW[col], vals[i])
		if col == perLine-1 || i == len(keys)-1 {
			b.WriteString("\n")
		} else {
			b.WriteString("  ")
		}
	}
}

// plural is "1 device", "2 devices".
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
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
