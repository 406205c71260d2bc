package stacks

import (
	"sort"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// Sample is one reading of the sampled thread.
type Sample struct {
	T     int64  // CLOCK_MONOTONIC, ns
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
// time; those outside the window are ignored). The request's CPU time
// (from the CPU clock) is shared among the samples that show CPU work, by
// the time each stands for (halfway to its neighbours); if none does, it is
// the window's running phase. Its waiting time (the rest) is shared among
// the samples that show a wait, else among the others, and is phase.Other
// when no sample fell in the request. The shares sum exactly to the
// request's duration.
func (a *Acc) Add(w Window, samples []Sample) {
	d := max(w.T1-w.T0, 0)
	c := min(max(w.CPU1-w.CPU0, 0), d)
	a.Windows++
	a.TotalNS += d
	a.CPUNS += c
	lo := sort.Search(len(samples), func(i int) bool { return samples[i].T > w.T0 })
	hi := sort.Search(len(samples), func(i int) bool { return samples[i].T > w.T1 })
	in := samples[lo:hi]
	if len(in) == 0 {
		a.Unsampled++
		a.cpu[w.Running] += c
		a.wait[phase.Other] += d - c
		return
	}
	phases := make([]string, len(in))
	cells := make([]int64, len(in))
	var cpuW, waitW []int64
	for i, s := range in {
		left, right := w.T0, w.T1
		if i > 0 {
			left = (in[i-1].T + s.T) / 2
		}
		if i < len(in)-1 {
			right = (s.T + in[i+1].T) / 2
		}
		cells[i] = right - left
		phases[i] = s.Phase
		if s.Phase == Running {
			phases[i] = w.Running
		}
		a.Samples[phases[i]]++
	}
	for i := range in {
		if IsWait(phases[i]) {
			cpuW, waitW = append(cpuW, 0), append(waitW, cells[i])
		} else {
			cpuW, waitW = append(cpuW, cells[i]), append(waitW, 0)
		}
	}
	if sum(cpuW) > 0 {
		spread(a.cpu, phases, cpuW, c)
	} else {
		a.cpu[w.Running] += c
	}
	if sum(waitW) == 0 {
		waitW = cpuW
	}
	spread(a.wait, phases, waitW, d-c)
}

func sum(w []int64) int64 {
	var s int64
	for _, v := range w {
		s += v
	}
	return s
}

// spread adds total to m, shared among phases by weight, exactly: the
// rounding remainder goes to the heaviest.
func spread(m map[string]int64, phases []string, weight []int64, total int64) {
	s := sum(weight)
	if s <= 0 || total == 0 {
		return
	}
	heaviest, given := 0, int64(0)
	for i, w := range weight {
		share := int64(float64(total) * float64(w) / float64(s))
		m[phases[i]] += share
		given += share
		if w > weight[heaviest] {
			heaviest = i
		}
	}
	m[phases[heaviest]] += total - given
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
