package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/ndst"
)

// Record is the one record type of the bench: one cell, reduced over its
// runs. Every output (table, JSON, CSV, Markdown, plot) is rendered from it.
//
// The time statistics are over the runs that completed (OK) and measure the
// teardown: "delete all N devices", on the cell's Clock ("virtual" for the
// emulated kernel, "wall" for the real one).
type Record struct {
	Cell
	Clock string `json:"clock"`
	// Batched reports whether the delete really ran as one batch (profile
	// 2.6.31 has no batched unregister, so "batched" runs one by one).
	Batched bool   `json:"batched"`
	Kind    string `json:"kind,omitempty"`

	Runs      int `json:"runs"`
	OK        int `json:"ok"`
	Livelocks int `json:"livelocks"`
	Errors    int `json:"errors"`

	MinNS       int64   `json:"min_ns"`
	MedianNS    int64   `json:"median_ns"`
	MeanNS      float64 `json:"mean_ns"`
	StddevNS    float64 `json:"stddev_ns"`
	MaxNS       int64   `json:"max_ns"`
	PerDeviceNS float64 `json:"per_device_ns"`
	// Relative is the mean over the fastest mean among the cells with the
	// same Backend and Count (1 for the fastest), with its propagated
	// spread; nil when no run of the cell completed. Cells of different
	// backends are never compared: their clocks differ.
	Relative   *float64 `json:"relative"`
	RelativeSD *float64 `json:"relative_sd"`

	// AddMeanNS is the mean time to create the N devices (same clock).
	AddMeanNS float64 `json:"add_mean_ns"`
	// WallMeanNS and AddWallMeanNS are the wall-clock means of the delete
	// and of the add; they differ from run to run (MaskWall zeroes them).
	WallMeanNS    float64 `json:"wall_mean_ns"`
	AddWallMeanNS float64 `json:"add_wall_mean_ns"`

	// Latency is the per-device teardown latency over the completed runs:
	// the smallest minimum, the median of the medians, the largest p99 and
	// the largest maximum.
	Latency *ndst.Latency `json:"latency,omitempty"`
	// Counters are the delete's counters, averaged over the completed runs
	// (over all runs when none completed).
	Counters map[string]float64 `json:"counters,omitempty"`

	// Phases is where the deleting task's time went, the mean over the
	// completed runs of each phase (ndst.Result.Phases), largest first.
	Phases []PhaseMean `json:"phases,omitempty"`
	// NotApplicable says why the cell was not run: the kernel line lacks
	// what it needs (a strategy's primitive, an RCU flavour).
	NotApplicable string `json:"not_applicable,omitempty"`
	// Outliers counts the real-kernel runs whose time is a statistical
	// outlier (hyperfine.go).
	Outliers int `json:"outliers,omitempty"`

	Warnings []string `json:"warnings,omitempty"`
	Samples  []Sample `json:"samples"`
}

// PhaseMean is one phase's mean time over a cell's completed runs.
type PhaseMean struct {
	Name   string  `json:"name"`
	CPUNS  float64 `json:"cpu_ns"`
	WaitNS float64 `json:"wait_ns"`
}

// Report is the outcome of a bench: the matrix and one Record per cell.
type Report struct {
	Matrix   Matrix   `json:"matrix"`
	Results  []Record `json:"results"`
	Warnings []string `json:"warnings,omitempty"`
	// Notes explain what the table shows, such as rows that are identical
	// and why (see sameStrategyNotes).
	Notes []string `json:"notes,omitempty"`
	// Summary says, per N of the real kernel, how many times faster its
	// fastest cell ran than the others (hyperfine.go).
	Summary []string `json:"summary,omitempty"`
	// WallNS is how long the whole bench took.
	WallNS int64 `json:"wall_ns"`
	// ShowPhases makes the table print each cell's phases too.
	ShowPhases bool `json:"-"`
}

// Matrix echoes the lists the bench ran over.
type Matrix struct {
	Backends   []string `json:"backends"`
	Profiles   []string `json:"profiles"`
	Strategies []string `json:"strategies"`
	HZ         []int    `json:"hz"`
	CPUs       []int    `json:"cpus"`
	Preempts   []string `json:"preempts"`
	Batches    []string `json:"batches"`
	Counts     []int    `json:"counts"`
	Runs       int      `json:"runs"`
	Seed       uint64   `json:"seed"`
	Cells      int      `json:"cells"`
	CostsFrom  string   `json:"costs,omitempty"`
}

// MaskWall zeroes every wall-clock field, leaving what is deterministic.
func (r *Report) MaskWall() {
	r.WallNS = 0
	for i := range r.Results {
		rec := &r.Results[i]
		rec.WallMeanNS, rec.AddWallMeanNS = 0, 0
		for j := range rec.Samples {
			rec.Samples[j].AddWallNS, rec.Samples[j].DelWallNS = 0, 0
		}
	}
}

