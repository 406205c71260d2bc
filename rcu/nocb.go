package rcu

import (
	"fmt"

	"github.com/ndst-project/ndst/sim"
)

// Offloaded callbacks (CONFIG_RCU_NOCB_CPU with rcu_nocbs= or nohz_full=),
// read in 6.1 and 6.18 kernel/rcu/tree_nocb.h and tree.c. An offloaded
// CPU's callbacks are not advanced or invoked by its own RCU softirq
// (rcu_core, __note_gp_changes and rcu_report_qs_rdp skip them; rcu_pending
// and rcu_needs_cpu ignore them); two kinds of kthread do it instead:
//   - rcuog/N, one per group of int_sqrt(nr_cpu_ids) CPUs
//     (rcu_organize_nocb_kthreads), led by the group's first offloaded CPU
//     (nocb_gp_wait): woken when a callback arrives on an empty list
//     (__call_rcu_nocb_wake) or by rcu_barrier(), it advances and
//     accelerates each CPU's callbacks, asks for the grace period they need
//     itself (no waiting for a tick's softirq), wakes the rcuo kthread of a
//     CPU whose callbacks are ready, and sleeps until that grace period
//     ends: rcu_gp_cleanup wakes it (rcu_nocb_gp_cleanup);
//   - rcuop/N (rcuos/N without preemptible RCU), one per offloaded CPU
//     (nocb_cb_wait), invokes the ready callbacks in task context with no
//     batch limit, calling cond_resched() between them.
// So what rcu_barrier() waits for on an offloaded CPU is its barrier
// callback's grace period, the rcuog wake-up at its end and the rcuo
// kthread's turn on some CPU, instead of the CPU's next tick and softirq.
// The kthreads are not bound to a CPU (housekeeping affinity). Not
// modelled: the non-lazy bypass of call_rcu floods
// (nocb_nobypass_lim_per_jiffy) and rcu_nocb_poll.

// nocbCPU is one offloaded CPU's state.
type nocbCPU struct {
	group *nocbGroup
	cb    *sim.Task // rcuo
	cbWQ  sim.WaitQueue
	// bypass are the lazy callbacks held back (lazy.go), queued since
	// bypassFirst (jiffies).
	bypass      []func()
	bypassFirst int64
}

// nocbGroup is one rcuog kthread and its CPUs.
type nocbGroup struct {
	cpus []*cpuData
	task *sim.Task
	wq   sim.WaitQueue
	// wake is !nocb_gp_sleep: something for rcuog to look at.
	wake bool
	// waitSeq is the grace period rcuog sleeps for (0: none).
	waitSeq uint64
	// lazyTimer is the deferred lazy wake-up (lazy.go).
	lazyTimer *sim.Timer
}

// checkNoCB refuses offloading where the model has no such thing.
func checkNoCB(cfg Config, ncpus int) error {
	any := false
	for _, o := range cfg.NoCB {
		any = any || o
	}
	switch {
	case !any:
		return nil
	case len(cfg.NoCB) > ncpus:
		return fmt.Errorf("rcu: %d CPUs offloaded on a machine of %d", len(cfg.NoCB), ncpus)
	case cfg.Flavor != Tree || !cfg.GPKthread:
		return fmt.Errorf("rcu: offloaded callbacks need modern Tree RCU (CONFIG_RCU_NOCB_CPU)")
	}
	return nil
}

// nocbStride is rcu_nocb_gp_stride's default: int_sqrt(nr_cpu_ids).
func nocbStride(n int) int {
	s := 1
	for (s+1)*(s+1) <= n {
		s++
	}
	return s
}

// startNoCB spawns the rcuog and rcuo kthreads of the offloaded CPUs.
func (r *RCU) startNoCB() {
	stride := nocbStride(len(r.cpus))
	var g *nocbGroup
	next := 0 // the first CPU of the next group
	for _, d := range r.cpus {
		if !d.offloaded {
			continue
		}
		if d.cpu.ID >= next {
			g = &nocbGroup{}
			r.nocbGroups = append(r.nocbGroups, g)
			next = (d.cpu.ID/stride + 1) * stride
			gg := g
			g.task = r.e.Go(fmt.Sprintf("rcuog/%d", d.cpu.ID), d.cpu.ID, true, func(t *sim.Task) { r.nocbGPKthread(gg, t) })
			g.task.SetUnbound()
		}
		d.nocb = &nocbCPU{group: g}
		g.cpus = append(g.cpus, d)
		flavour := "s"
		if r.cfg.Preemptible {
			flavour = "p"
		}
		dd := d
		d.nocb.cb = r.e.Go(fmt.Sprintf("rcuo%s/%d", flavour, d.cpu.ID), d.cpu.ID, true, func(t *sim.Task) { r.nocbCBKthread(dd, t) })
		d.nocb.cb.SetUnbound()
	}
}

