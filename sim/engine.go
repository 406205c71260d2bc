// Package sim is the deterministic virtual-time engine of the emulated kernel.
//
// Time is an integer number of nanoseconds (Time); jiffies are derived from it
// at the configured HZ (jiffy k starts at k*Period). The engine owns a single
// event queue ordered by (time, sequence number), N simulated CPUs with a
// periodic tick, timers, softirqs, wait queues and completions, and tasks that
// run kernel code written in ordinary straight-line Go.
//
// Invariants:
//   - Exactly one piece of model code runs at a time: either the engine loop
//     (events, interrupts, softirqs) or one task goroutine, which holds the
//     baton until it blocks, charges time past the next event, or ends. So a
//     run needs no locks and is exactly repeatable: the same Config (including
//     Seed) and the same model code give the same virtual times, always.
//   - Virtual time never goes backwards, and no wall-clock reading enters it.
//   - Model code spends CPU time only through explicit charges (Task.Charge,
//     CPU.Steal); everything else is instantaneous.
//   - A CPU stuck in kernel mode without a context switch past
//     Config.Watchdog, as the kernel's soft-lockup detector counts it
//     (watchdog.go), stops the run with a *LockupError, so a livelock is
//     reported, never a hang.
//
// Engine methods may be called only from model code (event handlers or
// tasks), never from other goroutines.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Time is virtual time in nanoseconds since the start of a run.
type Time int64

// Common durations.
const (
	Nanosecond  Time = 1
	Microsecond      = 1000 * Nanosecond
	Millisecond      = 1000 * Microsecond
	Second           = 1000 * Millisecond
)

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// String renders t with a unit, e.g. "3.000s" or "250.123ms".
func (t Time) String() string {
	switch {
	case t >= Second || t <= -Second:
		return fmt.Sprintf("%.3fs", t.Seconds())
	case t >= Millisecond || t <= -Millisecond:
		return fmt.Sprintf("%.3fms", float64(t)/float64(Millisecond))
	case t >= Microsecond || t <= -Microsecond:
		return fmt.Sprintf("%.3fµs", float64(t)/float64(Microsecond))
	}
	return fmt.Sprintf("%dns", int64(t))
}

// Preempt is the kernel's preemption model.
type Preempt int

// Preemption models.
const (
	// PreemptNone (CONFIG_PREEMPT_NONE): a task in kernel mode runs until
	// it blocks, returns to user mode, or calls cond_resched().
	PreemptNone Preempt = iota
	// PreemptVoluntary (CONFIG_PREEMPT_VOLUNTARY): as none, plus every
	// might_sleep() is a preemption point.
	PreemptVoluntary
	// PreemptFull (CONFIG_PREEMPT): kernel code is preemptible wherever
	// preemption is not disabled.
	PreemptFull
	// PreemptRT (CONFIG_PREEMPT_RT): as full for the scheduler; the
	// kernel line's RT configuration moves RCU's core work into real-time
	// rcuc/N threads (netdev.Profile.RCUConfig) and softirqs out of
	// interrupt exit: timers to ktimers/N where the line has it, the rest
	// to ksoftirqd (SoftirqLimits.Threaded, netdev.Profile.SimConfig).
	PreemptRT
	// PreemptLazy (CONFIG_PREEMPT_LAZY, 6.13 on, 7c70cb94d29c): as full,
	// except that an ordinary task woken where another ordinary task runs
	// only sets the lazy flag, which the next tick or the return to user
	// mode honours (lazy.go). A real-time wakeup preempts at once.
	PreemptLazy
)

// Preemptive reports whether kernel code is preempted where preemption is
// enabled (full, rt and lazy).
func (p Preempt) Preemptive() bool { return p >= PreemptFull }

var preemptNames = []string{"none", "voluntary", "full", "rt", "lazy"}

func (p Preempt) String() string {
	if int(p) < len(preemptNames) {
		return preemptNames[p]
	}
	return fmt.Sprintf("Preempt(%d)", int(p))
}

// ParsePreempt parses "none", "voluntary", "full", "rt" or "lazy".
func ParsePreempt(s string) (Preempt, error) {
	for i, n := range preemptNames {
		if s == n {
			return Preempt(i), nil
		}
	}
	return 0, fmt.Errorf("unknown preemption model %q (want none, voluntary, full, rt or lazy)", s)
}

