package rcu

import "github.com/ndst-project/ndst/sim"

// rcu_barrier() callers are serialised by a mutex, so a barrier that
// starts while another runs waits for it first:
//   - 2.6.3x: rcu_barrier_mutex (kernel/rcupdate.c _rcu_barrier on
//     2.6.31, kernel/rcutree.c on 2.6.32 and 2.6.33): every caller runs a
//     barrier of its own, one after the other.
//   - modern (kernel/rcu/tree.c rcu_barrier, 5.10, 6.1, 6.18):
//     rcu_state.barrier_mutex and rcu_state.barrier_sequence. A caller
//     snapshots the sequence before the mutex (rcu_seq_snap: the end of
//     the next barrier to start after now) and, holding it, returns at once
//     when such a barrier has already ended (rcu_seq_done, "Did someone
//     else do our work for us?"): callers that queued up behind one running
//     barrier share the next one.
//   - Tiny RCU's rcu_barrier (wait_rcu_gp of one callback) takes no mutex.
// On the lines ndst models the shared form comes with the entraining
// barrier (BarrierEntrain); the 2.6.3x form with BarrierEveryCPU.

type barrierSerial struct {
	mu sim.Mutex
	// ended counts the barriers that ran to their end; running is set
	// while one runs (rcu_state.barrier_sequence's count and state).
	ended   int64
	running bool
}

// serialisedBarrier runs rcu_barrier under the barrier mutex.
func (r *RCU) serialisedBarrier(t *sim.Task) {
	b := &r.barrierSerial
	need := b.ended + 1 // rcu_seq_snap
	if b.running {
		need++
	}
	b.mu.Lock(t)
	if r.cfg.Barrier == BarrierEntrain && b.ended >= need {
		r.stats.BarrierShared++
		b.mu.Unlock(t)
		return
	}
	b.running = true
	r.barrier(t)
	b.running = false
	b.ended++
	b.mu.Unlock(t)
}
