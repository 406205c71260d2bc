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
	duration  bool // nanoseconds, printed in the column's unit
}{
	{"GPs", "grace_periods", formatCount, false},
	{"sleeps", "sleeps", formatCount, false},
	{"wakeups", "wakeups", formatCount, false},
	{"CPU busy", "cpu_busy_ns", FormatDuration, true},
	{"requests", "netlink_requests", formatCount, false},
	{"returned", "netns_returned_ns", FormatDuration, true},
	{"devices gone", "netns_gone_ns", FormatDuration, true},
	{"cleanup runs", "cleanup_batches", formatCount, false},
}

// rows renders the records as a header and text rows, for the terminal
// table and Markdown alike. Each time column has one unit, named in its
// header. Emulated rows that differ only in their strategy and agree in
// every column are one row, naming its strategies (groupedRows says why).
func rows(rs []Record) (header []string, body [][]string, merged bool) {
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
	var counters []int
	for i, c := range counterColumns {
		for _, r := range rs {
			if _, ok := r.Counters[c.key]; ok {
				counters = append(counters, i)
				break
			}
		}
	}
	// One unit per time column, from the values it holds.
	col := func(get func(Record) []float64) unit {
		var vs []float64
		for _, r := range rs {
			if r.OK > 0 {
				vs = append(vs, get(r)...)
			}
		}
		return columnUnit(vs)
	}
	uMin := col(func(r Record) []float64 { return []float64{float64(r.MinNS)} })
	uMed := col(func(r Record) []float64 { return []float64{float64(r.MedianNS)} })
	uMean := col(func(r Record) []float64 { return []float64{r.MeanNS} })
	uMax := col(func(r Record) []float64 { return []float64{float64(r.MaxNS)} })
	uPer := col(func(r Record) []float64 { return []float64{r.PerDeviceNS} })
	header = append(header, uMin.head("min"), uMed.head("median"), uMean.head("mean ± sd"), uMax.head("max"), uPer.head(per))
	if showRel {
		header = append(header, "relative")
	}
	cu := map[int]unit{}
	for _, i := range counters {
		c := counterColumns[i]
		if c.duration {
			var vs []float64
			for _, r := range rs {
				if v, ok := r.Counters[c.key]; ok {
					vs = append(vs, v)
				}
			}
			cu[i] = columnUnit(vs)
			header = append(header, cu[i].head(c.name))
		} else {
			header = append(header, c.name)
		}
	}
	header = append(header, "result")
	strategyCol := slices.IndexFunc(idx, func(i int) bool { return dims[i].name == "strategy" })
	groupOf := map[string]int{} // the row a group's first record made
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
			ms := uMean.format(r.MeanNS)
			if r.OK > 1 {
				ms += " ± " + uMean.format(r.StddevNS)
			}
			row = append(row, uMin.format(float64(r.MinNS)), uMed.format(float64(r.MedianNS)), ms,
				uMax.format(float64(r.MaxNS)), uPer.format(r.PerDeviceNS))
			if showRel {
				row = append(row, relText(r))
			}
		}
		for _, i := range counters {
			c := counterColumns[i]
			v, ok := r.Counters[c.key]
			switch {
			case !ok:
				row = append(row, "-")
			case c.duration:
				row = append(row, cu[i].format(v))
			default:
				row = append(row, c.format(v))
			}
		}
		row = append(row, resultText(r))
		if strategyCol >= 0 && r.Backend == "sim" {
			// The key: every column but the strategy and the relative one
			// (which only the baseline row prints without a spread).
			drop := map[int]bool{strategyCol: true}
			if showRel {
				drop[len(idx)+5] = true
			}
			var kept []string
			for i, v := range row {
				if !drop[i] {
					kept = append(kept, v)
				}
			}
			key := strings.Join(kept, "\x00")
			if g, ok := groupOf[key]; ok {
				body[g][strategyCol] += ", " + r.Strategy
				merged = true
				continue
			}
			groupOf[key] = len(body)
		}
		body = append(body, row)
	}
	return header, body, merged
}

// unit is how a time column prints: its unit and the digits after the point.
type unit struct {
	name     string
	div      float64
	decimals int
}

// columnUnit picks one unit for a column of nanosecond values: the unit
// FormatDuration would give its smallest non-zero value, or a larger one
// when the largest would need more than seven digits before the point;
// three decimals (none for ns).
func columnUnit(vs []float64) unit {
	units := []unit{{"ns", 1, 0}, {"µs", 1e3, 3}, {"ms", 1e6, 3}, {"s", 1e9, 3}}
	maxV, minV := 0.0, math.Inf(1)
	for _, v := range vs {
		a := math.Abs(v)
		maxV = math.Max(maxV, a)
		if a > 0 {
			minV = math.Min(minV, a)
		}
	}
	if math.IsInf(minV, 1) {
		return units[2]
	}
	i := 0
	for i+1 < len(units) && minV >= units[i+1].div {
		i++
	}
	for i+1 < len(units) && maxV/units[i].div >= 1e7 {
		i++
	}
	return units[i]
}