// Config describes the simulated machine.
type Config struct {
	HZ      int     // timer frequency; jiffy = 1e9/HZ ns
	CPUs    int     // number of CPUs
	Preempt Preempt // preemption model
	Seed    uint64  // seed of the run's only random source
	// Watchdog is the soft-lockup threshold, in whole seconds (the
	// kernel's softlockup_thresh, or 2*watchdog_thresh). Zero means
	// DefaultWatchdog; negative disables the detector (and its per-CPU
	// thread).
	Watchdog Time
	// Lockup is how the detector checks (see watchdog.go).
	Lockup LockupDesign
	// Timers is the timer wheel of the kernel line: when a timer armed for
	// jiffy E fires (see timer.go).
	Timers TimerWheel
	// MutexHandoff: a mutex's first waiter that finds the lock taken has
	// the next unlock hand it over (4.10 on; mutex.go).
	MutexHandoff bool
	// MsleepExact: msleep(ms) sleeps msecs_to_jiffies(ms) jiffies (6.13+);
	// otherwise one jiffy more, as older kernels did.
	MsleepExact bool
	// Softirq bounds one __do_softirq run before the rest is left to
	// ksoftirqd (see softirq.go).
	Softirq SoftirqLimits
	// RTLazy: a PREEMPT_RT kernel in PREEMPT_DYNAMIC's lazy mode (6.13
	// on, 35772d627b55): its ordinary tasks are preempted lazily, as under
	// PreemptLazy (lazy.go).
	RTLazy bool
	// HRTick: the scheduler ends an ordinary task's slice with a
	// high-resolution timer (the HRTICK feature) rather than at the next
	// tick (hrtick.go).
	HRTick bool
	// Jitter is the relative spread of charged costs: a charge of d costs a
	// uniform amount in [d*(1-Jitter), d*(1+Jitter)]. Zero means exact.
	Jitter float64
	// NoPhases turns phase attribution off (SetPhase does nothing), to
	// measure what the attribution itself costs.
	NoPhases bool
	// EveryTick runs every tick of a spinning task as an event, instead of
	// fast-forwarding over the ones its hooks certify steady (steady.go):
	// the same results, slower; for the tests that show they are the same.
	EveryTick bool
	// Stalls is the machine's stall process: times when a CPU runs
	// nothing at all (a virtual CPU its host does not run; stall.go). The
	// zero value has none.
	Stalls Stalls
	// WakeLatency is how long a task woken onto another, idle CPU takes
	// to start there beyond the context switch: the waker's reschedule IPI
	// and the idle CPU's way out of its idle state (on a virtual machine,
	// the host's wake-up of the vCPU thread). A calibrated machine's is
	// the median of the wake-ups calibrate timed (a thread blocked on an
	// idle CPU woken through a pipe, stallprobe.Wakeups); zero (the
	// built-in machine, or a table written before it was kept) is none. A
	// wake-up from the CPU itself (its own task or interrupt) pays none.
	WakeLatency Time
	// TickLateness is how late the machine's tick interrupts arrive: each
	// tick of each CPU takes one of these, each as likely (ticklate.go);
	// ascending. Empty (the built-in machine) is on time.
	TickLateness []Time
	// Costs of the engine's own operations.
	ContextSwitch Time // one task switch on a CPU
	TickCost      Time // one tick interrupt, without the softirqs it raises
}

// Validate checks the machine description.
func (c Config) Validate() error {
	switch {
	case c.HZ < 1 || c.HZ > 10000:
		return fmt.Errorf("HZ must be between 1 and 10000, got %d", c.HZ)
	case c.CPUs < 1 || c.CPUs > 4096:
		return fmt.Errorf("CPU count must be between 1 and 4096, got %d", c.CPUs)
	case c.Preempt < PreemptNone || c.Preempt > PreemptLazy:
		return fmt.Errorf("unknown preemption model %d", c.Preempt)
	case c.RTLazy && c.Preempt != PreemptRT:
		return fmt.Errorf("RTLazy is a PREEMPT_RT kernel's lazy mode, not --preempt %s", c.Preempt)
	case c.Watchdog > 0 && (c.Watchdog < Second || c.Watchdog%Second != 0):
		return fmt.Errorf("watchdog threshold %v must be whole seconds, at least 1s (or negative for none)", c.Watchdog)
	case c.Lockup != LockupSampled && c.Lockup != LockupTick:
		return fmt.Errorf("unknown soft-lockup design %d", c.Lockup)
	case c.Timers != TimerCascade && c.Timers != TimerLevels:
		return fmt.Errorf("unknown timer wheel %d", c.Timers)
	case c.Softirq.MaxRestart < 0 || c.Softirq.MaxTime < 0:
		return fmt.Errorf("softirq limits must not be negative")
	case c.WakeLatency < 0 || c.WakeLatency > Second:
		return fmt.Errorf("wake-up latency must be in [0, 1s], got %v", c.WakeLatency)
	case c.Jitter < 0 || c.Jitter >= 1:
		return fmt.Errorf("jitter must be in [0, 1), got %g", c.Jitter)
	}
	if err := validateTickLateness(c.TickLateness); err != nil {
		return err
	}
	return c.Stalls.Validate()
}

