package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/safefile"
)

type latT = ndst.Latency

// dims are the cell's dimensions, in table order.
var dims = []struct {
	name string
	get  func(Cell) string
}{
	{"backend", func(c Cell) string { return c.Backend }},
	{"profile", func(c Cell) string { return c.Profile }},
	{"strategy", func(c Cell) string { return c.Strategy }},
	{"HZ", func(c Cell) string { return intOrDash(c.HZ) }},
	{"CPUs", func(c Cell) string { return intOrDash(c.CPUs) }},
	{"preempt", func(c Cell) string { return c.Preempt }},
	{"batch", func(c Cell) string { return c.Batch }},
	{"N", func(c Cell) string { return strconv.Itoa(c.Count) }},
	{"namespaces of", func(c Cell) string { return c.netnsWhat() }},
}

func intOrDash(v int) string {
	if v == 0 {
		return "-"
	}
	return strconv.Itoa(v)
}

// varying returns the indexes of the dimensions that take more than one
// value among rs (at least the strategy, so a row always has a name), and a
// description of the fixed ones.
func varying(rs []Record) (idx []int, fixed []string) {
	for i, d := range dims {
		vals := map[string]bool{}
		for _, r := range rs {
			vals[d.get(r.Cell)] = true
		}
		if len(vals) > 1 || (d.name == "strategy" && len(rs) > 0 && rs[0].Backend == "sim") {
			idx = append(idx, i)
			continue
		}
		if len(rs) == 0 {
			continue
		}
		v := d.get(rs[0].Cell)
		switch d.name {
		case "backend":
			fixed = append(fixed, v+" backend")
		case "HZ":
			fixed = append(fixed, "HZ="+v)
		case "CPUs":
			fixed = append(fixed, v+" CPU(s)")
		case "preempt":
			fixed = append(fixed, "preempt "+v)
		case "N":
			fixed = append(fixed, "N="+v)
		case "profile":
			fixed = append(fixed, "profile "+v)
		case "strategy":
			if v != "-" {
				fixed = append(fixed, "strategy "+v)
			}
		case "namespaces of":
			if v != "-" {
				fixed = append(fixed, "namespaces of "+v)
			}
		default:
			fixed = append(fixed, v)
		}
	}
	if len(idx) == 0 { // one netlink cell: name it by its batch mode
		idx = append(idx, 6)
		fixed = fixed[:len(fixed)-1]
	}
	return idx, fixed
}

// counterColumns are the counters the table shows, when any record has them.
var counterColumns = []struct {
	name, key string
	format    func(float64) string
}{
	{"GPs", "grace_periods", formatCount},
	{"sleeps", "sleeps", formatCount},
	{"wakeups", "wakeups", formatCount},
	{"CPU busy", "cpu_busy_ns", FormatDuration},
	{"requests", "netlink_requests", formatCount},
	{"returned", "netns_returned_ns", FormatDuration},
	{"devices gone", "netns_gone_ns", FormatDuration},
	{"cleanup runs", "cleanup_batches", formatCount},
}

// rows renders the records as a header and text rows, for the terminal
// table and Markdown alike.
func rows(rs []Record) (header []string, body [][]string) {
	idx, _ := varying(rs)
	for _, i := range idx {
		header = append(header, dims[i].name)
	}
	// The relative column compares cells of one backend and N; when no
	// cell has another to compare with, it would only say 1.00.
	showRel := false
	for _, r := range rs {
		showRel = showRel || r.Relative != nil && *r.Relative != 1
	}
	per := "per device"
	if len(rs) > 0 && rs[0].NetnsCell() {
		per = "per namespace"
	}
	header = append(header, "min", "median", "mean ± sd", "max", per)
	if showRel {
		header = append(header, "relative")
	}
	var counters []int
	for i, c := range counterColumns {
		for _, r := range rs {
			if _, ok := r.Counters[c.key]; ok {
				counters = append(counters, i)
				header = append(header, c.name)
				break
			}
		}
	}
	header = append(header, "result")
	for _, r := range rs {
		var row []string
		for _, i := range idx {
			row = append(row, dims[i].get(r.Cell))
		}
		if r.OK == 0 {
			row = append(row, "-", "-", "-", "-", "-")
			if showRel {
				row = append(row, "-")
			}
		} else {
			ms := FormatDuration(r.MeanNS)
			if r.OK > 1 {
				ms += " ± " + FormatDuration(r.StddevNS)
			}
			row = append(row, FormatDuration(float64(r.MinNS)), FormatDuration(float64(r.MedianNS)), ms,
				FormatDuration(float64(r.MaxNS)), FormatDuration(r.PerDeviceNS))
			if showRel {
				row = append(row, relText(r))
			}
		}
		for _, i := range counters {
			c := counterColumns[i]
			v, ok := r.Counters[c.key]
			if !ok {
				row = append(row, "-")
				continue
			}
			row = append(row, c.format(v))
		}
		row = append(row, resultText(r))
		body = append(body, row)
	}
	return header, body
}

