package sim

import "fmt"

// The soft-lockup detector. Both designs the kernel has had reduce to one
// rule: a per-CPU thread of the highest priority is woken periodically, and a
// CPU whose thread has not run for the threshold is stuck. The thread gets
// the CPU only at a preemption point of whatever runs there (at once under
// full preemption, at cond_resched() or a sleep otherwise), so a kernel loop
// that never reaches one trips the detector.
//
//   - 2.6.31 (kernel/softlockup.c): the "watchdog/N" SCHED_FIFO thread is
//     woken from the tick once its timestamp is older than half of
//     softlockup_thresh, and the tick reports a lockup once it is older than
//     the threshold (Config.WatchdogKick = threshold/2).
//   - Modern kernels (kernel/watchdog.c): an hrtimer every
//     2*watchdog_thresh/5 queues the stopper work that touches the
//     timestamp; the lockup is reported at 2*watchdog_thresh (20 s by
//     default), so WatchdogKick = threshold/5.

// LockupError is the soft-lockup detector's report.
type LockupError struct {
	CPU   int
	Task  string
	Stuck Time // how long the CPU went without running its watchdog thread
	At    Time
}

func (e *LockupError) Error() string {
	return fmt.Sprintf("BUG: soft lockup - CPU#%d stuck for %ds! [%s] (at %v virtual)",
		e.CPU, int64(e.Stuck/Second), e.Task, e.At)
}

func (e *Engine) startWatchdogs() {
	for i := range e.cfg.CPUs {
		t := e.Go(fmt.Sprintf("watchdog/%d", i), i, true, watchdogThread)
		t.rt = true
	}
}

// watchdogThread touches its CPU's timestamp every time it runs.
func watchdogThread(t *Task) {
	for {
		t.cpu.touched = t.e.now
		t.Nanosleep(t.e.cfg.WatchdogKick)
	}
}

// checkLockup runs in the tick: a CPU whose watchdog thread has not run for
// the threshold, while a task holds it in kernel mode, is stuck. The run
// stops there (the kernel prints and, with softlockup_panic, panics; a
// livelocked emulated run has nothing more to say).
func (c *CPU) checkLockup() {
	t := c.curr
	if c.e.cfg.Watchdog < 0 || t == nil || t.mode != ModeKernel {
		return
	}
	if stuck := c.e.now - c.touched; stuck >= c.e.cfg.Watchdog {
		err := &LockupError{CPU: c.ID, Task: t.Name, Stuck: stuck, At: c.e.now}
		c.e.Printk("BUG: soft lockup - CPU#%d stuck for %ds! [%s:%d]", c.ID, int64(stuck/Second), t.Name, t.PID)
		c.e.Stop(err)
	}
}
