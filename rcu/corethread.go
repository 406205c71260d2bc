package rcu

import (
	"fmt"

	"github.com/ndst-project/ndst/sim"
)

// RCU's core work in per-CPU kthreads (PREEMPT_RT, where use_softirq is
// false: kernel/rcu/tree.c invoke_rcu_core and rcu_cpu_kthread). Every
// request for core processing wakes the CPU's rcuc/N thread instead of
// raising RCU_SOFTIRQ; the thread is SCHED_FIFO (kthread_prio 1 with
// RCU_BOOST), so it preempts the ordinary tasks of its CPU at once, and runs
// rcu_core with bottom halves disabled up to 10 times while work remains,
// then sleeps two jiffies (schedule_timeout_idle(2)) if work is still left.
// Callbacks it invokes cost its own CPU time, with no count limit per batch.

const coreThreadRounds = 10

// invokeCore is invoke_rcu_core: raise the softirq, or wake rcuc/N.
func (r *RCU) invokeCore(d *cpuData) {
	if !r.cfg.CoreKthread {
		d.cpu.RaiseSoftirq(sim.SoftirqRCU)
		return
	}
	d.coreWork = true
	if d.core == nil {
		d.core = r.e.Go(fmt.Sprintf("rcuc/%d", d.cpu.ID), d.cpu.ID, true, func(t *sim.Task) { r.coreThread(d, t) })
		if !r.cfg.CoreKthreadNormalPrio {
			d.core.SetRT()
		}
		return
	}
	d.coreWQ.WakeAll()
}

// coreThread is rcu_cpu_kthread.
func (r *RCU) coreThread(d *cpuData, t *sim.Task) {
	for {
		d.coreWQ.Wait(t, func() bool { return d.coreWork })
		for range coreThreadRounds {
			d.coreWork = false
			t.PreemptDisable() // local_bh_disable
			d.inCore = t
			r.impl.softirq(d)
			d.inCore = nil
			t.PreemptEnable()
			if !d.coreWork {
				break
			}
		}
		if d.coreWork {
			t.ScheduleTimeout(2) // schedule_timeout_idle(2): let others run
		}
	}
}

// spend charges RCU core work: to rcuc/N when it runs it, else to the
// softirq context of the CPU.
func (r *RCU) spend(d *cpuData, cost sim.Time) {
	if d.inCore != nil {
		d.inCore.Charge(cost)
		return
	}
	d.cpu.Spend(cost)
}
