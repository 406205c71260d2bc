package calibrate

import (
	"context"
	"fmt"
	"slices"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/stallprobe"
)

// Timer lateness: how late a timer interrupt of the calibrated machine
// arrives (stallprobe.TimerLateness). On hardware it is the probe's own
// wake-up, microseconds; a virtual CPU under software emulation gets its
// timer interrupt when the emulator's thread serving the deadline runs,
// often a millisecond or more late. The emulated kernel of the machine then
// delivers each tick late by one of the groups kept (sim.Config's
// TickLateness, sim/ticklate.go): what the tick brings (the RCU core, the
// FQS timer) comes that much later.

// timerSamples is how many timer wake-ups are timed per CPU: 150 deadlines
// 1 to 6 ms ahead, about half a second a CPU.
const timerSamples = 150

// latenessGroups is how many equal-count groups of the lateness the table
// keeps the means of (costs.Lateness.GroupsNS).
const latenessGroups = 20

// measureTimerLateness runs the timer probe on every CPU in turn and keeps
// the lateness less its floor (the smallest sample: the probe's own path).
func (r *Report) measureTimerLateness(ctx context.Context) error {
	ts, err := stallprobe.TimerLateness(ctx, timerSamples)
	if err != nil {
		return err
	}
	var all []int64
	for _, tm := range ts {
		all = append(all, tm.LatenessNS...)
	}
	l := lateness(all)
	if l == nil {
		return fmt.Errorf("timer probe: no sample")
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("timer probe: %v", err)
	}
	r.TimerLateness = l
	return nil
}

// lateness summarises samples: their distribution, and the group means of
// the samples less the smallest.
func lateness(ns []int64) *costs.Lateness {
	d := distribution(ns)
	if d == nil {
		return nil
	}
	s := slices.Sorted(slices.Values(ns))
	off := make([]int64, len(s))
	for i, v := range s {
		off[i] = min(v-s[0], costs.MaxLateness)
	}
	return &costs.Lateness{Distribution: *d, FloorNS: s[0], GroupsNS: stallprobe.GroupMeans(off, latenessGroups)}
}

// hostTickLateness is the emulated machine's tick lateness from a table's
// host section (nil without a measurement: ticks on time).
func hostTickLateness(h *costs.Host) []sim.Time {
	l := h.TimerLateness
	if l == nil {
		return nil
	}
	out := make([]sim.Time, len(l.GroupsNS))
	for i, g := range l.GroupsNS {
		out[i] = sim.Time(g)
	}
	return out
}

// latenessSummary is the report's line on the timer probe.
func (r *Report) latenessSummary() string {
	l := r.TimerLateness
	if l == nil {
		if r.TimerLatenessError != "" {
			return fmt.Sprintf("timer:           not measured: %s (the emulated machine's ticks come on time)\n", r.TimerLatenessError)
		}
		return ""
	}
	var mean int64
	for _, g := range l.GroupsNS {
		mean += g
	}
	mean /= int64(len(l.GroupsNS))
	return fmt.Sprintf("timer:           a sleep to a deadline on each idle CPU x %d ran late by min %s, p50 %s, mean %s, p99 %s, max %s (the emulated machine's ticks come late by the lateness less its floor of %s: mean %s)\n",
		l.N, dur(l.MinNS), dur(l.P50NS), dur(l.MeanNS), dur(l.P99NS), dur(l.MaxNS), dur(l.FloorNS), dur(mean))
}