func (u unit) head(name string) string { return name + " (" + u.name + ")" }

func (u unit) format(ns float64) string {
	return strconv.FormatFloat(ns/u.div, 'f', u.decimals, 64)
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
		what = "time until the kernel's cleanup of N namespaces just added is done (batched: deleted at once; one-by-one: each waited for; cni: each pod's veth deleted first)"
	}
	if len(rep.Results) > 0 && rep.Results[0].Workload != "" {
		what = workloadFigure(rep.Results[0].Cell)
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
	var devs, nss []string
	for _, p := range sortedKeys(unbatched) {
		if netnsUnbatched[p] {
			nss = append(nss, p)
		} else {
			devs = append(devs, p)
		}
	}
	if len(nss) > 0 {
		lines = append(lines, fmt.Sprintf("note: %s no batched namespace cleanup (each namespace is a cleanup run of its own, its devices unregistered one by one), so %s batched cells only drop the references at once", profilesHave(nss), their(nss)))
	}
	if len(devs) > 0 {
		lines = append(lines, fmt.Sprintf("note: %s no batched unregister, so %s batched cells delete one by one", profilesHave(devs), their(devs)))
	}
	return lines
}

// profilesHave is "profile X has" or "profiles X, Y have".
func profilesHave(ps []string) string {
	if len(ps) == 1 {
		return "profile " + ps[0] + " has"
	}
	return "profiles " + strings.Join(ps, ", ") + " have"
}

func their(ps []string) string {
	if len(ps) == 1 {
		return "its"
	}
	return "their"
}

// mergedNote says what a row naming several strategies is.
const mergedNote = "a row naming several strategies stands for cells that agree in every column"

// tableNotes are the notes printed before the table: what its rows are.
func (rep *Report) tableNotes(merged bool) []string {
	var out []string
	if merged {
		out = append(out, mergedNote)
	}
	return append(out, rep.Notes...)
}

// groupWarnings merges warnings that say the same of several cells
// ("CELL: MESSAGE"), so each message is read once with the cells it is about.
func groupWarnings(ws []string) []string {
	var order []string
	cells := map[string][]string{}
	for _, w := range ws {
		cell, msg, ok := strings.Cut(w, ": ")
		if !ok || strings.Contains(cell, ". ") {
			cell, msg = "", w
		}
		if _, seen := cells[msg]; !seen {
			order = append(order, msg)
		}
		if cell != "" || len(cells[msg]) == 0 {
			cells[msg] = append(cells[msg], cell)
		}
	}
	var out []string
	for _, msg := range order {
		cs := slices.DeleteFunc(slices.Compact(cells[msg]), func(c string) bool { return c == "" })
		if len(cs) == 0 {
			out = append(out, msg)
			continue
		}
		out = append(out, joinCells(cs)+": "+msg)
	}
	return out
}

// joinCells names several cells at once: when they differ in one part only
// ("..., N=10" and "..., N=100"), as that part's values ("..., N=10 and
// N=100"); otherwise each in full.
func joinCells(cs []string) string {
	if len(cs) == 1 {
		return cs[0]
	}
	parts := make([][]string, len(cs))
	for i, c := range cs {
		parts[i] = strings.Split(c, ", ")
	}
	diff := -1
	for _, p := range parts {
		if len(p) != len(parts[0]) {
			return strings.Join(cs, "; ")
		}
		for k := range p {
			if p[k] != parts[0][k] {
				if diff >= 0 && diff != k {
					return strings.Join(cs, "; ")
				}
				diff = k
			}
		}
	}
	if diff < 0 {
		return cs[0]
	}
	var vals []string
	for _, p := range parts {
		vals = append(vals, p[diff])
	}
	base := slices.Clone(parts[0])
	base[diff] = strings.Join(vals[:len(vals)-1], ", ") + " and " + vals[len(vals)-1]
	return strings.Join(base, ", ")
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
	h, body, merged := rows(rep.Results)
	for _, l := range rep.summaryLines() {
		b.WriteString(l + "\n")
	}
	for _, n := range rep.tableNotes(merged) {
		b.WriteString("note: " + n + "\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
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
	for _, s := range rep.Summary {
		b.WriteString("summary: " + s + "\n")
	}
	for _, wn := range groupWarnings(rep.Warnings) {
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
	h, body, merged := rows(rep.Results)
	for _, l := range rep.summaryLines() {
		b.WriteString(l + "  \n")
	}
	for _, n := range rep.tableNotes(merged) {
		b.WriteString("note: " + n + "  \n")
	}
	b.WriteString("\n")
	b.WriteString("| " + strings.Join(h, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(h)) + "\n")
	for _, row := range body {
		for i := range row {
			row[i] = strings.ReplaceAll(row[i], "|", `\|`)
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("\n")
		for _, wn := range groupWarnings(rep.Warnings) {
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
