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

// measureStalls runs the stall probe on every CPU and summarises it for the
// table's host section.
func (r *Report) measureStalls(ctx context.Context) error {
	p, err := stallprobe.Run(ctx, stallprobe.Options{})
	if err != nil {
		return err
	}
	s := &costs.Stalls{ThresholdNS: p.ThresholdNS, Policy: p.Policy, CPUs: len(p.CPUs),
		PerSecond: p.PerSecond(), LengthsNS: p.Groups(stallGroups)}
	if all := p.Sorted(); len(all) > 0 {
		s.P50NS, s.P90NS, s.MaxNS = all[len(all)/2], all[len(all)*9/10], all[len(all)-1]
	}
	for _, c := range p.CPUs {
		s.SpunNS += c.SpunNS
		s.Count += c.Stalls
		s.StalledNS += c.StalledNS
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("stall probe: %v", err)
	}
	r.Stalls = s
	return nil
}

// hostStalls is the emulated machine's stall process from a table's host
// section, and a note when the table has none.
func hostStalls(h *costs.Host) (sim.Stalls, string) {
	s := h.Stalls
	if s == nil {
		return sim.Stalls{}, "the cost table has no stall measurement (written before ndst calibrate measured stalls): the emulated machine never stalls"
	}
	out := sim.Stalls{PerSecond: s.PerSecond}
	for _, q := range s.LengthsNS {
		out.Durations = append(out.Durations, sim.Time(q))
	}
	return out, ""
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
	fmt.Fprintf(&b, "stalls:          %d over %s of spinning on %d CPU(s) (gaps above %s, %s): %.0f per CPU-second, %.2f%% of the time",
		s.Count, dur(s.SpunNS), s.CPUs, dur(s.ThresholdNS), s.Policy, s.PerSecond, 100*float64(s.StalledNS)/float64(max(1, s.SpunNS)))
	if s.Count > 0 {
		fmt.Fprintf(&b, "; length mean %s, p50 %s, p90 %s, max %s", dur(s.StalledNS/int64(s.Count)), dur(s.P50NS), dur(s.P90NS), dur(s.MaxNS))
	}
	b.WriteString("\n")
	return b.String()
}