// Variance above which a warning suggests more runs.
const highCV = 0.10

func newReport(s *Spec, cells []Cell, samples [][]Sample) *Report {
	rep := &Report{Matrix: Matrix{
		Backends: s.Backends, Profiles: s.Profiles, Strategies: s.Strategies, HZ: s.HZ,
		CPUs: s.CPUs, Preempts: s.Preempts, Batches: s.Batches, Counts: s.Counts,
		Runs: s.Runs, Seed: s.Seed, Cells: len(cells),
	}}
	if s.Costs != nil {
		rep.Matrix.CostsFrom = s.Costs.Source
	}
	rep.Results = make([]Record, len(cells))
	for i, c := range cells {
		rep.Results[i] = reduce(c, samples[i])
		if why := s.notApplicable(c); why != "" {
			rep.Results[i].NotApplicable = why
		}
	}
	relate(rep.Results)
	for i := range rep.Results {
		r := &rep.Results[i]
		r.Warnings = warnings(r, samples[i], s.Runs)
		if w := outlierWarning(r, samples[i]); w != "" {
			r.Warnings = append(r.Warnings, w)
		}
		rep.Warnings = append(rep.Warnings, r.Warnings...)
	}
	rep.Summary = summaries(rep.Results)
	rep.Notes = sameStrategyNotes(rep.Results)
	if s.Warmup > 0 && slices.Contains(s.Backends, "netlink") {
		rep.Notes = append(rep.Notes, fmt.Sprintf("each real-kernel cell ran %d warm-up run(s) first, not measured (--warmup)", s.Warmup))
	}
	seenNA := map[string]bool{}
	for _, r := range rep.Results {
		if r.NotApplicable != "" && !seenNA[r.NotApplicable] {
			seenNA[r.NotApplicable] = true
			rep.Notes = append(rep.Notes, "n/a: "+r.NotApplicable)
		}
	}
	if slices.Contains(s.Backends, "netlink") && slices.Contains(s.Backends, "sim") {
		rep.Warnings = append(rep.Warnings, "sim rows are the emulated kernel's virtual time and netlink rows this host's wall time, "+
			"so each row is relative to the fastest of its own backend; to compare the two, 'ndst predict' runs the emulated "+
			"6.18 profile with this host's calibration against the real kernel")
	}
	return rep
}

// reduce turns the runs of one cell into its Record.
func reduce(c Cell, smp []Sample) Record {
	r := Record{Cell: c, Clock: "virtual", Runs: len(smp), Samples: smp}
	if c.Backend == "netlink" {
		r.Clock = "wall"
	}
	var ok []Sample
	for _, x := range smp {
		switch x.Result {
		case ndst.ResultOK:
			ok = append(ok, x)
		case ndst.ResultLivelock:
			r.Livelocks++
		default:
			r.Errors++
		}
	}
	r.OK = len(ok)
	if len(smp) > 0 {
		r.Batched = smp[0].batched
		if h := smp[0].host; c.Backend == "netlink" {
			r.HZ, r.CPUs, r.Kind = h.hz, h.cpus, h.kind
			if h.preempt != "" {
				r.Preempt = h.preempt
			}
		}
	}
	over := ok
	if len(over) == 0 {
		over = smp
	}
	r.Counters = meanCounters(over)
	if len(ok) == 0 {
		return r
	}
	del := make([]int64, len(ok))
	var add, wall, addWall []float64
	var lmin, lmed, lp99, lmax []int64
	for i, x := range ok {
		del[i] = x.DelNS
		add = append(add, float64(x.AddNS))
		wall = append(wall, float64(x.DelWallNS))
		addWall = append(addWall, float64(x.AddWallNS))
		if l := x.Latency; l != nil {
			lmin, lmed, lp99, lmax = append(lmin, l.MinNS), append(lmed, l.MedianNS), append(lp99, l.P99NS), append(lmax, l.MaxNS)
		}
	}
	st := Summarize(del)
	r.MinNS, r.MedianNS, r.MeanNS, r.StddevNS, r.MaxNS = st.Min, st.Median, st.Mean, st.Stddev, st.Max
	r.Phases = meanPhases(ok)
	r.PerDeviceNS = r.MeanNS / float64(c.Count)
	r.AddMeanNS, r.WallMeanNS, r.AddWallMeanNS = mean(add), mean(wall), mean(addWall)
	if len(lmin) > 0 {
		r.Latency = &ndst.Latency{MinNS: slices.Min(lmin), MedianNS: Summarize(lmed).Median,
			P99NS: slices.Max(lp99), MaxNS: slices.Max(lmax)}
	}
	return r
}