func relText(r Record) string {
	if r.Relative == nil {
		return "-"
	}
	s := strconv.FormatFloat(*r.Relative, 'f', 2, 64)
	if r.RelativeSD != nil && *r.RelativeSD > 0 {
		s += " ± " + strconv.FormatFloat(*r.RelativeSD, 'f', 2, 64)
	}
	return s
}

func formatCount(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func resultText(r Record) string {
	if r.NotApplicable != "" {
		return "n/a"
	}
	if r.Livelocks == 0 && r.Errors == 0 {
		return "ok"
	}
	var parts []string
	if r.OK > 0 {
		parts = append(parts, fmt.Sprintf("ok %d/%d", r.OK, r.Runs))
	}
	if r.Livelocks > 0 {
		parts = append(parts, fmt.Sprintf("livelock %d/%d", r.Livelocks, r.Runs))
	}
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("error %d/%d", r.Errors, r.Runs))
	}
	return strings.Join(parts, ", ")
}

// WriteFile writes an export or a plot to path with safefile.WriteOutput:
// never through a link or onto a kernel pseudo file system, by a temporary
// file renamed into place, so that a failed write leaves the old file.
func WriteFile(path string, write func(io.Writer) error) error {
	return safefile.WriteOutput(path, 0o644, write, nil)
}

