package sim

// The HRTICK scheduler feature (Config.HRTick): while more than one
// ordinary task is queued on a CPU, a high-resolution timer ends the
// running one's slice when its virtual deadline comes (hrtick_start_fair,
// armed from set_next_task_fair and hrtick_update on enqueue), and its
// handler reschedules at once (entity_tick with queued=1: resched_curr,
// not the lazy variant), instead of waiting for the tick's slice check.
// Read in 7.2.13: kernel/sched/features.h l.68-74 turn HRTICK on when
// CONFIG_HRTIMER_REARM_DEFERRED is set (Debian 7.2.13: yes); fair.c
// hrtick_start_fair l.7873-7907, entity_tick's queued branch l.6650-6658;
// core.c hrtick l.918-931. 6.18 has HRTICK off (features.h l.66).
//
// The model arms the timer for an ordinary task with an ordinary task
// waiting, at the end of its slice: tickSlice after it got the CPU, or,
// once that has passed, tickSlice after now (update_curr, called as the
// waiter is enqueued, gives a task past its deadline a new one:
// update_deadline). It drops the timer when the CPU switches.

// armHRTick arms the slice timer if the CPU needs one and has none.
func (c *CPU) armHRTick() {
	if !c.e.cfg.HRTick || c.hrtickEv != nil || c.curr == nil || c.curr.rt || !c.fairWaiting() {
		return
	}
	if c.hrtickFn == nil {
		c.hrtickFn = c.hrtick
	}
	end := c.lastSwitch + tickSlice
	if end <= c.e.now {
		end = c.e.now + tickSlice
	}
	c.hrtickEv = c.e.At(end, c.hrtickFn)
}

// dropHRTick cancels the slice timer (a switch: the next task gets its own).
func (c *CPU) dropHRTick() {
	if c.hrtickEv != nil {
		c.hrtickEv.Cancel()
		c.hrtickEv = nil
	}
}

// fairWaiting reports whether an ordinary task waits on the run queue.
func (c *CPU) fairWaiting() bool {
	for _, t := range c.runq {
		if !t.rt {
			return true
		}
	}
	return false
}

// hrtick is the timer's interrupt: the running task's slice is over.
func (c *CPU) hrtick() {
	if c.stalled() { // it fires when the stall ends (stall.go)
		c.hrtickEv = c.e.At(c.stallUntil, c.hrtickFn)
		return
	}
	c.hrtickEv = nil
	t := c.curr
	if t == nil || t.rt || !c.fairWaiting() {
		return
	}
	nested := c.inIRQWork()
	c.irqEnter()
	c.needResched = true
	c.irqExit(nested)
}
