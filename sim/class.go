package sim

// Scheduling classes, as wakeup preemption and the pick of the next task
// see them. A task is ordinary (fair_sched_class: SCHED_NORMAL, CFS or
// EEVDF) or real-time (rt_sched_class: SCHED_FIFO at a priority), and the
// real-time class is above the fair one:
//   - A wakeup where a task of the other class runs preempts only when the
//     woken task's class is above the running one's (6.1.166
//     kernel/sched/core.c check_preempt_curr l.2177-2182; 6.18 wakeup_preempt
//     l.2208-2215, sched_class_above); the class's own rule is asked only
//     between tasks of one class. So an ordinary wakeup never preempts a
//     real-time task, and a real-time wakeup asks an ordinary task for the
//     CPU at once (resched_curr, not the lazy flag).
//   - Between real-time tasks the woken one preempts only at a higher
//     priority (6.1.166 kernel/sched/rt.c check_preempt_curr_rt
//     l.1722-1726; 6.18 wakeup_preempt_rt l.1614-1621): a SCHED_FIFO task
//     keeps the CPU from its equals until it sleeps.
//   - The next task is the first of the highest class that has one, and of
//     the highest priority within it (6.18 core.c __pick_next_task
//     l.5954-6000); a reschedule asked of a real-time task that nothing
//     outranks picks it again. A real-time task preempted by a higher one
//     stays at the head of its priority (it was never taken off its list;
//     enqueue_task_rt's ENQUEUE_HEAD, rt.c l.1347), an ordinary one goes
//     behind the tasks waiting.
// The model's real-time threads: rcuc/N, the RCU grace-period kthread and
// PREEMPT_RT's ktimers/N at SCHED_FIFO 1 (kernel/rcu/tree.c kthread_prio
// l.175, 1 with RCU_BOOST; kernel/softirq.c ktimerd_setup's
// sched_set_fifo_low l.1114), and the soft-lockup watchdog above them all
// (SCHED_FIFO 99 in 2.6.3x; the stopper class, above rt, since
// kernel/watchdog.c queues its work with stop_one_cpu_nowait, 6.18 l.766).

// Real-time priorities of the model's threads (higher runs first).
const (
	PrioFIFOLow  = 1  // sched_set_fifo_low, kthread_prio's default
	PrioWatchdog = 99 // the watchdog thread or stopper work
)

// outranks reports whether a may take the CPU from b under the class rule:
// a real-time task from an ordinary one, or from a real-time one of lower
// priority. Between two ordinary tasks it reports true: the fair class's
// own rule (the caller's) decides.
func outranks(a, b *Task) bool {
	if !b.rt {
		return true
	}
	return a.rt && a.prio > b.prio
}

// running is the task holding the CPU or about to (woken from an interrupt
// onto the idle CPU), or nil.
func (c *CPU) running() *Task {
	if c.curr != nil {
		return c.curr
	}
	return c.deferred
}

// queue puts t on the run queue in class order: real-time tasks by
// priority ahead of ordinary ones; t goes behind its equals, or, with
// head, ahead of them (a real-time task preempted by a higher one).
func (c *CPU) queue(t *Task, head bool) {
	i := len(c.runq)
	if t.rt {
		i = 0
		for i < len(c.runq) && c.runq[i].rt && (c.runq[i].prio > t.prio || !head && c.runq[i].prio == t.prio) {
			i++
		}
	}
	c.runq = append(c.runq, nil)
	copy(c.runq[i+1:], c.runq[i:])
	c.runq[i] = t
}

// setRT moves t into the real-time class at prio; a runnable t (a kthread
// just created and woken) moves to its place on the run queue and asks for
// the CPU as a woken one would (6.18 rt.c switched_to_rt l.2435-2436).
func (t *Task) setRT(prio int) {
	t.rt, t.prio = true, prio
	c := t.cpu
	if t.state != taskRunnable {
		return
	}
	for i, q := range c.runq {
		if q == t {
			c.runq = append(c.runq[:i], c.runq[i+1:]...)
			c.queue(t, false)
			c.wakeupPreempt(t)
			return
		}
	}
}

// wakeupPreempt is wakeup_preempt for t, just queued on c while another
// task holds it: nothing unless t outranks that task's class and priority;
// then the fair class's rule between ordinary tasks (the lazy flag in lazy
// mode, lazy.go), or a reschedule, taken at once where the running task is
// preemptible.
func (c *CPU) wakeupPreempt(t *Task) {
	if cur := c.running(); cur != nil && !outranks(t, cur) {
		return
	}
	if c.e.lazy() && c.lazyWakeup(t) {
		return
	}
	c.needResched = true
	if c.curr != nil && c.curr.Preemptible() && (c.curr.mode == ModeUser || c.e.cfg.Preempt.Preemptive()) {
		c.preempt()
	}
}
