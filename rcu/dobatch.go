package rcu

import "github.com/ndst-project/ndst/sim"

// Callback invocation: rcu_do_batch, run from the RCU softirq (at interrupt
// exit, or in ksoftirqd when the softirq was handed over; see package sim).
//
// 2.6.3x (kernel/rcutree.c and rcuclassic.c, rcu_do_batch): at most
// rdp->blimit callbacks a call (blimit = 10), the limit lifted while more
// than qhimark (10000) are queued until at most qlowmark (100) remain; if
// ready callbacks remain, raise_softirq(RCU_SOFTIRQ) again.
//
// Modern (kernel/rcu/tree.c, rcu_do_batch): an overloaded CPU (call_rcu_core:
// its list grew by more than qhimark) runs with blimit raised to 10000, not
// unbounded, until at most qlowmark remain; the limit is max(blimit,
// ready >> rcu_divisor) with rcu_divisor = 7; in softirq it stops at the
// limit only if a reschedule is pending or the CPU is not idle
// (need_resched() || !is_idle_task(current)), so an idle CPU runs its whole
// batch; when the limit exceeds 100 it also stops once rcu_resched_ns (3 ms)
// have passed; rcu_core raises the softirq again if ready callbacks remain.

// doBatch invokes the CPU's DONE callbacks within the line's limits.
func (r *RCU) doBatch(d *cpuData) {
	if !d.cbs.ready() {
		return
	}
	c := d.cpu
	bl := d.blimit
	if r.cfg.Divisor > 0 {
		n := d.cbs.segLen(segDone)
		if r.cfg.DivisorOfAll {
			n = d.cbs.len()
		}
		bl = max(bl, n>>r.cfg.Divisor)
	}
	tlimit := sim.Time(-1)
	if r.cfg.ReschedTime > 0 && bl > 100 && (c.InSoftirq() || d.inCore != nil) {
		tlimit = c.Clock() + r.cfg.ReschedTime
	}
	for count := 1; d.cbs.ready(); count++ {
		r.invokeOne(d)
		if d.inCore == nil && count >= bl && (!r.cfg.BatchOnlyIfBusy || c.NeedResched() || !c.SoftirqOnIdle()) {
			break // in rcuc/N there is no count limit
		}
		if tlimit >= 0 && count%32 == 0 && c.Clock() >= tlimit {
			break
		}
	}
	if r.e.Tracing() {
		r.e.TraceInstant(c.ID, "rcu", "callbacks invoked", map[string]any{"left_ready": d.cbs.segLen(segDone)})
	}
	if d.blimit > r.cfg.BatchLimit && d.cbs.len() <= r.cfg.QLowMark {
		d.blimit = r.cfg.BatchLimit
	}
	// Modern kernels reset call_rcu_core's flood trigger as the list
	// drains (6.18 tree.c l.2653-2658).
	if n := d.cbs.len(); n == 0 {
		d.qlenLastFQS, d.fqsSnap = 0, r.stats.FQSScans
	} else if n < d.qlenLastFQS-r.cfg.QHiMark {
		d.qlenLastFQS = n
	}
	if d.cbs.ready() {
		r.invokeCore(d)
	}
}

// invokeAll runs every DONE callback (Tiny RCU has no batch limit).
func (r *RCU) invokeAll(d *cpuData) {
	for d.cbs.ready() {
		r.invokeOne(d)
	}
}

func (r *RCU) invokeOne(d *cpuData) {
	cb := d.cbs.pop()
	r.spend(d, r.cfg.CallbackCost)
	r.stats.CallbacksInvoked++
	r.invoking = d.cpu
	cb.fn()
	r.invoking = nil
}