// meanPhases averages the runs' phases, largest total first.
func meanPhases(ok []Sample) []PhaseMean {
	var out []PhaseMean
	at := map[string]int{}
	for _, x := range ok {
		for _, p := range x.Phases {
			i, seen := at[p.Name]
			if !seen {
				i = len(out)
				at[p.Name] = i
				out = append(out, PhaseMean{Name: p.Name})
			}
			out[i].CPUNS += float64(p.CPUNS) / float64(len(ok))
			out[i].WaitNS += float64(p.WaitNS) / float64(len(ok))
		}
	}
	slices.SortStableFunc(out, func(a, b PhaseMean) int { return cmpFloat(b.CPUNS+b.WaitNS, a.CPUNS+a.WaitNS) })
	return out
}

// Stats summarises a set of times.
type Stats struct {
	Min, Median, Max int64
	Mean, Stddev     float64
}

// Summarize returns the statistics of xs: the median is the middle value
// (the mean of the two middle values, rounded down, for an even count); the
// standard deviation is the sample one (n-1), 0 for a single value.
func Summarize(xs []int64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = s[n/2-1] + (s[n/2]-s[n/2-1])/2
	}
	var sum float64
	for _, x := range s {
		sum += float64(x)
	}
	m := sum / float64(n)
	var sd float64
	if n > 1 {
		var ss float64
		for _, x := range s {
			d := float64(x) - m
			ss += d * d
		}
		sd = math.Sqrt(ss / float64(n-1))
	}
	return Stats{Min: s[0], Median: med, Max: s[n-1], Mean: m, Stddev: sd}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func meanCounters(smp []Sample) map[string]float64 {
	if len(smp) == 0 {
		return nil
	}
	sum := map[string]float64{}
	for _, x := range smp {
		for k, v := range x.Counters {
			sum[k] += float64(v)
		}
	}
	if len(sum) == 0 {
		return nil
	}
	for k := range sum {
		sum[k] /= float64(len(smp))
	}
	return sum
}

// relateKey groups the cells that Relative compares: the same backend (one
// clock: virtual time is never divided by wall time) and the same N.
type relateKey struct {
	backend string
	count   int
}

// relate fills Relative: each cell against the fastest mean among the cells
// of the same backend and N, with the spread propagated as hyperfine does.
func relate(rs []Record) {
	fastest := map[relateKey]int{}
	for i, r := range rs {
		if r.OK == 0 {
			continue
		}
		k := relateKey{r.Backend, r.Count}
		if j, ok := fastest[k]; !ok || r.MeanNS < rs[j].MeanNS {
			fastest[k] = i
		}
	}
	for i := range rs {
		r := &rs[i]
		j, ok := fastest[relateKey{r.Backend, r.Count}]
		if r.OK == 0 || !ok {
			continue
		}
		f := rs[j]
		var rel, sd float64
		if f.MeanNS > 0 {
			rel = r.MeanNS / f.MeanNS
		} else if r.MeanNS == 0 {
			rel = 1
		} else {
			rel = math.Inf(1)
		}
		if i != j && r.MeanNS > 0 && f.MeanNS > 0 {
			sd = rel * math.Hypot(r.StddevNS/r.MeanNS, f.StddevNS/f.MeanNS)
		}
		r.Relative, r.RelativeSD = &rel, &sd
	}
}

// warnings says what went wrong in a cell and what to do about it.
func warnings(r *Record, smp []Sample, runs int) []string {
	var w []string
	if r.Livelocks > 0 {
		var first Sample
		for _, x := range smp {
			if x.Result == ndst.ResultLivelock {
				first = x
				break
			}
		}
		w = append(w, fmt.Sprintf("%s: livelock in %d of %d runs (the first during %s): %s fired (%s); %s",
			r.Cell, r.Livelocks, r.Runs, opName(first.StoppedIn), watchdogOf(first.Error), first.Error, remedyOf(r.Cell, first)))
	}
	if r.Errors > 0 {
		var first Sample
		for _, x := range smp {
			if x.Result == ndst.ResultError {
				first = x
				break
			}
		}
		w = append(w, fmt.Sprintf("%s: %d of %d runs failed (the first during %s): %s", r.Cell, r.Errors, r.Runs, opName(first.StoppedIn), first.Error))
	}
	if r.OK >= 2 && r.MeanNS > 0 {
		if cv := r.StddevNS / r.MeanNS; cv > highCV {
			why := "each run's seed gives the emulated kernel another tick phase and cost jitter"
			if r.Backend == "netlink" {
				why = "the real kernel's runs vary with this host's load and where in the tick each wait starts"
			}
			w = append(w, fmt.Sprintf("%s: high variance (sd is %.0f%% of the mean over %d runs: %s); "+
				"use more --runs (now %d) and read the median", r.Cell, 100*cv, r.OK, why, runs))
		}
	}
	return w
}

