package rcu

import "github.com/ndst-project/ndst/sim"

// rcu_normal_wake_from_gp (988f569ae041, 6.10; on by default with at most
// 16 CPUs from 6.17, a7f6af1322ad), read in 6.12 and 6.18
// kernel/rcu/tree.c synchronize_rcu_normal, rcu_sr_normal_add_req,
// rcu_sr_normal_gp_init and rcu_sr_normal_gp_cleanup:
//   - the caller queues itself on the wait list and starts a grace period
//     at once (start_poll_synchronize_rcu: rcu_start_this_gp wakes the GP
//     kthread when none is running; during one, the next is requested);
//   - rcu_gp_init attaches the waiters queued before it to the GP it
//     starts, so a waiter needs the first GP to start after it queued;
//   - rcu_gp_cleanup completes them: up to SR_MAX_USERS_WAKE_FROM_GP (5)
//     inline, the rest from the sync_wq work item (modelled inline too: one
//     teardown has one waiter at a time).
// Without it the wait is wait_rcu_gp(call_rcu_hurry): a callback, a GP asked
// for at the CPU's next RCU softirq, and the wake-up when that CPU invokes
// the callback after noticing the GP's end: typically one or two jiffies
// more per synchronize_rcu().
//
// 7.x (read in 7.2.13 kernel/rcu/tree.c l.1632-1663, l.1806-1827,
// l.3305-3338): the parameter defaults to 1 on every machine, and the path
// latches back to wait_rcu_gp(call_rcu_hurry) once RCU_SR_NORMAL_LATCH_THR
// (64) callers are queued on it (rcu_sr_normal_add_req counts them, the
// 64th sets the latch), until every one of them has been completed
// (rcu_sr_normal_complete clears it when the count drains to 0): callers
// that arrive meanwhile take the callback wait and are not counted.

// srWaiter is one synchronize_rcu() caller waiting for GP seq to end.
type srWaiter struct {
	seq  uint64
	done sim.Completion
}

// waitFromGP is synchronize_rcu_normal with rcu_normal_wake_from_gp.
func (r *RCU) waitFromGP(t *sim.Task) {
	if r.srLatched {
		r.stats.WakeFromGPLatched++
		r.waitForCallback(t, func(done func()) { r.CallRCUHurry(t, done) })
		return
	}
	g := r.impl.(*tree)
	w := &srWaiter{seq: g.gpNum + 1}
	r.srInFlight++
	if l := r.cfg.WakeFromGPLatch; l > 0 && r.srInFlight == l {
		r.srLatched = true
	}
	r.srWaiters = append(r.srWaiters, w)
	g.startThisGP(w.seq)
	w.done.Wait(t)
}

// gpEnded is called by rcu_gp_cleanup with the GP that ended: it completes
// the synchronize_rcu() callers waiting for it and wakes the rcuog kthreads
// waiting for it (nocb.go).
func (r *RCU) gpEnded(completed uint64) {
	if len(r.srWaiters) > 0 {
		keep := r.srWaiters[:0]
		for _, w := range r.srWaiters {
			if w.seq <= completed {
				w.done.Complete()
				if r.srInFlight--; r.srInFlight == 0 {
					r.srLatched = false
				}
				continue
			}
			keep = append(keep, w)
		}
		r.srWaiters = keep
	}
	r.nocbGPEnded(completed)
}