// DefaultWatchdog is the modern soft-lockup threshold: 2 * watchdog_thresh.
const DefaultWatchdog = 20 * Second

// Engine runs one simulation.
type Engine struct {
	cfg    Config
	period Time // one jiffy
	now    Time
	seq    uint64
	queue  eventQueue
	rng    *rand.Rand
	pcg    *rand.PCG // rng's source, drawn from directly by Jitter
	cpus   []*CPU

	live     int // tasks that keep the run going (non-daemon, not ended)
	tasks    []*Task
	nextTask int
	hooks    []Hooks
	// trace, when set, records the run (trace.go).
	trace *Trace
	// curCPU is the CPU whose code (a task or an interrupt) runs now, as
	// far as the engine knows: the waker of a wake-up.
	curCPU   *CPU
	softirqs [nrSoftirqs]func(*CPU)
	stopErr  error
	logf     func(t Time, format string, args ...any)
	stats    Stats
	// steady: spins may fast-forward over steady ticks (!Config.EveryTick);
	// skipped counts the ticks they skipped.
	steady  bool
	skipped int64
	// interrupt is polled every interruptEvery events; a non-nil error
	// stops the run (a user's ^C). It never influences virtual results.
	interrupt func() error
}

const interruptEvery = 4096

// Stats are engine-wide counters.
type Stats struct {
	ContextSwitches int64
	Ticks           int64
	Wakeups         int64
	Sleeps          int64
	Preemptions     int64
	// NewidlePulls counts the tasks a CPU about to go idle took from
	// another CPU's run queue (balance.go).
	NewidlePulls int64
	Events       int64
}

// Hooks receive the scheduler events that other subsystems (RCU) build on.
// All run on the engine's loop with the baton held.
type Hooks interface {
	// Tick runs in the tick interrupt of cpu; mode is what the tick
	// interrupted.
	Tick(cpu *CPU, mode Mode)
	// ContextSwitch runs when cpu switches tasks (or goes idle).
	ContextSwitch(cpu *CPU)
	// NeedsTick reports whether an idle cpu must keep its tick (the
	// kernel's rcu_needs_cpu); otherwise the tick stops (NO_HZ idle).
	NeedsTick(cpu *CPU) bool
}

// New creates an engine; the config must be valid.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Watchdog == 0 {
		cfg.Watchdog = DefaultWatchdog
	}
	if cfg.Softirq.MaxRestart == 0 {
		cfg.Softirq.MaxRestart = DefaultSoftirqRestart
	}
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	e := &Engine{
		cfg:    cfg,
		period: Time(int64(Second) / int64(cfg.HZ)),
		rng:    rand.New(pcg),
		pcg:    pcg,
		steady: !cfg.EveryTick,
	}
	for i := range cfg.CPUs {
		c := &CPU{e: e, ID: i}
		c.timers = newTimerQueue()
		e.cpus = append(e.cpus, c)
	}
	if cfg.Watchdog > 0 {
		e.startWatchdogs()
	}
	return e, nil
}

// Config returns the machine description.
func (e *Engine) Config() Config { return e.cfg }

// Now returns the current virtual time.
func (e *Engine) Now() Time { return e.now }

// Period returns the length of one jiffy.
func (e *Engine) Period() Time { return e.period }

// Jiffies returns the current jiffies count.
func (e *Engine) Jiffies() int64 { return int64(e.now / e.period) }

// JiffyStart returns the time at which jiffy j begins.
func (e *Engine) JiffyStart(j int64) Time { return Time(j) * e.period }

// JiffiesAt returns the jiffies count at time t.
func (e *Engine) JiffiesAt(t Time) int64 { return int64(t / e.period) }

