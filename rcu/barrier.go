package rcu

import "github.com/ndst-project/ndst/sim"

// rcu_barrier: wait until every callback queued before it has run.
//   - BarrierEveryCPU (2.6.3x, kernel/rcupdate.c _rcu_barrier): on_each_cpu
//     queues a barrier callback with call_rcu on every online CPU, each
//     behind that CPU's callbacks and needing a GP queued after them.
//   - BarrierEntrain (modern, kernel/rcu/tree.c rcu_barrier): only CPUs with
//     callbacks get one, entrained at the end of their last non-empty
//     segment, so it needs no GP of its own; with nothing queued anywhere
//     it returns at once.
//   - Tiny RCU: one callback, queued and waited for.
//   - An offloaded CPU (nocb.go) counts its held-back lazy callbacks as
//     queued; its bypass is flushed before the entrain and its rcuog
//     kthread woken (rcu_barrier_entrain).
// The caller sleeps on a completion the last barrier callback signals.
// Concurrent callers are serialised (barriermutex.go).

// Barrier waits until every callback queued before it has run.
func (r *RCU) Barrier(t *sim.Task) {
	r.mustNotBeReader(t, "rcu_barrier")
	t.MightSleep()
	if r.cfg.Flavor == Tiny {
		r.barrier(t)
		return
	}
	r.serialisedBarrier(t)
}

// barrier is one rcu_barrier's work: its callbacks queued, and the wait
// for the last of them.
func (r *RCU) barrier(t *sim.Task) {
	r.stats.Barriers++
	me := t.CPU().ID
	var targets []*cpuData
	for _, d := range r.cpus {
		if r.cfg.Barrier == BarrierEntrain && r.cfg.Flavor != Tiny && d.cbs.len()+bypassLen(d) == 0 {
			continue
		}
		targets = append(targets, d)
	}
	if len(targets) == 0 {
		r.stats.BarrierNoops++
		return
	}
	pending := len(targets)
	r.waitForCallback(t, func(done func()) {
		cb := func() {
			if pending--; pending == 0 {
				done()
			}
		}
		for _, d := range targets {
			if d.cpu.ID != me {
				t.Charge(r.cfg.IPICost)
			}
			t.Charge(r.cfg.CallRCUCost)
			if d.offloaded {
				if r.barrierEntrainNoCB(d, cb) {
					r.stats.CallbacksQueued++
					continue
				}
				r.nocbQueue(d, cb, false)
				continue
			}
			if r.cfg.Barrier == BarrierEntrain && d.cbs.entrain(cb) {
				r.stats.CallbacksQueued++
				d.cpu.KickTick()
				continue
			}
			r.enqueue(d, cb)
		}
	})
}
