package rcu

import "github.com/ndst-project/ndst/sim"

// tiny is Tiny RCU (kernel/rcutiny.c from 2.6.33, kernel/rcu/tiny.c now), for
// kernels built without SMP and without preemptible RCU. There is no grace-
// period machinery: a QS on the only CPU ends every GP.
//
//   - call_rcu appends to the list (curtail); nothing else.
//   - rcu_sched_qs (2.6.33) / rcu_qs (modern), called at every context
//     switch, makes every queued callback ready (donetail = curtail) and
//     raises RCU_SOFTIRQ (from a context switch that wakes ksoftirqd).
//   - The tick: 2.6.33 counts a tick from user mode or idle as that QS;
//     modern kernels count user mode, and on a tick in the kernel with
//     callbacks waiting set need_resched (TinyTickResched), so the next
//     pass through schedule() is the QS; on an idle CPU that pass comes at
//     once.
//   - The softirq invokes every ready callback, with no batch limit.
//   - rcu_needs_cpu is 0 in 2.6.33 (entering dyntick idle is itself a QS),
//     the list's emptiness in the model.
//   - synchronize_rcu is synchronize_sched = cond_resched() (2.6.33) or a
//     counter bump (modern); rcu_barrier queues a callback and waits for it.
type tiny struct{ r *RCU }

func newTiny(r *RCU) *tiny { return &tiny{r: r} }

func (g *tiny) gpInProgress() bool { return false }
func (g *tiny) gpStart() sim.Time  { return 0 }
func (g *tiny) holdouts() []int    { return nil }

func (g *tiny) queue(d *cpuData, fn func()) { d.cbs.append(fn) }

func (g *tiny) needsCPU(d *cpuData) bool { return d.cbs.len() > 0 }

// qs is rcu_sched_qs / rcu_qs.
func (g *tiny) qs(d *cpuData, src QSSource) {
	if !d.cbs.restEmpty(segDone) {
		d.qsSrc = src
		g.r.countQS(d.cpu.ID)
		d.cbs.setTail(segDone, d.cbs.tail[segNext])
		g.r.stats.GPsStarted++
		g.r.stats.GPsCompleted++
		d.cpu.RaiseSoftirq(sim.SoftirqRCU)
	}
}

func (g *tiny) contextSwitch(d *cpuData, src QSSource) { g.qs(d, src) }

func (g *tiny) tick(d *cpuData, mode sim.Mode) {
	switch {
	case mode == sim.ModeUser:
		g.qs(d, QSTickIdle)
	case mode == sim.ModeIdle:
		// 2.6.33 counts the idle tick; modern kernels set need_resched
		// on the idle task, whose pass through schedule() is the QS.
		if !g.r.cfg.TinyTickResched || !d.cbs.restEmpty(segDone) {
			g.qs(d, QSTickIdle)
		}
	case g.r.cfg.TinyTickResched && mode == sim.ModeKernel && !d.cbs.restEmpty(segDone):
		d.cpu.SetNeedResched()
	}
}

func (g *tiny) softirq(d *cpuData) { g.r.invokeAll(d) }
