package main

import (
	"fmt"
	"sort"
)

// Grid is the tick grid of the trace: tick k starts at Phase + k*Period (trace
// clock, ns). The ticks of all CPUs share one grid (the kernel's tick_next_period
// sequence), so J+n of an event is its grid index minus the delete's.
// JiffiesOff maps grid indices to the kernel's jiffies: jiffies = index + JiffiesOff.
type Grid struct {
	HZ         int
	Period     int64
	Phase      int64
	Ticks      int // tick events the grid was estimated from
	JiffiesOff int64
	HaveJiff   bool
	JiffVotes  int // events agreeing with JiffiesOff
	JiffTotal  int // events that carry a jiffies value
}

// Index is the grid index (tick number) of time t.
func (g Grid) Index(t int64) int64 { return floorDiv(t-g.Phase, g.Period) }

// Offset is how far t lies after the start of its tick, in ns.
func (g Grid) Offset(t int64) int64 { return t - g.Phase - g.Index(t)*g.Period }

// JiffyIndex converts a jiffies value to a grid index.
func (g Grid) JiffyIndex(j int64) int64 { return j - g.JiffiesOff }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// isTick reports whether ev is the periodic tick's hrtimer firing.
func isTick(ev *Event) bool {
	if ev.Name != "hrtimer_expire_entry" {
		return false
	}
	switch ev.Arg("function") {
	case "tick_nohz_handler", "tick_sched_timer", "tick_nohz_highres_handler", "tick_handle_periodic":
		return true
	}
	return false
}

// candidate tick rates (CONFIG_HZ choices).
var hzChoices = []int{100, 250, 300, 1000}

// EstimateGrid finds the tick period and phase from the tick events. hz > 0
// forces the rate; otherwise it is the CONFIG_HZ choice nearest to the low
// decile of the gaps between consecutive ticks of one CPU (a busy CPU ticks
// every period; a tick-stopped one skips some, which only lengthens gaps).
func EstimateGrid(evs []Event, hz int) (Grid, error) {
	last := map[int]int64{}
	var gaps []int64
	var ticks []int64
	for i := range evs {
		ev := &evs[i]
		if !isTick(ev) {
			continue
		}
		ticks = append(ticks, ev.TS)
		if p, ok := last[ev.CPU]; ok && ev.TS-p > 500_000 {
			gaps = append(gaps, ev.TS-p)
		}
		last[ev.CPU] = ev.TS
	}
	if len(ticks) < 2 {
		return Grid{}, fmt.Errorf("only %d tick events (hrtimer_expire_entry function=tick_nohz_handler): cannot place the tick grid; record timer:hrtimer_expire_entry", len(ticks))
	}
	if hz <= 0 {
		if len(gaps) == 0 {
			return Grid{}, fmt.Errorf("no CPU ticked twice: cannot estimate HZ; give -hz")
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		low := gaps[len(gaps)/10]
		best, bestd := 0, int64(-1)
		for _, c := range hzChoices {
			d := low - tickNsec(c)
			if d < 0 {
				d = -d
			}
			if bestd < 0 || d < bestd {
				best, bestd = c, d
			}
		}
		hz = best
	}
	g := Grid{HZ: hz, Period: tickNsec(hz), Ticks: len(ticks)}
	g.Phase = clusterStart(ticks, g.Period)
	return g, nil
}

// tickNsec is the kernel's TICK_NSEC for a given HZ.
func tickNsec(hz int) int64 { return (1_000_000_000 + int64(hz)/2) / int64(hz) }

// clusterStart returns the start of the tick cluster modulo period: tick
// handlers run at or shortly after their grid point, so their residues
// cluster; the grid point is the first residue after the widest circular gap.
func clusterStart(ts []int64, period int64) int64 {
	r := make([]int64, len(ts))
	for i, t := range ts {
		r[i] = ((t % period) + period) % period
	}
	sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
	bestGap, start := r[0]+period-r[len(r)-1], r[0]
	for i := 1; i < len(r); i++ {
		if gap := r[i] - r[i-1]; gap > bestGap {
			bestGap, start = gap, r[i]
		}
	}
	return start
}

// FitJiffies finds JiffiesOff from the events that carry a jiffies value:
// timer_expire_entry's now= (the jiffies when the timer ran) and
// timer_start's expires= minus its [timeout=]. The most common
// jiffies-minus-index wins.
func (g *Grid) FitJiffies(evs []Event) {
	votes := map[int64]int{}
	for i := range evs {
		ev := &evs[i]
		var j int64
		switch ev.Name {
		case "timer_expire_entry":
			now, ok := ev.ArgInt("now")
			if !ok {
				continue
			}
			j = now
		case "timer_start":
			exp, ok1 := ev.ArgInt("expires")
			to, ok2 := ev.ArgInt("timeout")
			if !ok1 || !ok2 {
				continue
			}
			j = exp - to
		default:
			continue
		}
		votes[j-g.Index(ev.TS)]++
		g.JiffTotal++
	}
	for off, n := range votes {
		if n > g.JiffVotes || (n == g.JiffVotes && off < g.JiffiesOff) {
			g.JiffiesOff, g.JiffVotes = off, n
		}
	}
	g.HaveJiff = g.JiffVotes > 0
}
