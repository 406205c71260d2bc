package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// ReportOptions choose what the report prints.
type ReportOptions struct {
	Timelines int  // full timelines of this many deletes of the most common end jiffy, plus the first of every other one
	PerDelete bool // one line per delete
	Name      string
}

// Report prints the analysis.
func (a *Analysis) Report(w io.Writer, ro ReportOptions) {
	g := a.Grid
	fmt.Fprintf(w, "teardowntrace: %s (%s, %d events, CPUs %s)\n", ro.Name, a.Trace.Format, len(a.Trace.Events), cpuList(a.CPUs))
	if len(a.Trace.Lost) > 0 {
		fmt.Fprintf(w, "WARNING: the trace reports lost events (%d lines), e.g. %q\n", len(a.Trace.Lost), a.Trace.Lost[0])
	}
	if a.Trace.Skipped > 0 {
		fmt.Fprintf(w, "note: %d lines were not trace events and were skipped\n", a.Trace.Skipped)
	}
	var per []string
	for _, c := range a.CPUs {
		per = append(per, fmt.Sprintf("cpu%d %d", c, a.CPUCount[c]))
	}
	fmt.Fprintf(w, "events per CPU: %s\n", strings.Join(per, ", "))
	fmt.Fprintf(w, "tick grid: HZ=%d (tick %.3f ms) from %d tick events", g.HZ, ms(g.Period), g.Ticks)
	if g.HaveJiff {
		fmt.Fprintf(w, "; jiffies = tick index %+d (%d of %d timer events agree)\n", g.JiffiesOff, g.JiffVotes, g.JiffTotal)
	} else {
		fmt.Fprintf(w, "; no timer events: jiffies values not placed\n")
	}
	reportTicks(w, a.Trace.Events, g)
	fmt.Fprintf(w, "J+n = n-th tick boundary after the delete's sendmsg entry; t = time since that entry; @x = ms after the tick\n")
	fmt.Fprintf(w, "workload: %s/%d (%s); deletes on %s\n", a.Work.Comm, a.Work.TID, a.Work.Source, a.FDNote)
	if a.GPPID > 0 {
		fmt.Fprintf(w, "GP kthread: %s/%d\n", a.GPComm, a.GPPID)
	} else {
		fmt.Fprintf(w, "GP kthread: %s not seen in the trace\n", a.GPComm)
	}
	a.reportCompleteness(w)
	a.reportHistogram(w)
	if ro.PerDelete {
		a.reportPerDelete(w)
	}
	for _, grp := range a.groups() {
		a.reportSummary(w, grp.endJ, grp.dels)
	}
	a.reportStacks(w)
	// Timelines: the first deletes of the most common end jiffy, then the
	// first delete of every other end jiffy.
	var pick []*Delete
	if ro.Timelines > 0 {
		for k, grp := range a.groups() {
			n := 1
			if k == 0 {
				n = ro.Timelines
			}
			for _, d := range grp.dels {
				if n == 0 {
					break
				}
				pick = append(pick, d)
				n--
			}
		}
	}
	for _, d := range pick {
		a.reportTimeline(w, d)
	}
}

// reportCompleteness says where the trace visibly lacks events.
func (a *Analysis) reportCompleteness(w io.Writer) {
	g := a.Grid
	tickless, hit := 0, 0
	for _, d := range a.Deletes {
		if n := d.TicklessJiffies(g); n > 0 {
			tickless += n
			hit++
		}
	}
	if tickless > 0 {
		fmt.Fprintf(w, "WARNING: %d deletes have jiffies without any recorded tick (%d jiffies in all): with a callback waiting some CPU keeps its tick, so the recorder lost events there\n", hit, tickless)
	}
	for _, c := range a.CPUs {
		in, out := a.IdleSwitches[c][0], a.IdleSwitches[c][1]
		if in > 0 && out == 0 {
			fmt.Fprintf(w, "note: cpu%d: %d switches into its idle task recorded, none out of it; runs that follow are taken from the task's own first event\n", c, in)
		}
	}
	unseen := 0
	for _, d := range a.Deletes {
		unseen += d.UnseenSwitchIns
	}
	if unseen > 0 {
		fmt.Fprintf(w, "note: %d runs of the deleting task or the GP kthread during the deletes had no recorded switch-in\n", unseen)
	}
}

