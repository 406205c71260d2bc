package rcu

import "github.com/ndst-project/ndst/sim"

// synchronize_rcu: queue a callback that wakes the caller (wakeme_after_rcu)
// and sleep until it runs. Exceptions by line: on one CPU with
// non-preemptible RCU, 2.6.3x returns at once (rcu_blocking_is_gp: the
// caller's own blocking would be a grace period; SyncUPShortcut); Tiny RCU's
// synchronize_rcu is synchronize_sched, cond_resched() (2.6.33), or only a
// counter bump (modern).
//
// With rcu_expedited set (ExpediteAll; kernel/rcu/tree.c synchronize_rcu:
// rcu_gp_is_expedited()) it is synchronize_rcu_expedited(), which itself
// falls back to the normal wait when rcu_normal is set (rcu_normal wins).
// The normal wait (syncNormal) is wait_rcu_gp(call_rcu_hurry) (plain
// call_rcu before 6.2, which has no lazy RCU), or from 6.10 with
// rcu_normal_wake_from_gp synchronize_rcu_normal's direct wake-up
// (wakefromgp.go).

// Synchronize waits for a full grace period (synchronize_rcu).
func (r *RCU) Synchronize(t *sim.Task) { r.synchronize(t, true) }

// synchronize is synchronize_rcu; expedite says whether rcu_expedited may
// turn it into synchronize_rcu_expedited (not when that one fell back here).
func (r *RCU) synchronize(t *sim.Task, expedite bool) {
	r.mustNotBeReader(t, "synchronize_rcu")
	t.MightSleep()
	switch {
	case r.cfg.Flavor == Tiny:
		r.stats.SyncNoops++
		t.CondResched()
		return
	case r.blockingIsGP():
		r.stats.SyncNoops++
		return
	case expedite && r.cfg.ExpediteAll && r.cfg.Expedited == ExpIPI:
		r.SynchronizeExpedited(t)
		return
	}
	r.syncNormal(t)
}

// syncNormal is the normal grace-period wait of synchronize_rcu (and of
// synchronize_rcu_expedited under rcu_normal).
func (r *RCU) syncNormal(t *sim.Task) {
	if r.cfg.WakeFromGP && r.cfg.GPKthread && r.cfg.Flavor == Tree {
		r.waitFromGP(t)
		return
	}
	r.waitForCallback(t, func(done func()) { r.CallRCUHurry(t, done) })
}

// blockingIsGP is rcu_blocking_is_gp where the line has the shortcut.
func (r *RCU) blockingIsGP() bool {
	return r.cfg.SyncUPShortcut && len(r.cpus) == 1 && !r.cfg.Preemptible
}

// waitForCallback queues, through queue, a callback that completes the
// caller's wait, and sleeps until it has run.
func (r *RCU) waitForCallback(t *sim.Task, queue func(done func())) {
	var done sim.Completion
	queue(done.Complete)
	done.Wait(t)
}
