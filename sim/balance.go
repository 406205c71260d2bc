package sim

// Newly-idle balance: a CPU about to go idle first looks for an ordinary
// task waiting on another CPU's run queue and takes it. In the kernel,
// __schedule's pick of the next task lets each class from the previous
// task's down balance first (put_prev_task_balance); with nothing of the
// fair class to run, the fair class's balance runs sched_balance_newidle
// (6.18 kernel/sched/fair.c; idle_balance before 5.10's rename to
// newidle_balance), which pulls a runnable task from the busiest run queue
// of its domains when the root domain is overloaded (some CPU has more
// than one task runnable). The tasks that can move are those allowed on the
// CPU (the model's unbound tasks); a per-CPU kworker or kthread never
// moves. Real-time tasks are not taken here: the real-time class pulls
// only when a real-time task leaves a CPU (balance_rt's need_pull_rt_task
// compares with the previous task's priority), so one queued behind an
// ordinary task that will not yield waits for it, as in the kernel.
//
// Without this a task woken while every CPU was busy waited behind its
// CPU's current task even after the other CPU had gone idle: under
// preempt=none an expedited grace period's worker, queued behind the
// kworker running cleanup_net, waited out that work (16 ms) while the
// other CPU idled.
//
// What the model leaves out: the balance's own cost (sd->max_newidle_lb_cost,
// a few microseconds), its skip when the CPU's average idle is shorter than
// that cost, and cache-hotness (can_migrate_task's task_hot: a task that
// ran within sysctl_sched_migration_cost, 0.5 ms, stays); the periodic and
// nohz balances, which matter only for a task queued while no CPU was
// about to go idle, are not modelled either.

// pullOrdinary takes, for c, the first ordinary unbound task queued on the
// busiest other CPU that has one (the longest run queue, the
// lowest-numbered of equals), and reports whether it took one. The first
// is the one queued longest: the kernel's detach_tasks walks cfs_tasks
// from its tail, where the earliest enqueued task is.
func (e *Engine) pullOrdinary(c *CPU) bool {
	var src *CPU
	at := -1
	for _, o := range e.cpus {
		if o == c || src != nil && len(o.runq) <= len(src.runq) {
			continue
		}
		for i, t := range o.runq {
			if !t.rt && t.unbound {
				src, at = o, i
				break
			}
		}
	}
	if src == nil {
		return false
	}
	t := src.runq[at]
	src.runq = append(src.runq[:at], src.runq[at+1:]...)
	t.cpu = c
	e.stats.NewidlePulls++
	c.switchIn(t)
	return true
}