// MsecsToJiffies rounds ms up to jiffies, as msecs_to_jiffies does.
func (e *Engine) MsecsToJiffies(ms int64) int64 {
	return (ms*int64(e.cfg.HZ) + 999) / 1000
}

// CPUs returns the simulated CPUs.
func (e *Engine) CPUs() []*CPU { return e.cpus }

// CPU returns CPU i.
func (e *Engine) CPU(i int) *CPU { return e.cpus[i] }

// Rand returns the run's random source. Draw from it only in model code, so
// that the order of draws is fixed by the simulation itself.
func (e *Engine) Rand() *rand.Rand { return e.rng }

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats { return e.stats }

// AddHooks registers scheduler hooks.
func (e *Engine) AddHooks(h Hooks) { e.hooks = append(e.hooks, h) }

// SetLogger sets the function that receives kernel log messages (printk).
func (e *Engine) SetLogger(f func(t Time, format string, args ...any)) { e.logf = f }

// Printk logs a kernel message at the current virtual time.
func (e *Engine) Printk(format string, args ...any) {
	if e.logf != nil {
		e.logf(e.now, format, args...)
	}
}

// Jitter scales a cost by the configured random spread.
func (e *Engine) Jitter(d Time) Time {
	if e.cfg.Jitter == 0 || d <= 0 {
		return d
	}
	return jittered(d, e.cfg.Jitter, e.pcg.Uint64())
}

// jittered is d spread by jitter with the draw u: u as rand.Rand.Float64
// makes a float of it (the same draw, the same value, without the interface
// call), scaled to [1-jitter, 1+jitter).
func jittered(d Time, jitter float64, u uint64) Time {
	f := 1 + jitter*(2*(float64(u<<11>>11)/(1<<53))-1)
	return Time(float64(d) * f)
}

// ---- events ----

// Event is a scheduled action; Cancel prevents it from running.
type Event struct {
	at        Time
	seq       uint64
	fn        func()
	cancelled bool
	// background: a periodic event of the machine itself (the soft-lockup
	// detector's hrtimer), which cannot end a wait: a run with nothing but
	// such events left is deadlocked.
	background bool
	index      int
}

// Cancel stops the event from running; cancelling twice is harmless.
func (ev *Event) Cancel() {
	if ev != nil {
		ev.cancelled = true
	}
}

// At returns when the event is due.
func (ev *Event) At() Time { return ev.at }

// eventQueue is a binary min-heap of the pending events, ordered by (at,
// seq); every event in it has index set to its position, and an event out
// of it has index -1. Sequence numbers are unique, so the order of the
// events run does not depend on how the heap breaks ties.
type eventQueue []*Event

func evLess(a, b *Event) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func (q eventQueue) peek() *Event { return q[0] }
func (q eventQueue) empty() bool  { return len(q) == 0 }

func (q *eventQueue) add(ev *Event) {
	ev.index = len(*q)
	*q = append(*q, ev)
	q.up(ev.index)
}

// drop removes and returns the earliest event.
func (q *eventQueue) drop() *Event {
	h := *q
	ev := h[0]
	n := len(h) - 1
	if n > 0 {
		h[0] = h[n]
		h[0].index = 0
	}
	h[n] = nil
	*q = h[:n]
	if n > 1 {
		q.down(0)
	}
	ev.index = -1
	return ev
}

// remove takes the event at position i out of the heap.
func (q *eventQueue) remove(i int) {
	h := *q
	ev := h[i]
	n := len(h) - 1
	if i != n {
		h[i] = h[n]
		h[i].index = i
	}
	h[n] = nil
	*q = h[:n]
	if i != n {
		q.fix(i)
	}
	ev.index = -1
}

// fix restores the heap after the key of the event at position i changed.
func (q eventQueue) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}

func (q eventQueue) up(i int) {
	ev := q[i]
	for i > 0 {
		p := (i - 1) / 2
		if !evLess(ev, q[p]) {
			break
		}
		q[i] = q[p]
		q[i].index = i
		i = p
	}
	q[i] = ev
	ev.index = i
}

// down sifts the event at position i down; it reports whether it moved.
func (q eventQueue) down(i0 int) bool {
	n := len(q)
	ev := q[i0]
	i := i0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && evLess(q[r], q[l]) {
			c = r
		}
		if !evLess(q[c], ev) {
			break
		}
		q[i] = q[c]
		q[i].index = i
		i = c
	}
	q[i] = ev
	ev.index = i
	return i > i0
}