// watchdogOf names the watchdog that stopped a run, from its message.
func watchdogOf(msg string) string {
	switch {
	case strings.Contains(msg, "soft lockup"):
		return "the soft-lockup watchdog (a CPU in the kernel whose watchdog thread had not run for more than --watchdog, counted in units of 2^30 ns)"
	case strings.Contains(msg, "stall"):
		return "the RCU stall detector"
	case strings.Contains(msg, "still referenced"):
		return "the reference-leak check (a device waited more than 300s virtual for its references)"
	}
	return "the emulated kernel's watchdog"
}

func opName(op string) string {
	switch op {
	case "add":
		return "add N"
	case "del":
		return "the delete"
	}
	return "setup"
}

// remedyOf is the advice for a livelocked run: the emulated kernel's own,
// unless the lockup came before the wait loop ever ran (no synchronize_net,
// no wait check): then it was the unregister work of one big batch, done in
// kernel mode without a context switch, and no wait strategy can help.
func remedyOf(c Cell, x Sample) string {
	if strings.Contains(x.Error, "soft lockup") && x.batched && x.Counters != nil &&
		x.Counters["synchronize_net"] == 0 && x.Counters["wait_checks"] == 0 && x.Counters["devices_freed"] == 0 {
		return fmt.Sprintf("the lockup is in the batched unregister itself: %d devices' unregister work runs "+
			"in kernel mode without a context switch, whatever the strategy; delete in smaller batches "+
			"(a smaller --count), use --batch one-by-one, load a cheaper host calibration with --costs, or raise --watchdog", c.Count)
	}
	if strings.Contains(x.Error, "soft lockup") && x.StoppedIn == "add" {
		return fmt.Sprintf("the lockup is in creating the %d devices, before any teardown, whatever the strategy; "+
			"use a smaller --count, a cheaper host calibration (--costs), or raise --watchdog", c.Count)
	}
	for i := len(x.notes) - 1; i >= 0; i-- {
		if n := x.notes[i]; strings.Contains(n, "try ") || strings.Contains(n, "run with") {
			return n
		}
	}
	return "try a strategy that sleeps (--strategy tick or barrier), --preempt full, or more --cpus"
}

// sameStrategyNotes says, per profile, when the strategies give the same
// time (within sameWithin) in every configuration (same HZ, CPUs,
// preemption, batch mode and N), and why, from the runs' own counters: when
// the wait loop never slept and checked each device at most once, every
// device was already free when first checked, so the loop (which is all a
// strategy changes) never waited.
func sameStrategyNotes(rs []Record) []string {
	groups := map[Cell][]Record{}
	var order []Cell
	for _, r := range rs {
		if r.Backend != "sim" || r.NotApplicable != "" {
			continue // a cell the line cannot run has no time to compare
		}
		k := r.Cell
		k.Strategy = ""
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	type verdict struct{ groups, same, neverWaited int }
	byProfile := map[string]*verdict{}
	var profiles []string
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		v := byProfile[k.Profile]
		if v == nil {
			v = &verdict{}
			byProfile[k.Profile] = v
			profiles = append(profiles, k.Profile)
		}
		v.groups++
		if !sameTimes(g) {
			continue
		}
		v.same++
		never := true
		for _, r := range g {
			c := r.Counters
			never = never && c["sleeps"] == 0 && c["wait_checks"] <= float64(r.Count)
		}
		if never {
			v.neverWaited++
		}
	}
	var notes []string
	for _, p := range profiles {
		v := byProfile[p]
		if v.same != v.groups {
			continue
		}
		n := fmt.Sprintf("on profile %s every strategy takes the same time (within %.1f%%) in each configuration", p, 100*sameWithin)
		if v.neverWaited == v.groups {
			n += ": the wait loop never slept and checked each device at most once, so every device was " +
				"already free when first checked, and how the loop waits (all a strategy changes) never mattered"
		}
		notes = append(notes, n)
	}
	return notes
}

// sameWithin is how close (relative) two cells' mean times must be to count
// as the same in a note.
const sameWithin = 2e-3

// sameTimes reports whether the records all completed the same runs with
// mean times within sameWithin of each other.
func sameTimes(g []Record) bool {
	a := g[0]
	for _, b := range g[1:] {
		if a.OK != b.OK || a.Livelocks != b.Livelocks || a.Errors != b.Errors {
			return false
		}
		if a.OK > 0 && math.Abs(a.MeanNS-b.MeanNS) > sameWithin*math.Max(a.MeanNS, b.MeanNS) {
			return false
		}
	}
	return true
}
