package rcu

import "github.com/ndst-project/ndst/sim"

// synchronize_rcu: queue a callback that wakes the caller (wakeme_after_rcu)
// and sleep until it runs. Exceptions by line: on one CPU with
// non-preemptible RCU, 2.6.3x returns at once (rcu_blocking_is_gp: the
// caller's own blocking would be a grace period; SyncUPShortcut); Tiny RCU's
// synchronize_rcu is synchronize_sched, cond_resched() (2.6.33), or only a
// counter bump (modern).

// Synchronize waits for a full grace period (synchronize_rcu).
func (r *RCU) Synchronize(t *sim.Task) {
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
	}
	r.waitForCallback(t, func(done func()) { r.CallRCU(t, done) })
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