func (a *Analysis) reportHistogram(w io.Writer) {
	g := a.Grid
	hist := map[int64]int{}
	byQuiet := map[string]map[int64]int{}
	var durs []float64
	for _, d := range a.Deletes {
		e := d.EndJ(g)
		hist[e]++
		q := "no CPU quiet"
		if qs := d.QuietCPUs(a.CPUs); len(qs) > 0 {
			q = cpuList(qs) + " quiet"
		}
		if byQuiet[q] == nil {
			byQuiet[q] = map[int64]int{}
		}
		byQuiet[q][e]++
		durs = append(durs, ms(d.Duration()))
	}
	sort.Float64s(durs)
	fmt.Fprintf(w, "deletes: %d; sendmsg duration ms: median %.2f, min %.2f, max %.2f\n",
		len(a.Deletes), durs[len(durs)/2], durs[0], durs[len(durs)-1])
	fmt.Fprintf(w, "end-jiffy histogram: %s\n", histString(hist))
	var qs []string
	for q := range byQuiet {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	for _, q := range qs {
		fmt.Fprintf(w, "  %-14s (no tick during the delete): %s\n", q, histString(byQuiet[q]))
	}
}

func histString(h map[int64]int) string {
	var ks []int64
	for k := range h {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("J+%d: %d", k, h[k]))
	}
	return strings.Join(parts, ", ")
}

type group struct {
	endJ int64
	dels []*Delete
}

// groups splits the deletes by end jiffy, the most common first.
func (a *Analysis) groups() []group {
	m := map[int64][]*Delete{}
	for _, d := range a.Deletes {
		m[d.EndJ(a.Grid)] = append(m[d.EndJ(a.Grid)], d)
	}
	var gs []group
	for j, ds := range m {
		gs = append(gs, group{j, ds})
	}
	sort.Slice(gs, func(i, k int) bool {
		if len(gs[i].dels) != len(gs[k].dels) {
			return len(gs[i].dels) > len(gs[k].dels)
		}
		return gs[i].endJ < gs[k].endJ
	})
	return gs
}

func (a *Analysis) reportPerDelete(w io.Writer) {
	g := a.Grid
	fmt.Fprintf(w, "\n== per delete (GP runs: J+n:waker; FQS armed: J+n:timeout>expires/bucket_expiry; events/ticks per CPU)\n")
	fmt.Fprintf(w, "%3s %-9s %7s %4s %7s %-28s %-30s %-28s %-14s %-24s %s\n",
		"#", "start", "dur ms", "end", "blk/pre", "blocked in (stack samples)", "GP kthread runs", "FQS armed", "FQS fired", "ip woken", "per CPU ev/ticks")
	for _, d := range a.Deletes {
		fired := strings.Join(d.FQSFired, ",")
		if len(d.FQSCancel) > 0 {
			if fired != "" {
				fired += ","
			}
			fired += "cancel " + strings.Join(d.FQSCancel, ",")
		}
		woken := "-"
		if d.HaveWoken {
			woken = fmt.Sprintf("J+%d %s", d.WokenJ, shortCtx(d.WokenBy))
			if d.HaveRan && d.RanJ != d.WokenJ {
				woken += fmt.Sprintf(", runs J+%d", d.RanJ)
			}
		}
		var per []string
		for _, c := range a.CPUs {
			per = append(per, fmt.Sprintf("%d/%d", d.CPUEvents[c], d.CPUTicks[c]))
		}
		blocked := d.BlockedIn
		if blocked == "" {
			blocked = "-"
		} else {
			blocked = strings.SplitN(blocked, " < ", 2)[0]
		}
		fmt.Fprintf(w, "%3d J+0@%.2f %7.2f J+%-2d %7s %-28s %-30s %-28s %-14s %-24s %s\n",
			d.N, ms(g.Offset(d.Call.Start)), ms(d.Duration()), d.EndJ(g), fmt.Sprintf("%d/%d", d.Blocks, d.Preempts), clip(blocked, 28),
			dash(strings.Join(d.GPRuns, " ")), dash(strings.Join(d.FQSArmed, " ")), dash(fired), woken, strings.Join(per, " "))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
}

// row is one step of the summary table.
type row struct {
	label   string
	ts      []float64 // ms since the delete start
	phases  []float64 // ms after the tick
	js      map[int64]int
	cpus    map[int]bool
	details map[string]int
}

func (a *Analysis) reportSummary(w io.Writer, endJ int64, dels []*Delete) {
	g := a.Grid
	rows := map[string]*row{}
	for _, d := range dels {
		seen := map[string]bool{}
		for _, it := range d.Timeline {
			if !it.key || seen[it.Label] {
				continue
			}
			seen[it.Label] = true
			r := rows[it.Label]
			if r == nil {
				r = &row{label: it.Label, js: map[int64]int{}, cpus: map[int]bool{}, details: map[string]int{}}
				rows[it.Label] = r
			}
			r.ts = append(r.ts, ms(it.T-d.Call.Start))
			r.phases = append(r.phases, ms(g.Offset(it.T)))
			r.js[g.Index(it.T)-d.J0]++
			r.cpus[it.CPU] = true
			r.details[it.Detail]++
		}
	}
	var rs []*row
	for _, r := range rows {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		mi, mj := mean(rs[i].ts), mean(rs[j].ts)
		if mi != mj {
			return mi < mj
		}
		return rs[i].label < rs[j].label
	})
	fmt.Fprintf(w, "\n== summary over the %d of %d deletes ending at J+%d (t: mean ms after the sendmsg entry, sd; first occurrence per delete)\n", len(dels), len(a.Deletes), endJ)
	fmt.Fprintf(w, "%-34s %4s %18s %-14s %5s %-9s %s\n", "step", "n", "t ms (sd)", "J", "@ms", "cpus", "what (most common: count)")
	for _, r := range rs {
		var cs []int
		for c := range r.cpus {
			cs = append(cs, c)
		}
		sort.Ints(cs)
		det := mode(r.details)
		dstr := fmt.Sprintf("%s: %d", det, r.details[det])
		if det == "" {
			dstr = ""
		}
		if len(r.details) > 1 {
			dstr += fmt.Sprintf(" (+%d other)", len(r.ts)-r.details[det])
		}
		fmt.Fprintf(w, "%-34s %4d %+9.3f (%6.3f) %-14s %5.2f %-9s %s\n", r.label, len(r.ts), mean(r.ts), sd(r.ts), jString(r.js), mean(r.phases), cpuList(cs), dstr)
	}
}

