package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ndst-project/ndst/internal/ascending"
)

// Stalls: a machine whose CPUs sometimes do not run at all.
//
// A virtual CPU is a thread of its host: while the host does not run that
// thread (under qemu's TCG emulation, on a host with fewer free cores than
// the guest has vCPUs), the guest's CPU executes nothing, not even its
// interrupts. Bare metal has no such gaps beyond its interrupt handlers
// (microseconds). `ndst calibrate` measures them (package stallprobe) and
// the cost table's host section carries the rate and the durations; a
// machine without them has no stalls and runs exactly as before (no event,
// no draw).
//
// How often a virtual CPU stalls depends on how many of its machine's
// CPUs are busy: one busy vCPU competes with fewer of its own for the
// host's cores. The probe measures both (every CPU spinning at once, and
// one at a time), and the stall process of each CPU is a Poisson process
// in the CPU's running time whose rate is the one of the moment: more than
// one CPU not idle, Stalls.StallSet; at most one, Stalls.OneBusy. It is
// drawn by thinning: candidate stalls come at the larger rate (after an
// exponential gap, counted from the end of the last stall), and a
// candidate is a stall with the probability of the rate of its moment
// over the larger one; its length is one of that set's durations. Each CPU
// draws from its own source seeded from Config.Seed and its number, never
// from the wall clock.
//
// During a stall on CPU c (stallBegin):
//   - the running task's charge, or its pending switch-in, ends that much
//     later, and a task woken onto an idle c starts after the stall (the
//     stall is added to irqBusyUntil, as interrupt work is, but it is not
//     counted as interrupt work: CPU.Stalled counts it);
//   - a tick due in the stall fires when it ends, once: the tick's hrtimer
//     is forwarded past the periods it missed (6.1 kernel/time/tick-sched.c
//     tick_sched_timer, l.1487-1512: hrtimer_forward(timer, now, TICK_NSEC)
//     after one tick_sched_handle), and the timers that came due meanwhile
//     run from that one tick's softirq. The engine's jiffies are the time's
//     (Engine.Jiffies): when the late tick runs they are what the kernel's
//     tick_do_update_jiffies64 makes of them, catching up every missed
//     period in one step (l.103-118: ticks += delta / TICK_NSEC). What the
//     engine does not model is the lag in between when the stalled CPU
//     holds the do_timer duty (l.209: only tick_do_timer_cpu updates
//     jiffies): the other CPU then reads the old jiffies until the late
//     tick;
//   - the scheduler's slice hrtimer (hrtick.go), due in it, fires at its end.
//
// An idle CPU stalls too (its vCPU thread is as likely to be off the
// host's CPU), which matters only to the wake-ups that land in its stalls.

// Stalls describes a machine's stall process; the zero value has none.
type Stalls struct {
	// StallSet applies while more than one CPU is busy, and always when
	// OneBusy is zero.
	StallSet
	// OneBusy applies while at most one CPU is busy (not idle).
	OneBusy StallSet
}

// StallSet is the stall rate and lengths of one state of the machine.
type StallSet struct {
	// PerSecond is the rate of stalls per second of a CPU's running time.
	PerSecond float64
	// Durations are the stall lengths, ascending, all equally likely: the
	// means of equal-count groups of the measured lengths
	// (costs.Stalls.LengthsNS), which keep the measured mean and spread.
	Durations []Time
}

// Enabled reports whether the machine stalls at all.
func (s Stalls) Enabled() bool { return s.PerSecond > 0 || s.OneBusy.PerSecond > 0 }

// maxRate is the candidates' rate: the larger of the two.
func (s Stalls) maxRate() float64 { return max(s.PerSecond, s.OneBusy.PerSecond) }

// now is the set of the machine's present state.
func (s Stalls) now(e *Engine) StallSet {
	if s.OneBusy.PerSecond == 0 && len(s.OneBusy.Durations) == 0 {
		return s.StallSet
	}
	busy := 0
	for _, c := range e.cpus {
		if !c.Idle() {
			busy++
		}
	}
	if busy <= 1 {
		return s.OneBusy
	}
	return s.StallSet
}

// MaxStallRate bounds Stalls.PerSecond: a stall every 100 µs.
const MaxStallRate = 10000

// MaxStall bounds one stall's length.
const MaxStall = Second

// Validate checks the stall description.
func (s Stalls) Validate() error {
	if err := s.StallSet.Validate(); err != nil {
		return err
	}
	if err := s.OneBusy.Validate(); err != nil {
		return fmt.Errorf("one CPU busy: %v", err)
	}
	return nil
}

// Validate checks one set.
func (s StallSet) Validate() error {
	switch {
	case s.PerSecond < 0 || s.PerSecond > MaxStallRate || math.IsNaN(s.PerSecond):
		return fmt.Errorf("stall rate must be between 0 and %d per second, got %g", MaxStallRate, s.PerSecond)
	case s.PerSecond > 0 && len(s.Durations) == 0:
		return fmt.Errorf("a stall rate of %g per second needs stall durations", s.PerSecond)
	}
	return ascending.Check(s.Durations, 0, MaxStall, true, "stall duration", Time.String)
}

// draw returns one stall length: one of the durations, each as likely.
func (s StallSet) draw(r *rand.Rand) Time {
	return s.Durations[r.IntN(len(s.Durations))]
}

// gap returns the running time until the next candidate stall.
func (s Stalls) gap(r *rand.Rand) Time {
	return Time(r.ExpFloat64() / s.maxRate() * float64(Second))
}

// startStalls arms the CPU's first stall, once per engine.
func (c *CPU) startStalls() {
	s := c.e.cfg.Stalls
	if !s.Enabled() || c.stallRand != nil {
		return
	}
	c.stallRand = rand.New(rand.NewPCG(c.e.cfg.Seed^0x57a115eed, uint64(c.ID)+1))
	c.e.afterBackground(s.gap(c.stallRand), c.stallBegin)
}

// stallBegin is a candidate stall; if it is one, the CPU runs nothing until
// stallUntil.
func (c *CPU) stallBegin() {
	s := c.e.cfg.Stalls
	set := s.now(c.e)
	if c.stallRand.Float64()*s.maxRate() >= set.PerSecond {
		c.e.afterBackground(s.gap(c.stallRand), c.stallBegin)
		return
	}
	d := set.draw(c.stallRand)
	c.stallUntil = c.e.now + d
	c.Stalled += d
	c.StallCount++
	c.pushBack(d)
	if c.e.trace != nil {
		c.e.emit(TraceEvent{Name: "stall", Cat: "stall", Ph: "X", Ts: us(c.e.now), Dur: us(d), Pid: tracePidCPUs, Tid: c.ID})
	}
	c.e.afterBackground(d+s.gap(c.stallRand), c.stallBegin)
}

// stalled reports whether the CPU is in a stall now.
func (c *CPU) stalled() bool { return c.stallUntil > c.e.now }

// StalledUntil returns when the CPU's current stall ends (at or before now:
// it is not stalled).
func (c *CPU) StalledUntil() Time { return c.stallUntil }
