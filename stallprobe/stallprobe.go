// Package stallprobe measures how often, and for how long, each CPU of this
// machine does not run a thread that wants it: a stall.
//
// On each CPU a thread pinned to it (SCHED_FIFO when the process may set
// it, so that no ordinary task takes the CPU from it) spins on
// CLOCK_MONOTONIC in short windows and records every gap between two
// consecutive readings longer than a threshold. On bare metal such a gap is
// an interrupt handler of a few microseconds, below the threshold; in a
// virtual machine whose virtual CPU threads the host does not always run
// (qemu's TCG emulation on a host with no core to spare), it is the time
// the virtual CPU did not run at all, interrupts included. The emulated
// kernel takes the rate and the durations as a property of the machine
// (sim.Stalls): ticks and wake-ups due in a stall come when it ends.
//
// The windows are short (default 10 of 100 ms, with 20 ms pauses between
// them), well under the real-time throttle (sched_rt_runtime_us, 950 ms of
// every second), and every CPU is probed at once, as a teardown keeps them
// all busy. The probe threads are locked OS threads that end when the
// probe does, so their affinity and policy go with them.
package stallprobe

import (
	"fmt"
	"slices"
	"time"
)

// Options configures a probe. Zero values take the defaults.
type Options struct {
	// Windows is how many spin windows each CPU runs (default 10), each
	// Window long (default 100 ms), Pause apart (default 20 ms).
	Windows int
	Window  time.Duration
	Pause   time.Duration
	// Threshold is the shortest gap counted as a stall (default 50 µs).
	Threshold time.Duration
}

// Defaults of Options.
const (
	DefaultWindows   = 10
	DefaultWindow    = 100 * time.Millisecond
	DefaultPause     = 20 * time.Millisecond
	DefaultThreshold = 50 * time.Microsecond
	// MaxWindow bounds one window, far below the real-time throttle.
	MaxWindow = 500 * time.Millisecond
)

func (o Options) withDefaults() (Options, error) {
	if o.Windows == 0 {
		o.Windows = DefaultWindows
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Pause == 0 {
		o.Pause = DefaultPause
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	switch {
	case o.Windows < 1 || o.Windows > 1000:
		return o, fmt.Errorf("stall probe: %d windows: want 1 to 1000", o.Windows)
	case o.Window < time.Millisecond || o.Window > MaxWindow:
		return o, fmt.Errorf("stall probe: window %v: want 1 ms to %v", o.Window, MaxWindow)
	case o.Pause < 0 || o.Threshold < time.Microsecond || o.Threshold > 10*time.Millisecond:
		return o, fmt.Errorf("stall probe: pause %v, threshold %v: want a pause of at least 0 and a threshold of 1 µs to 10 ms", o.Pause, o.Threshold)
	}
	return o, nil
}

// CPU is what one CPU's thread saw.
type CPU struct {
	CPU int `json:"cpu"`
	// SpunNS is the time the thread spun; StalledNS the part of it in
	// stalls, Stalls their number.
	SpunNS    int64 `json:"spun_ns"`
	Stalls    int   `json:"stalls"`
	StalledNS int64 `json:"stalled_ns"`
	MaxNS     int64 `json:"max_ns"`
	// Durations are the stalls' lengths (ns), in the order seen.
	Durations []int64 `json:"-"`
}

// Result is a probe's outcome.
type Result struct {
	ThresholdNS int64 `json:"threshold_ns"`
	// Policy is the scheduling policy the threads spun under, and why.
	Policy string `json:"policy"`
	CPUs   []CPU  `json:"cpus"`
}

// PerSecond is the stall rate per second of running time (spun minus
// stalled), over every CPU.
func (r *Result) PerSecond() float64 {
	var n int
	var run int64
	for _, c := range r.CPUs {
		n += c.Stalls
		run += c.SpunNS - c.StalledNS
	}
	if run <= 0 {
		return 0
	}
	return float64(n) / (float64(run) / 1e9)
}

// StalledFraction is the share of the spun time that was stalled.
func (r *Result) StalledFraction() float64 {
	var st, spun int64
	for _, c := range r.CPUs {
		st += c.StalledNS
		spun += c.SpunNS
	}
	if spun <= 0 {
		return 0
	}
	return float64(st) / float64(spun)
}

// Sorted returns every CPU's stall lengths (ns), shortest first.
func (r *Result) Sorted() []int64 {
	var all []int64
	for _, c := range r.CPUs {
		all = append(all, c.Durations...)
	}
	slices.Sort(all)
	return all
}

// Groups cuts the sorted stall lengths into k groups of (as nearly as
// possible) equal count, fewer when there are fewer stalls, and returns
// each group's mean length (ns), ascending; nil without stalls. Drawn one
// of them at a time, each as likely, they give the measured mean and its
// spread, the long tail included (a quantile grid would not: its top
// segment spans from the 95th percentile to the one longest stall).
func (r *Result) Groups(k int) []int64 { return GroupMeans(r.Sorted(), k) }

// GroupMeans is Groups for any ascending samples (ns).
func GroupMeans(all []int64, k int) []int64 {
	if len(all) == 0 || k < 1 {
		return nil
	}
	k = min(k, len(all))
	out := make([]int64, k)
	for g := range k {
		lo, hi := g*len(all)/k, (g+1)*len(all)/k
		var sum int64
		for _, d := range all[lo:hi] {
			sum += d
		}
		out[g] = sum / int64(hi-lo)
	}
	return out
}

// spin runs one window on the calling thread: it reads the clock until
// the window is over and appends each gap above the threshold to c.
func spin(c *CPU, window, threshold time.Duration) {
	start := time.Now()
	prev := time.Duration(0)
	for {
		now := time.Since(start)
		if g := now - prev; g > threshold {
			c.Stalls++
			c.StalledNS += int64(g)
			c.MaxNS = max(c.MaxNS, int64(g))
			c.Durations = append(c.Durations, int64(g))
		}
		prev = now
		if now >= window {
			c.SpunNS += int64(now)
			return
		}
	}
}

// Wakeup is what the wake-up probe saw from one CPU to another: a thread
// pinned to From writes a byte into a pipe that a thread pinned to To,
// blocked in read(2) on an otherwise idle CPU, returns from; the latency is
// from before the write to after the read, both threads' system calls
// included. In a virtual machine whose idle virtual CPU halts, it includes
// the host's time to run that vCPU's thread again, which the spinning
// probe, keeping its vCPUs busy, never sees.
type Wakeup struct {
	From int `json:"from_cpu"`
	To   int `json:"to_cpu"`
	// LatenciesNS are the samples, in the order taken.
	LatenciesNS []int64 `json:"latencies_ns"`
}

// MaxTimerSamples bounds the samples per CPU of TimerLateness.
const MaxTimerSamples = 2000

// Timer is what the timer probe saw on one CPU (TimerLateness).
type Timer struct {
	CPU int `json:"cpu"`
	// LatenessNS are how late each sleep ran past its deadline, in the
	// order taken.
	LatenessNS []int64 `json:"lateness_ns"`
}
