package sim

// Lazy preemption (CONFIG_PREEMPT_LAZY, "sched: Add Lazy preemption model",
// 7c70cb94d29c, 6.13; x86 476e8583ca16), as read in 7.2.13
// kernel/sched/core.c:
//   - A wakeup of an ordinary (fair) task where another ordinary task runs
//     calls resched_curr_lazy (kernel/sched/fair.c wakeup_preempt_fair, and
//     update_curr's slice check), which in lazy mode sets only
//     TIF_NEED_RESCHED_LAZY: no preempt-count bit, so neither interrupt
//     exit nor preempt_enable() preempts for it, and no IPI to a remote
//     CPU (__resched_curr l.1196-1230; get_lazy_tif_bit l.1260-1266).
//   - The flag is honoured at the return to user mode
//     (exit_to_user_mode_loop tests both bits) and by schedule(), which
//     clears both; the next tick upgrades it to TIF_NEED_RESCHED
//     (sched_tick l.5811-5812), so the task is preempted at that tick's
//     interrupt exit at the latest.
//   - A real-time task woken above an ordinary one preempts at once
//     (wakeup_preempt l.2295-2305: resched_curr); an idle CPU is always
//     woken at once (__resched_curr upgrades the lazy bit for the idle
//     task).
//   - cond_resched() and might_resched() return 0 (the LAZY column of the
//     PREEMPT_DYNAMIC table above sched_dynamic_mode, l.7923-7966).
// The model: CPU.lazyResched is TIF_NEED_RESCHED_LAZY; needResched stays
// TIF_NEED_RESCHED with its preemption points. A PREEMPT_RT kernel in lazy
// mode (Config.RTLazy) preempts its ordinary tasks the same way.

// lazy reports whether the scheduler preempts ordinary tasks lazily.
func (e *Engine) lazy() bool { return e.cfg.Preempt == PreemptLazy || e.cfg.RTLazy }

// lazyWakeup is the fair class's wakeup_preempt in lazy mode for t queued
// on c while c.curr runs (the class rule, class.go, has let it through):
// it reports whether the wakeup is settled by the lazy flag; false leaves
// it to the immediate path (a real-time task woken, or an idle CPU's
// pending switch).
func (c *CPU) lazyWakeup(t *Task) bool {
	if t.rt || c.curr == nil {
		return false
	}
	c.setLazy()
	return true
}

// setLazy sets the lazy flag unless a full reschedule is already asked for
// (__resched_curr returns when TIF_NEED_RESCHED is set, l.1211-1212).
func (c *CPU) setLazy() {
	if !c.needResched {
		c.lazyResched = true
	}
}

// lazyTick is the head of sched_tick: a lazy flag set before this tick
// becomes a full reschedule, taken at the tick's interrupt exit.
func (c *CPU) lazyTick() {
	if c.lazyResched {
		c.needResched = true
	}
}

// reschedLazy is resched_curr_lazy on the CPU's own task (the tick's slice
// check): the lazy flag in lazy mode, a full reschedule otherwise.
func (c *CPU) reschedLazy() {
	if c.e.lazy() && c.curr != nil && !c.curr.rt {
		c.setLazy()
		return
	}
	c.needResched = true
}

// LazyResched reports whether the lazy flag is set.
func (c *CPU) LazyResched() bool { return c.lazyResched }

// returnToUser is exit_to_user_mode_loop's test of the lazy flag: the task
// going back to user mode lets a waiting task in first.
func (t *Task) returnToUser() {
	if t.cpu.lazyResched && t.cpu.curr == t && len(t.cpu.runq) > 0 {
		t.Schedule()
	}
}
