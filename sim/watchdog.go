package sim

import "fmt"

// The soft-lockup detector. Both designs the kernel has had share two rules:
// the timestamps are the CPU clock in units of 2^30 ns (get_timestamp:
// cpu_clock() >> 30, "2^30ns == 1.074s"), and a CPU is reported only when
// the unit count now *exceeds* the one its watchdog work last stored by more
// than the threshold (in seconds, compared with the units as they are). The
// watchdog work is done by a per-CPU thread of the highest priority, which
// gets the CPU only at a preemption point of whatever runs there (at once
// under full preemption, at cond_resched() or a sleep otherwise), so a
// kernel loop that never reaches one trips the detector.
//
//   - LockupTick, 2.6.31-2.6.3x (kernel/softlockup.c, read at 2.6.31.14
//     l.30, l.64-67, l.104-166, l.171-198): the "watchdog/N" thread
//     (SCHED_FIFO 99) stores the timestamp and sleeps until woken; every
//     tick (run_local_timers -> softlockup_tick) wakes it once the units
//     exceed the stored ones by more than softlockup_thresh/2 (60/2 = 30),
//     and reports once they exceed them by more than softlockup_thresh
//     (60). With the stamp taken anywhere in a unit, the wake-up comes
//     31 units (33.3 s) after the start of that unit, so 32.2-33.3 s after
//     the thread last ran, and the report 61 units later: 64.4-65.5 s.
//   - LockupSampled, modern kernels (kernel/watchdog.c, read at 5.10 l.240,
//     l.298-308, l.338-363 and 6.18 l.601-637, l.690-720, l.746-875): a
//     per-CPU hrtimer every sample_period = 2*watchdog_thresh*NSEC_PER_SEC/5
//     (4 s) queues softlockup_fn on the CPU's stopper thread, unless the
//     last one has not run yet, and then checks: a report when the units
//     exceed those the stopper work last stored by more than
//     2*watchdog_thresh (20). So the report comes at the first 4 s sample
//     more than 21 units (21.5-22.5 s) after the stopper last ran: 22-26 s.
// The threshold is Config.Watchdog in whole seconds; the message prints the
// unit difference as seconds, as the kernel does.

// LockupDesign is how the soft-lockup detector checks (see above).
type LockupDesign int

const (
	// LockupSampled: a 4 s hrtimer queues the stopper work and checks
	// (modern kernel/watchdog.c).
	LockupSampled LockupDesign = iota
	// LockupTick: every tick wakes the thread at half the threshold and
	// checks (2.6.3x kernel/softlockup.c).
	LockupTick
)

// lockupShift is get_timestamp's >> 30.
const lockupShift = 30

// lockupUnits is get_timestamp: the clock in 2^30 ns units.
func lockupUnits(t Time) int64 { return int64(t) >> lockupShift }

// LockupError is the soft-lockup detector's report.
type LockupError struct {
	CPU  int
	Task string
	// Units is the kernel's "stuck for %us": timestamp units (2^30 ns)
	// since the watchdog work last ran, printed as seconds.
	Units int64
	// Stuck is how long, in virtual time, the CPU went without running its
	// watchdog work.
	Stuck Time
	At    Time
}

func (e *LockupError) Error() string {
	return fmt.Sprintf("BUG: soft lockup - CPU#%d stuck for %ds! [%s] (at %v virtual)", e.CPU, e.Units, e.Task, e.At)
}

// watchdogThresh is the threshold in seconds (= timestamp units).
func (e *Engine) watchdogThresh() int64 { return int64(e.cfg.Watchdog / Second) }

// watchdogSample is the modern detector's hrtimer period.
func (e *Engine) watchdogSample() Time { return e.cfg.Watchdog / 5 }

// LockupBound is the longest a CPU can be stuck before the detector reports
// it, from the moment its watchdog work last ran (0 without a detector):
// threshold+2 units, plus one sample period for the hrtimer design.
func (e *Engine) LockupBound() Time {
	if e.cfg.Watchdog <= 0 {
		return 0
	}
	b := Time(e.watchdogThresh()+2) << lockupShift
	if e.cfg.Lockup == LockupSampled {
		b += e.watchdogSample()
	}
	return b
}

func (e *Engine) startWatchdogs() {
	for i := range e.cfg.CPUs {
		c := e.cpus[i]
		c.watchdog = e.Go(fmt.Sprintf("watchdog/%d", i), i, true, watchdogThread)
		c.watchdog.setRT(PrioWatchdog)
		if e.cfg.Lockup == LockupSampled {
			c.sampleFn = c.watchdogSampleTimer
			e.afterBackground(e.watchdogSample(), c.sampleFn)
		}
	}
}

// watchdogThread stores its CPU's timestamp each time it runs, then sleeps
// until the detector wakes it again (2.6.31's watchdog(); the modern
// stopper work softlockup_fn, queued by the hrtimer).
func watchdogThread(t *Task) {
	c := t.cpu
	for {
		c.touched = t.e.now
		c.touchedUnits = lockupUnits(t.e.now)
		c.watchdogKicked = false
		gen := t.prepareSleep()
		c.watchdogGen = gen
		t.block()
	}
}

// kickWatchdog wakes the CPU's watchdog thread if it is sleeping.
func (c *CPU) kickWatchdog() {
	if c.watchdogKicked {
		return
	}
	c.watchdogKicked = true
	c.watchdog.wakeIf(c.watchdogGen)
}

// checkLockup is 2.6.3x's softlockup_tick, run in every tick.
func (c *CPU) checkLockup() {
	if c.e.cfg.Watchdog <= 0 || c.e.cfg.Lockup != LockupTick {
		return
	}
	thresh := c.e.watchdogThresh()
	now := lockupUnits(c.e.now)
	if now > c.touchedUnits+thresh/2 {
		c.kickWatchdog()
	}
	if now > c.touchedUnits+thresh {
		c.reportLockup(now)
	}
}

// watchdogSampleTimer is the modern watchdog_timer_fn: queue the stopper
// work unless the last one is still pending, then check.
func (c *CPU) watchdogSampleTimer() {
	c.e.afterBackground(c.e.watchdogSample(), c.sampleFn)
	c.kickWatchdog()
	if now := lockupUnits(c.e.now); now > c.touchedUnits+c.e.watchdogThresh() {
		c.reportLockup(now)
	}
}

// reportLockup prints the kernel's message for the task holding the CPU and
// stops the run (the kernel goes on, or panics with softlockup_panic; a
// livelocked emulated run has nothing more to say). A CPU that is idle or
// in user mode cannot be stuck: its watchdog work runs as soon as it is
// woken.
func (c *CPU) reportLockup(now int64) {
	t := c.curr
	if t == nil || t.mode != ModeKernel {
		return
	}
	units := now - c.touchedUnits
	err := &LockupError{CPU: c.ID, Task: t.Name, Units: units, Stuck: c.e.now - c.touched, At: c.e.now}
	c.e.Printk("BUG: soft lockup - CPU#%d stuck for %ds! [%s:%d]", c.ID, units, t.Name, t.PID)
	c.e.Stop(err)
}
