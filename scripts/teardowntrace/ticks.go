package main

import (
	"fmt"
	"io"
	"sort"
)

// TickDelivery is how each CPU's tick interrupts arrived: the jitter of the
// gap between two consecutive ticks of the CPU against the nearest whole
// number of periods (on real hardware a few microseconds; a virtual CPU
// that the host does not run when its timer is due, as under software
// emulation on a busy host, runs the handler late), and how many periods
// passed without a tick while the CPU's tick was running (no tick_stop in
// between): ticks that never arrived, their jiffies caught up by the next.
type TickDelivery struct {
	CPU      int
	Ticks    int
	Jitter   []int64 // |gap - k*period| in ns, sorted
	Missed   int     // periods without a tick while the tick ran
	LongGaps int     // gaps of two periods or more
}

// TickDeliveries measures every CPU's ticks (isTick) on the grid.
func TickDeliveries(evs []Event, g Grid) []TickDelivery {
	type st struct {
		d       TickDelivery
		last    int64
		stopped bool
		seen    bool
	}
	per := map[int]*st{}
	get := func(c int) *st {
		s := per[c]
		if s == nil {
			s = &st{d: TickDelivery{CPU: c}}
			per[c] = s
		}
		return s
	}
	for i := range evs {
		ev := &evs[i]
		switch {
		case ev.Name == "tick_stop" && ev.Arg("success") == "1":
			get(ev.CPU).stopped = true
		case isTick(ev):
			s := get(ev.CPU)
			s.d.Ticks++
			if s.seen && !s.stopped {
				gap := ev.TS - s.last
				k := (gap + g.Period/2) / g.Period
				dev := gap - k*g.Period
				if dev < 0 {
					dev = -dev
				}
				s.d.Jitter = append(s.d.Jitter, dev)
				if k >= 2 {
					s.d.Missed += int(k - 1)
					s.d.LongGaps++
				}
			}
			s.last, s.seen, s.stopped = ev.TS, true, false
		}
	}
	var out []TickDelivery
	for _, s := range per {
		sort.Slice(s.d.Jitter, func(i, j int) bool { return s.d.Jitter[i] < s.d.Jitter[j] })
		out = append(out, s.d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPU < out[j].CPU })
	return out
}

// reportTicks prints one line per CPU.
func reportTicks(w io.Writer, evs []Event, g Grid) {
	for _, d := range TickDeliveries(evs, g) {
		if len(d.Jitter) == 0 {
			continue
		}
		q := func(p float64) float64 { return ms(d.Jitter[int(p*float64(len(d.Jitter)-1))]) }
		fmt.Fprintf(w, "ticks cpu%d: %d; gap jitter against whole periods ms: p50 %.3f, p90 %.3f, max %.3f; %d periods without a tick while the tick ran (%d gaps of 2+ periods)\n",
			d.CPU, d.Ticks, q(0.5), q(0.9), ms(d.Jitter[len(d.Jitter)-1]), d.Missed, d.LongGaps)
	}
}