// At schedules fn to run at time t (not before now).
func (e *Engine) At(t Time, fn func()) *Event {
	ev := &Event{fn: fn}
	e.arm(ev, t)
	return ev
}

// arm schedules ev, which must not be pending, at time t (not before now)
// with the next sequence number, exactly as At schedules a new event: the
// engine's own recurring events (a CPU's tick, a task's charge and
// dispatch) are armed again and again rather than allocated each time.
func (e *Engine) arm(ev *Event, t Time) {
	if ev.index >= 0 && ev.index < len(e.queue) && e.queue[ev.index] == ev {
		panic("sim: arming an event that is pending")
	}
	if t < e.now {
		t = e.now
	}
	e.seq++
	ev.at, ev.seq, ev.cancelled = t, e.seq, false
	e.queue.add(ev)
}

// disarm takes a pending event out of the queue (an armed event's Cancel).
func (e *Engine) disarm(ev *Event) {
	if ev.index >= 0 && ev.index < len(e.queue) && e.queue[ev.index] == ev {
		e.queue.remove(ev.index)
	}
	ev.cancelled = true
}

// reschedule moves a pending event to time t, keeping its place among
// events of equal time by taking a new sequence number.
func (e *Engine) reschedule(ev *Event, t Time) {
	if ev.cancelled || ev.index < 0 || ev.index >= len(e.queue) || e.queue[ev.index] != ev {
		panic("sim: reschedule of an event that is not pending")
	}
	e.seq++
	ev.at, ev.seq = t, e.seq
	e.queue.fix(ev.index)
}

// After schedules fn to run d from now.
func (e *Engine) After(d Time, fn func()) *Event { return e.At(e.now+d, fn) }

// afterBackground schedules a background event (see Event.background).
func (e *Engine) afterBackground(d Time, fn func()) {
	e.After(d, fn).background = true
}

// AfterBackground schedules fn d from now as an event of the machine
// itself, which keeps no run going (see Event.background): a process of
// the machine's other work, such as its RCU callbacks (rcu/otherwork.go).
func (e *Engine) AfterBackground(d Time, fn func()) { e.afterBackground(d, fn) }

// onlyBackground reports whether every live event left is a background one.
func (e *Engine) onlyBackground() bool {
	for _, ev := range e.queue {
		if !ev.cancelled && !ev.background {
			return false
		}
	}
	return true
}

// nextEventAt returns the time of the earliest live event, or -1.
func (e *Engine) nextEventAt() Time {
	for !e.queue.empty() {
		ev := e.queue.peek()
		if !ev.cancelled {
			return ev.at
		}
		e.queue.drop()
	}
	return -1
}

// ---- running ----

// ErrStopped is wrapped by the error Run returns when Stop was called.
var ErrStopped = errors.New("simulation stopped")

// SetInterrupt installs a poll that can stop a run from outside the model
// (for example on SIGINT). It is consulted every few thousand events, so it
// cannot change any virtual time; it only ends the run early.
func (e *Engine) SetInterrupt(f func() error) { e.interrupt = f }

// Stop ends the run at the current time with err (wrapped in Run's result).
func (e *Engine) Stop(err error) {
	if e.stopErr == nil {
		e.stopErr = err
	}
}

// Run executes events until every non-daemon task has ended, the queue is
// empty, or the run is stopped (watchdog or Stop). Tasks still blocked when a
// run stops are unwound, so no goroutine outlives Run.
func (e *Engine) Run() error {
	for _, c := range e.cpus {
		c.ensureTick()
		c.startStalls()
	}
	for e.stopErr == nil && e.live > 0 {
		if e.nextEventAt() < 0 {
			e.stopErr = errors.New("simulation deadlocked: tasks are blocked and nothing is scheduled")
			break
		}
		ev := e.queue.drop()
		if ev.background && e.onlyBackground() {
			e.stopErr = errors.New("simulation deadlocked: tasks are blocked and nothing is scheduled")
			break
		}
		e.now = ev.at
		e.stats.Events++
		ev.fn()
		if e.interrupt != nil && e.stopErr == nil && e.stats.Events%interruptEvery == 0 {
			if err := e.interrupt(); err != nil {
				e.Stop(err)
			}
		}
	}
	e.unwind()
	return e.stopErr
}

// unwind terminates tasks that have not ended.
func (e *Engine) unwind() {
	for _, t := range e.tasks {
		if t.state != taskDead && t.started {
			t.killed = true
			t.stop()
		}
	}
}