// FormatDuration prints nanoseconds the way time(1) users read them.
func FormatDuration(ns float64) string {
	d := time.Duration(math.Round(ns))
	switch a := d.Abs(); {
	case a >= time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	case a >= time.Millisecond:
		return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
	case a >= time.Microsecond:
		return fmt.Sprintf("%.3fµs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%dns", d)
}

// summaryLines are the lines above the table: what ran, what was fixed,
// which clock the times are on.
func (rep *Report) summaryLines() []string {
	m := rep.Matrix
	_, fixed := varying(rep.Results)
	seeds := fmt.Sprintf("seed %d", m.Seed)
	if m.Runs > 1 {
		seeds = fmt.Sprintf("seeds %d..%d", m.Seed, m.Seed+uint64(m.Runs)-1)
	}
	what := "time to delete N devices just added"
	if len(rep.Results) > 0 && rep.Results[0].NetnsCell() {
		what = "time until the kernel's cleanup of N namespaces just added is done (batched: deleted at once; one-by-one: each waited for)"
	}
	lines := []string{fmt.Sprintf("%d cells × %d runs (%s): %s", m.Cells, m.Runs, seeds, what)}
	if k := kinds(rep.Results); k != "" {
		fixed = append(fixed, "kind "+k)
	}
	if len(fixed) > 0 {
		lines = append(lines, "fixed: "+strings.Join(fixed, ", "))
	}
	var sim, real bool
	unbatched, netnsUnbatched := map[string]bool{}, map[string]bool{}
	for _, r := range rep.Results {
		if r.Backend == "netlink" {
			real = true
		} else {
			sim = true
		}
		if r.Batch == "batched" && !r.Batched && r.Runs > 0 && r.Backend == "sim" {
			unbatched[r.Profile] = true
		}
		if r.NetnsCell() && r.Batch == "batched" && !r.Batched && r.Runs > 0 {
			netnsUnbatched[r.Profile] = true
		}
	}
	switch {
	case sim && real:
		lines = append(lines, "clock: virtual time for sim rows, wall time for netlink rows")
	case real:
		lines = append(lines, "clock: wall time on this host's kernel")
	default:
		lines = append(lines, "clock: virtual time of the emulated kernel")
	}
	if m.CostsFrom != "" {
		lines = append(lines, "costs: "+m.CostsFrom)
	}
	for _, p := range sortedKeys(unbatched) {
		if netnsUnbatched[p] {
			lines = append(lines, fmt.Sprintf("note: profile %s has no batched namespace cleanup (each namespace is a cleanup run of its own, its devices unregistered one by one), so its batched cells only drop the references at once", p))
			continue
		}
		lines = append(lines, fmt.Sprintf("note: profile %s has no batched unregister, so its batched cells delete one by one", p))
	}
	return lines
}

// kinds lists the link kinds of the real-kernel records.
func kinds(rs []Record) string {
	m := map[string]bool{}
	for _, r := range rs {
		if r.Kind != "" {
			m[r.Kind] = true
		}
	}
	return strings.Join(sortedKeys(m), "/")
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// WriteTable prints the terminal table, then the warnings.
func (rep *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	for _, l := range rep.summaryLines() {
		b.WriteString(l + "\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	h, body := rows(rep.Results)
	fmt.Fprintln(tw, strings.Join(h, "\t"))
	for _, row := range body {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.ShowPhases {
		rep.writePhases(&b)
	}
	for _, n := range rep.Notes {
		b.WriteString("note: " + n + "\n")
	}
	for _, wn := range rep.Warnings {
		b.WriteString("warning: " + wn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// phasesShown is how many phases a cell's line names; JSON has them all.
const phasesShown = 4

// writePhases prints, per cell, where the deleting task's time went: its
// largest phases, each with its share of the total, its mean time, and
// whether that was CPU work or waiting.
func (rep *Report) writePhases(b *strings.Builder) {
	idx, _ := varying(rep.Results)
	have := false
	for _, r := range rep.Results {
		have = have || len(r.Phases) > 0
	}
	if !have {
		b.WriteString("phases: none recorded (the real kernel's need --attribute)\n")
		return
	}
	b.WriteString("where each cell's time went (the deleting task's phases, mean over its runs):\n")
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	for _, r := range rep.Results {
		var name []string
		for _, i := range idx {
			name = append(name, dims[i].get(r.Cell))
		}
		var total float64
		for _, p := range r.Phases {
			total += p.CPUNS + p.WaitNS
		}
		var parts []string
		for i, p := range r.Phases {
			if i == phasesShown || total == 0 {
				break
			}
			how := "CPU"
			if p.WaitNS > p.CPUNS {
				how = "waiting"
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%% (%s, %s)", p.Name, 100*(p.CPUNS+p.WaitNS)/total, FormatDuration(p.CPUNS+p.WaitNS), how))
		}
		if len(parts) == 0 {
			parts = []string{"-"}
			if r.NotApplicable != "" {
				parts = []string{"n/a"}
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\n", strings.Join(name, " "), strings.Join(parts, ", "))
	}
	tw.Flush()
}

// WriteMarkdown prints the summary and the table as Markdown.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, l := range rep.summaryLines() {
		b.WriteString(l + "  \n")
	}
	b.WriteString("\n")
	h, body := rows(rep.Results)
	b.WriteString("| " + strings.Join(h, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(h)) + "\n")
	for _, row := range body {
		for i := range row {
			row[i] = strings.ReplaceAll(row[i], "|", `\|`)
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if len(rep.Warnings)+len(rep.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range rep.Notes {
			b.WriteString("- note: " + n + "\n")
		}
		for _, wn := range rep.Warnings {
			b.WriteString("- warning: " + wn + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the report as one indented JSON object.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// csvColumns are the CSV export's columns: raw numbers, nanoseconds.
var csvColumns = []struct {
	name string
	get  func(Record) string
}{
	{"backend", func(r Record) string { return r.Backend }},
	{"profile", func(r Record) string { return r.Profile }},
	{"strategy", func(r Record) string { return r.Strategy }},
	{"hz", func(r Record) string { return strconv.Itoa(r.HZ) }},
	{"cpus", func(r Record) string { return strconv.Itoa(r.CPUs) }},
	{"preempt", func(r Record) string { return r.Preempt }},
	{"batch", func(r Record) string { return r.Batch }},
	{"count", func(r Record) string { return strconv.Itoa(r.Count) }},
	{"clock", func(r Record) string { return r.Clock }},
	{"batched", func(r Record) string { return strconv.FormatBool(r.Batched) }},
	{"kind", func(r Record) string { return r.Kind }},
	{"runs", func(r Record) string { return strconv.Itoa(r.Runs) }},
	{"ok", func(r Record) string { return strconv.Itoa(r.OK) }},
	{"livelocks", func(r Record) string { return strconv.Itoa(r.Livelocks) }},
	{"errors", func(r Record) string { return strconv.Itoa(r.Errors) }},
	{"min_ns", func(r Record) string { return okInt(r, r.MinNS) }},
	{"median_ns", func(r Record) string { return okInt(r, r.MedianNS) }},
	{"mean_ns", func(r Record) string { return okFloat(r, r.MeanNS) }},
	{"stddev_ns", func(r Record) string { return okFloat(r, r.StddevNS) }},
	{"max_ns", func(r Record) string { return okInt(r, r.MaxNS) }},
	{"per_device_ns", func(r Record) string { return okFloat(r, r.PerDeviceNS) }},
	{"relative", func(r Record) string { return ptrFloat(r.Relative) }},
	{"relative_sd", func(r Record) string { return ptrFloat(r.RelativeSD) }},
	{"add_mean_ns", func(r Record) string { return okFloat(r, r.AddMeanNS) }},
	{"wall_mean_ns", func(r Record) string { return okFloat(r, r.WallMeanNS) }},
	{"add_wall_mean_ns", func(r Record) string { return okFloat(r, r.AddWallMeanNS) }},
	{"latency_min_ns", func(r Record) string { return lat(r, func(l latT) int64 { return l.MinNS }) }},
	{"latency_median_ns", func(r Record) string { return lat(r, func(l latT) int64 { return l.MedianNS }) }},
	{"latency_p99_ns", func(r Record) string { return lat(r, func(l latT) int64 { return l.P99NS }) }},
	{"latency_max_ns", func(r Record) string { return lat(r, func(l latT) int64 { return l.MaxNS }) }},
	{"grace_periods", func(r Record) string { return cnt(r, "grace_periods") }},
	{"expedited_gps", func(r Record) string { return cnt(r, "expedited_gps") }},
	{"rcu_barriers", func(r Record) string { return cnt(r, "rcu_barriers") }},
	{"sleeps", func(r Record) string { return cnt(r, "sleeps") }},
	{"wakeups", func(r Record) string { return cnt(r, "wakeups") }},
	{"context_switches", func(r Record) string { return cnt(r, "context_switches") }},
	{"cpu_busy_ns", func(r Record) string { return cnt(r, "cpu_busy_ns") }},
	{"netlink_requests", func(r Record) string { return cnt(r, "netlink_requests") }},
	// Namespace cells (empty for device cells).
	{"namespaces", func(r Record) string { return netnsInt(r, r.Namespaces) }},
	{"links", func(r Record) string { return netnsInt(r, r.Links) }},
	{"veth", func(r Record) string { return netnsBool(r, r.Veth) }},
	{"lo_up", func(r Record) string { return netnsBool(r, r.LoUp) }},
	{"netns_returned_ns", func(r Record) string { return cnt(r, "netns_returned_ns") }},
	{"netns_gone_ns", func(r Record) string { return cnt(r, "netns_gone_ns") }},
	{"cleanup_batches", func(r Record) string { return cnt(r, "cleanup_batches") }},
}

func netnsInt(r Record, v int) string {
	if !r.NetnsCell() {
		return ""
	}
	return strconv.Itoa(v)
}

func netnsBool(r Record, v bool) string {
	if !r.NetnsCell() {
		return ""
	}
	return strconv.FormatBool(v)
}

func okInt(r Record, v int64) string {
	if r.OK == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

func okFloat(r Record, v float64) string {
	if r.OK == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func ptrFloat(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

func cnt(r Record, k string) string {
	v, ok := r.Counters[k]
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func lat(r Record, f func(latT) int64) string {
	if r.Latency == nil {
		return ""
	}
	return strconv.FormatInt(f(*r.Latency), 10)
}

// WriteCSV prints one line per record, with a header.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	h := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		h[i] = c.name
	}
	// One column per phase any cell has, as its mean total time.
	var phases []string
	seen := map[string]bool{}
	for _, r := range rep.Results {
		for _, p := range r.Phases {
			if !seen[p.Name] {
				seen[p.Name] = true
				phases = append(phases, p.Name)
			}
		}
	}
	slices.Sort(phases)
	for _, name := range phases {
		h = append(h, "phase_"+name+"_ns")
	}
	if err := cw.Write(h); err != nil {
		return err
	}
	for _, r := range rep.Results {
		row := make([]string, len(csvColumns), len(csvColumns)+len(phases))
		for i, c := range csvColumns {
			row[i] = c.get(r)
		}
		for _, name := range phases {
			v := ""
			for _, p := range r.Phases {
				if p.Name == name {
					v = strconv.FormatFloat(p.CPUNS+p.WaitNS, 'f', 0, 64)
				}
			}
			row = append(row, v)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