// jString is "J+4" when all agree, else "J+3..5" with the mode first.
func jString(m map[int64]int) string {
	var ks []int64
	best, n := int64(0), -1
	for k, v := range m {
		ks = append(ks, k)
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	if len(ks) == 1 {
		return fmt.Sprintf("J+%d", best)
	}
	return fmt.Sprintf("J+%d (J+%d..%d)", best, ks[0], ks[len(ks)-1])
}

func (a *Analysis) reportStacks(w io.Writer) {
	if a.NStacks == 0 {
		return
	}
	fmt.Fprintf(w, "\n== /proc/TID/stack samples of the deleting task in state D during the deletes (%d samples)\n", a.NStacks)
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range a.Stacks {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	for _, e := range l {
		fmt.Fprintf(w, "%6.1f%% %5d  %s\n", 100*float64(e.v)/float64(a.NStacks), e.v, e.k)
	}
}

func (a *Analysis) reportTimeline(w io.Writer, d *Delete) {
	g := a.Grid
	fmt.Fprintf(w, "\n== timeline of delete %d: sendmsg at J+0@%.2f, %.2f ms, returns at J+%d\n", d.N, ms(g.Offset(d.Call.Start)), ms(d.Duration()), d.EndJ(g))
	lastSample := ""
	for _, it := range d.Timeline {
		if it.Label == "stack sample" {
			if it.Detail == lastSample {
				continue // print a stack only when it changes
			}
			lastSample = it.Detail
		}
		det := it.Detail
		if it.Note != "" {
			det = strings.TrimSpace(det + " [" + it.Note + "]")
		}
		fmt.Fprintf(w, "  %+8.3f ms cpu%d J+%d@%.2f  %-34s %s\n", ms(it.T-d.Call.Start), it.CPU, g.Index(it.T)-d.J0, ms(g.Offset(it.T)), it.Label, det)
	}
}

func cpuList(cs []int) string {
	var p []string
	for _, c := range cs {
		p = append(p, fmt.Sprintf("cpu%d", c))
	}
	if len(p) == 0 {
		return "-"
	}
	return strings.Join(p, ",")
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func sd(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	m := mean(x)
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)-1))
}
