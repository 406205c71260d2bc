package rcu

import "github.com/ndst-project/ndst/sim"

// The expedited grace period's worker thread (Config.ExpKthreadWorker).
//
// synchronize_rcu_expedited() does not drive its grace period itself: it
// hands it to a worker and sleeps on rnp->exp_wq until the worker, at the
// end of rcu_exp_wait_wake, wakes it (6.1 kernel/rcu/tree_exp.h l.966-978,
// l.717; 6.12 l.980-992, l.696). Which worker, and on which CPU, differs by
// line:
//   - 6.1 (Debian's builds have no CONFIG_RCU_EXPERT, so no
//     CONFIG_RCU_EXP_KTHREAD, 6.1 kernel/rcu/Kconfig l.225-228): a work
//     item on rcu_gp_wq (tree_exp.h l.524-528), a per-CPU workqueue
//     (tree.c l.4871: no WQ_UNBOUND), so __queue_work puts it on the
//     calling CPU's pool (workqueue.c l.1450-1453) and a kworker bound to
//     that CPU runs it; its wake-up of the caller keeps the caller there
//     (a per-CPU kthread waking the task that queued its work,
//     kernel/sched/fair.c l.6952-6958). A local round trip, which
//     expedited.go models as one.
//   - 6.12 on (the commit was not identified; 6.12.19 and 6.18 read): a
//     kthread_work on rcu_exp_gp_kworker whatever the configuration
//     (6.12 tree_exp.h l.486-490; 6.18 l.495-499), one kernel thread,
//     "rcu_exp_gp_kthread_worker", created without a CPU (6.12 tree.c
//     l.4939-4952; SCHED_FIFO only with CONFIG_RCU_EXP_KTHREAD). The
//     scheduler places it like any unbound task (select_task_rq_fair:
//     wake_affine_idle, select_idle_sibling, 6.12 fair.c l.7429-7452,
//     l.7915-): while its caller still runs, onto another CPU that is idle.
//     It runs sync_rcu_exp_select_cpus there (with one leaf rcu_node, up to
//     16 CPUs, directly, l.496-511), its own CPU counting as quiescent
//     (l.362-364) and the caller's, idle once the caller sleeps, needing no
//     IPI; then it wakes the caller back on the caller's CPU, idle too. On
//     a machine whose other CPU is idle each expedited grace period is two
//     wake-ups of an idle CPU from another (sim.Config.WakeLatency each).
//     Traced on this project's 6.18 host (2 CPUs; `teardowntrace placement`
//     of a perf trace of `ndst netns del 1 40`, docs/kernel-modern-sources.md
//     §2.6), the worker mostly went to the waking CPU instead, with the other
//     one idle: 47 of 54 wake-ups right after the namespaces' create, 40 of
//     59 three seconds after it. The likeliest reason is SIS_UTIL (6.0 on):
//     select_idle_cpu scans no CPU while nr_idle_scan is 0, which periodic
//     load balancing leaves after a busy spell and does not update while the
//     CPUs idle (6.18 kernel/sched/fair.c l.7761-7769, l.11021-11090). The
//     model does not have it: its two wake-ups are the worst case, and why
//     its namespace deletes are slower than this host's.
//
// The worker is a task of the model (sim.Engine.GoUnbound), created at the
// first expedited GP as that GP's wake-up of it; it runs the queued GPs one
// at a time (kthread_worker_fn), which also serialises them as exp_mutex
// does.

// expWorker is the worker thread and its queue.
type expWorker struct {
	task *sim.Task
	work []*expGP
	wq   sim.WaitQueue
}

// expViaWorker queues x for the worker, wakes it and waits for its end
// (synchronize_rcu_expedited_queue_work, then wait_event on exp_wq).
func (r *RCU) expViaWorker(t *sim.Task, x *expGP) {
	w := &r.expWorker
	w.work = append(w.work, x)
	if w.task == nil {
		w.task = r.e.GoUnbound("rcu_exp_gp_kthread_worker", t.CPU().ID, true, r.expWorkerRun)
	} else {
		w.wq.WakeAll()
	}
	x.doneWQ.Wait(t, func() bool { return x.done })
}

// expWorkerRun is the worker's loop: wait_rcu_exp_gp for each queued GP
// (rcu_exp_sel_wait_wake: select the CPUs, wait for the holdouts, wake the
// caller).
func (r *RCU) expWorkerRun(k *sim.Task) {
	w := &r.expWorker
	for {
		w.wq.Wait(k, func() bool { return len(w.work) > 0 })
		x := w.work[0]
		w.work = w.work[1:]
		r.expSelect(k, x, true)
		if x.pending > 0 {
			r.exps = append(r.exps, x)
			x.wq.Wait(k, func() bool { return x.pending == 0 })
		}
		x.done = true
		x.doneWQ.WakeAll()
	}
}