// pendCBs reports whether callbacks wait for a grace period (not DONE).
func pendCBs(d *cpuData) bool { return !d.cbs.restEmpty(segDone) }

// nocbQueue is call_rcu on an offloaded CPU: a lazy callback goes to the
// bypass list; any other first flushes the bypass into the list (a
// non-lazy callback ends the laziness of the ones before it), joins it and
// wakes rcuog if nothing was waiting before.
func (r *RCU) nocbQueue(d *cpuData, fn func(), lazy bool) {
	r.stats.CallbacksQueued++
	if lazy {
		r.lazyQueue(d, fn)
		return
	}
	r.flushBypass(d)
	wasAllDone := !pendCBs(d)
	d.cbs.append(fn)
	if wasAllDone {
		r.nocbWake(d.nocb.group)
	}
}

// nocbWake is wake_nocb_gp.
func (r *RCU) nocbWake(g *nocbGroup) {
	g.wake = true
	g.wq.WakeAll()
}

// nocbGPEnded is rcu_nocb_gp_cleanup: wake the rcuog kthreads sleeping for
// a grace period that has now ended.
func (r *RCU) nocbGPEnded(completed uint64) {
	for _, g := range r.nocbGroups {
		if g.waitSeq != 0 && g.waitSeq <= completed {
			g.wq.WakeAll()
		}
	}
}

// nextGP is the grace period the oldest waiting callbacks need (0: none).
func nextGP(l *cblist) uint64 {
	for s := segWait; s < segNext; s++ {
		if l.segLen(s) > 0 {
			return l.gp[s]
		}
	}
	return 0
}

// nocbGPKthread is rcuog's loop (nocb_gp_wait).
func (r *RCU) nocbGPKthread(g *nocbGroup, t *sim.Task) {
	tr := r.impl.(*tree)
	for {
		t.Charge(r.cfg.KthreadCost)
		g.wake = false
		var wait uint64
		for _, d := range g.cpus {
			r.lazyFlushDue(d)
			advance(&d.cbs, tr.completed)
			if !d.cbs.restEmpty(segNextReady) && accelerate(&d.cbs, tr.gpNum+1) {
				tr.startThisGP(tr.gpNum + 1)
			}
			if s := nextGP(&d.cbs); s != 0 && (wait == 0 || s < wait) {
				wait = s
			}
			if d.cbs.ready() {
				d.nocb.cbWQ.WakeAll()
			}
		}
		r.lazyArm(g)
		g.waitSeq = wait
		if wait != 0 {
			g.wq.Wait(t, func() bool { return tr.completed >= wait || g.wake })
		} else {
			g.wq.Wait(t, func() bool { return g.wake })
		}
		g.waitSeq = 0
	}
}

// nocbCBKthread is rcuo's loop (nocb_cb_wait): invoke what is ready, with
// cond_resched() between callbacks, then let rcuog look again.
func (r *RCU) nocbCBKthread(d *cpuData, t *sim.Task) {
	tr := r.impl.(*tree)
	for {
		d.nocb.cbWQ.Wait(t, func() bool { return d.cbs.ready() })
		for d.cbs.ready() {
			cb := d.cbs.pop()
			t.Charge(r.cfg.CallbackCost)
			r.stats.CallbacksInvoked++
			r.invoking = t.CPU()
			cb.fn()
			r.invoking = nil
			t.CondResched()
		}
		advance(&d.cbs, tr.completed)
		if pendCBs(d) {
			r.nocbWake(d.nocb.group)
		}
	}
}

// barrierEntrain is rcu_barrier_entrain's offloaded part: flush the
// bypass, entrain fn, and wake rcuog if nothing was pending before.
func (r *RCU) barrierEntrainNoCB(d *cpuData, fn func()) bool {
	wasDone := !pendCBs(d)
	r.flushBypass(d)
	ok := d.cbs.entrain(fn)
	if ok && wasDone && pendCBs(d) {
		r.nocbWake(d.nocb.group)
	}
	return ok
}
