package calibrate

import (
	"context"
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/stallprobe"
)

// Stalls: how often, and how long, a CPU of the calibrated machine runs
// nothing at all (package stallprobe). A virtual CPU under software
// emulation does, when its host does not run its thread; the emulated
// kernel then delivers the ticks and wake-ups due in a stall when it ends
// (sim.Stalls), as the guest's kernel does. Bare metal does not: its gaps
// are interrupt handlers, below the probe's threshold.

// stallGroups is how many equal-count groups of stall lengths the table
// keeps the means of (costs.Stalls.LengthsNS).
const stallGroups = 20

// measureStalls runs the stall probe on every CPU at once, then (on more
// than one CPU) on each alone, and summarises both for the table's host
// section.
func (r *Report) measureStalls(ctx context.Context) error {
	p, err := stallprobe.Run(ctx, stallprobe.Options{})
	if err != nil {
		return err
	}
	s := &costs.Stalls{ThresholdNS: p.ThresholdNS, Policy: p.Policy, CPUs: len(p.CPUs), StallSet: stallSet(p)}
	if len(p.CPUs) > 1 {
		one, err := stallprobe.RunEach(ctx, stallprobe.Options{})
		if err != nil {
			return err
		}
		set := stallSet(one)
		s.OneBusy = &set
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("stall probe: %v", err)
	}
	r.Stalls = s
	if len(p.CPUs) > 1 {
		ws, err := stallprobe.Wakeups(ctx, wakeupSamples)
		if err != nil {
			return err
		}
		var all []int64
		for _, w := range ws {
			all = append(all, w.LatenciesNS...)
		}
		r.Wakeup = distribution(all)
	}
	return nil
}

// wakeupSamples is how many cross-CPU wake-ups are timed per pair of CPUs.
const wakeupSamples = 100

// stallSet summarises one probe run.
func stallSet(p *stallprobe.Result) costs.StallSet {
	s := costs.StallSet{PerSecond: p.PerSecond(), LengthsNS: p.Groups(stallGroups)}
	if all := p.Sorted(); len(all) > 0 {
		s.P50NS, s.P90NS, s.MaxNS = all[len(all)/2], all[len(all)*9/10], all[len(all)-1]
	}
	for _, c := range p.CPUs {
		s.SpunNS += c.SpunNS
		s.Count += c.Stalls
		s.StalledNS += c.StalledNS
	}
	return s
}

// hostStalls is the emulated machine's stall process from a table's host
// section, and a note when the table has none.
func hostStalls(h *costs.Host) (sim.Stalls, string) {
	s := h.Stalls
	if s == nil {
		return sim.Stalls{}, "the cost table has no stall measurement (written before ndst calibrate measured stalls): the emulated machine never stalls"
	}
	out := sim.Stalls{StallSet: simStallSet(s.StallSet)}
	if s.OneBusy != nil {
		out.OneBusy = simStallSet(*s.OneBusy)
	}
	return out, ""
}

func simStallSet(s costs.StallSet) sim.StallSet {
	out := sim.StallSet{PerSecond: s.PerSecond}
	for _, l := range s.LengthsNS {
		out.Durations = append(out.Durations, sim.Time(l))
	}
	return out
}

// stallStretch is how much longer a stalling machine takes for CPU work
// than the work itself: per second of running time it stalls PerSecond
// times for the mean of the lengths, so work of c takes c*(1+PerSecond*mean)
// (1 without stalls), with the rates of one busy CPU where the table has
// them (a calibration's deletes keep one CPU busy). The closure fit divides
// its corrections by it: with half the time stalled, a cost moves the
// emulated time twice as much, and uncorrected steps would swing between
// two wrong costs.
func stallStretch(h *costs.Host) float64 {
	if h == nil || h.Stalls == nil {
		return 1
	}
	s := h.Stalls.StallSet
	if h.Stalls.OneBusy != nil {
		s = *h.Stalls.OneBusy
	}
	if len(s.LengthsNS) == 0 {
		return 1
	}
	var sum float64
	for _, l := range s.LengthsNS {
		sum += float64(l)
	}
	return 1 + s.PerSecond*sum/float64(len(s.LengthsNS))/1e9
}

// stallSummary is the report's line on the stall probe.
func (r *Report) stallSummary() string {
	s := r.Stalls
	if s == nil {
		if r.StallsError != "" {
			return fmt.Sprintf("stalls:          not measured: %s (the emulated machine never stalls)\n", r.StallsError)
		}
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stalls:          gaps above %s of a %s thread spinning on each CPU:", dur(s.ThresholdNS), s.Policy)
	line := func(what string, x costs.StallSet) {
		fmt.Fprintf(&b, " %s: %d in %s, %.0f per CPU-second, %.1f%% of the time", what, x.Count, dur(x.SpunNS), x.PerSecond,
			100*float64(x.StalledNS)/float64(max(1, x.SpunNS)))
		if x.Count > 0 {
			fmt.Fprintf(&b, ", length mean %s, p50 %s, p90 %s, max %s", dur(x.StalledNS/int64(x.Count)), dur(x.P50NS), dur(x.P90NS), dur(x.MaxNS))
		}
	}
	line(fmt.Sprintf("all %d at once", s.CPUs), s.StallSet)
	if s.OneBusy != nil {
		b.WriteString(";")
		line("one at a time", *s.OneBusy)
	}
	b.WriteString("\n")
	if w := r.Wakeup; w != nil {
		fmt.Fprintf(&b, "wake-up:         a thread on another, idle CPU woken through a pipe x %d: min %s, p50 %s, mean %s, p99 %s, max %s (the emulated machine's remote wake-ups of an idle CPU take the median)\n",
			w.N, dur(w.MinNS), dur(w.P50NS), dur(w.MeanNS), dur(w.P99NS), dur(w.MaxNS))
	}
	return b.String()
}
