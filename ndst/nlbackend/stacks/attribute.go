package stacks

import (
	"sort"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// Sample is one reading of the sampled thread.
type Sample struct {
	T     int64  // CLOCK_MONOTONIC, ns
	CPU   int64  // the thread's CPU clock then (the window's clock)
	Phase string // Classify of its stack (Running when empty)
}

// Window is one request: its span on CLOCK_MONOTONIC, the thread's CPU
// clock at both ends, and the phase its CPU work belongs to when the
// thread is caught running (its stack then cannot be read): Unregister for
// a delete, Register for a create.
type Window struct {
	T0, T1, CPU0, CPU1 int64
	Running            string
}

// Acc accumulates the phases of requests (see Add).
type Acc struct {
	cpu, wait map[string]int64
	// Samples counts the samples used, by phase (Running ones under the
	// window's running phase).
	Samples map[string]int
	// Windows counts the requests added, Unsampled those that ended before
	// a sample fell in them (their waiting time is phase.Other).
	Windows, Unsampled int
	// TotalNS is the sum of the requests' durations, CPUNS of their CPU
	// time; OutsideNS the time added by AddOther.
	TotalNS, CPUNS, OutsideNS int64
}

// NewAcc returns an empty accumulator.
func NewAcc() *Acc {
	return &Acc{cpu: map[string]int64{}, wait: map[string]int64{}, Samples: map[string]int{}}
}

// Add attributes one request from the samples taken during it (sorted by
// time; those outside the window are ignored). Each sample stands for the
// time halfway to its neighbours (the window's ends go to the first and the
// last), and within that time the CPU clock says how much the thread ran
// and how much it waited. A sample in a waiting phase (rcu_barrier, a grace
// period, the wait loop, RTNL) takes its waiting time, and its running time
// goes to the window's running phase (the thread ran before or after the
// wait, doing the request's work); any other sample takes both. With no
// sample, the CPU time is the running phase's and the waiting time
// phase.Other. The shares sum exactly to the request's duration.
func (a *Acc) Add(w Window, samples []Sample) {
	d := max(w.T1-w.T0, 0)
	a.Windows++
	a.TotalNS += d
	lo := sort.Search(len(samples), func(i int) bool { return samples[i].T > w.T0 })
	hi := sort.Search(len(samples), func(i int) bool { return samples[i].T > w.T1 })
	in := samples[lo:hi]
	if len(in) == 0 {
		c := min(max(w.CPU1-w.CPU0, 0), d)
		a.CPUNS += c
		a.Unsampled++
		a.cpu[w.Running] += c
		a.wait[phase.Other] += d - c
		return
	}
	// Points: the window's start, the samples, its end; each interval
	// between two points is halved between their owners.
	n := len(in)
	cellCPU, cellWait := make([]int64, n), make([]int64, n)
	prevT, prevCPU, prevOwner := w.T0, w.CPU0, 0
	for i := 0; i <= n; i++ {
		t, cpu, owner := w.T1, w.CPU1, n-1
		if i < n {
			t, cpu, owner = in[i].T, in[i].CPU, i
		}
		dt := t - prevT
		dc := min(max(cpu-prevCPU, 0), dt)
		left := dt / 2
		lc := dc / 2
		if i == 0 || i == n { // an end of the window: all to its sample
			left, lc = dt, dc
			if i == 0 {
				left, lc = 0, 0
			}
		}
		cellCPU[prevOwner] += lc
		cellWait[prevOwner] += left - lc
		cellCPU[owner] += dc - lc
		cellWait[owner] += (dt - left) - (dc - lc)
		prevT, prevCPU, prevOwner = t, cpu, owner
	}
	for i, x := range in {
		p := x.Phase
		if p == Running {
			p = w.Running
		}
		a.Samples[p]++
		a.CPUNS += cellCPU[i]
		if IsWait(p) {
			a.cpu[w.Running] += cellCPU[i]
		} else {
			a.cpu[p] += cellCPU[i]
		}
		a.wait[p] += cellWait[i]
	}
}

// AddOther adds time outside any request (ndst's own work between
// requests) to phase.Other: cpu of it on a CPU, the rest waiting.
func (a *Acc) AddOther(d, cpu int64) {
	d = max(d, 0)
	cpu = min(max(cpu, 0), d)
	a.OutsideNS += d
	a.cpu[phase.Other] += cpu
	a.wait[phase.Other] += d - cpu
}

// Kernel returns the time of phase p inside the requests (without the time
// AddOther added).
func (a *Acc) Kernel(p string) int64 {
	t := a.cpu[p] + a.wait[p]
	if p == phase.Other {
		t -= a.OutsideNS
	}
	return t
}

// Phases returns the split in the order of phase.All, without empty phases.
func (a *Acc) Phases() []ndst.Phase {
	var out []ndst.Phase
	for _, p := range phase.All {
		if c, w := a.cpu[p], a.wait[p]; c+w > 0 {
			out = append(out, ndst.Phase{Name: p, CPUNS: c, WaitNS: w})
		}
	}
	return out
}

// SampleCount is the number of samples used.
func (a *Acc) SampleCount() int {
	n := 0
	for _, v := range a.Samples {
		n += v
	}
	return n
}
