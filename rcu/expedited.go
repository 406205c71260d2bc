package rcu

import "github.com/ndst-project/ndst/sim"

// synchronize_rcu_expedited, by line (Config.Expedited):
//   - ExpMigration (2.6.32 TREE_RCU, kernel/sched.c
//     synchronize_sched_expedited): empty without SMP; on SMP it wakes every
//     CPU's migration thread (real-time) and waits for each to run: at once
//     on an idle CPU or one in user mode, at the next schedule point of a
//     CPU in non-preemptible kernel code (the wake-up sets need_resched);
//     the caller's own CPU switches to its thread as the caller sleeps.
//   - ExpNormal (2.6.32 TREE_PREEMPT_RCU): synchronize_rcu.
//   - ExpCondResched (2.6.33 Tiny RCU): synchronize_sched, cond_resched().
//   - ExpIPI (modern, kernel/rcu/tree_exp.h): an IPI to each CPU that is
//     not quiescent; the handler reports at once from idle or user mode,
//     or, with preemptible RCU or a preempt count, from kernel code outside
//     any reader or preempt-disabled region; otherwise it sets need_resched
//     and the CPU reports at its next context switch. A kworker drives it,
//     so the caller sleeps even when every CPU was already quiescent.
// On one CPU with non-preemptible RCU the 2.6.3x variants are no-ops, and so
// is the modern one before 6.1 (rcu_blocking_is_gp): the property that made
// the 2009 expedited loop spin.

// expGP is one expedited grace period: the CPUs that were not quiescent when
// it started, and its caller waiting for them.
// With the worker (expworker.go) the worker waits in wq for the holdouts,
// and the caller in doneWQ until the worker has set done.
type expGP struct {
	holdout []bool
	pending int
	wq      sim.WaitQueue
	done    bool
	doneWQ  sim.WaitQueue
}

// SynchronizeExpedited waits for an expedited grace period. It reports
// whether it waited for one at all (false: a no-op in this configuration).
func (r *RCU) SynchronizeExpedited(t *sim.Task) bool {
	r.mustNotBeReader(t, "synchronize_rcu_expedited")
	exp := r.cfg.Expedited
	if r.cfg.NormalOnly && exp != ExpNone && exp != ExpNormal {
		// rcu_normal (rcu_gp_is_normal): the normal wait, which
		// rcu_expedited must not send back here.
		r.stats.ExpeditedGPs++
		r.synchronize(t, false)
		return true
	}
	switch exp {
	case ExpNone:
		panic("rcu: this kernel line has no synchronize_rcu_expedited (it first shipped in 2.6.32)")
	case ExpNormal:
		r.stats.ExpeditedGPs++
		r.Synchronize(t)
		return true
	case ExpCondResched:
		r.stats.ExpeditedNoops++
		t.CondResched()
		return false
	case ExpMigration, ExpIPI:
		if len(r.cpus) == 1 && (r.cfg.Expedited == ExpMigration || r.blockingIsGP()) {
			r.stats.ExpeditedNoops++ // empty on UP; rcu_blocking_is_gp
			return false
		}
	}
	r.stats.ExpeditedGPs++
	x := &expGP{holdout: make([]bool, len(r.cpus))}
	if r.cfg.Expedited == ExpIPI && r.cfg.ExpKthreadWorker {
		r.expViaWorker(t, x) // expworker.go
		return true
	}
	r.expSelect(t, x, false)
	switch {
	case x.pending > 0:
		r.exps = append(r.exps, x)
		x.wq.Wait(t, func() bool { return x.pending == 0 })
	default:
		// The kworker's round trip: the caller sleeps, so whatever else is
		// runnable on its CPU (the GP kthread) gets to run.
		t.Nanosleep(r.cfg.IPICost)
	}
	return true
}

// expSelect is sync_rcu_exp_select_cpus run by t: an IPI to every other
// CPU, and the CPUs not quiescent at this instant made holdouts. selfQS:
// t's own CPU counts as quiescent, as the CPU that runs the expedited GP's
// worker does (6.12 tree_exp.h l.362-364: raw_smp_processor_id() == cpu);
// otherwise it is t's caller's own CPU, in kernel code.
func (r *RCU) expSelect(t *sim.Task, x *expGP, selfQS bool) {
	me := t.CPU().ID
	for i, d := range r.cpus {
		if i != me {
			t.Charge(r.cfg.IPICost)
		}
		if i == me && selfQS || r.quiescentNow(d.cpu, i == me) {
			continue
		}
		x.holdout[i] = true
		x.pending++
		if i != me {
			d.cpu.SetNeedResched()
			if r.cfg.Expedited == ExpIPI {
				d.urgentQS = true // rcu_exp_need_qs (6.18 tree_exp.h l.725-734)
			}
		}
	}
}

// quiescentNow is the expedited handler's test: is the CPU in a QS at this
// instant? The caller's own CPU runs the caller, in kernel code; with the
// migration-thread design it is quiescent only once the caller sleeps.
func (r *RCU) quiescentNow(c *sim.CPU, self bool) bool {
	kernelQS := (r.cfg.Preemptible || r.cfg.PreemptCount) && r.cfg.Expedited == ExpIPI && r.readerFree(c)
	if self {
		return kernelQS
	}
	switch c.Mode() {
	case sim.ModeIdle, sim.ModeUser:
		return true
	}
	return kernelQS
}

// expReport reports a QS of d to every expedited GP waiting for it.
func (r *RCU) expReport(d *cpuData) {
	if len(r.exps) == 0 {
		return
	}
	id := d.cpu.ID
	var done []*expGP
	live := r.exps[:0:0]
	for _, x := range r.exps {
		if x.holdout[id] {
			x.holdout[id] = false
			x.pending--
		}
		if x.pending == 0 {
			done = append(done, x)
		} else {
			live = append(live, x)
		}
	}
	r.exps = live
	// Wake only after the list is consistent: a wake-up can switch a task
	// in, and that context switch reports a QS again.
	for _, x := range done {
		x.wq.WakeAll()
	}
}
