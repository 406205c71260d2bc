package waitrefs

import (
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Expedited calls synchronize_rcu_expedited() in the loop instead of
// sleeping. Where that is a real expedited grace period it forces context
// switches and the callbacks run. On one CPU without preemptible RCU it is a
// no-op and the loop never sleeps, so RCU sees no quiescent state of the
// loop's own: on 2.6.32 each grace period still ends at the once-a-second
// rebroadcast, whose route-cache flush reaches cond_resched() after FQS has
// set need_resched (2 s a device, 2004 s for 1000: slow, not a livelock); on
// 2.6.33, whose flush runs once per batch, nothing in the loop reschedules,
// and the soft-lockup detector reports the livelock (65.5 s).
type Expedited struct{ noPrepare }

// Name implements netdev.Waiter.
func (Expedited) Name() string { return "expedited" }

// WaitAny implements netdev.Waiter.
func (Expedited) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	return poll(r, t, devs, func(_ int, until sim.Time) {
		if !r.RCU().SynchronizeExpedited(t) {
			// A no-op: the loop spins, checking the devices and calling
			// the no-op again, until one is ready or the loop has
			// something of its own to do. Only events can change what it
			// polls, so the spin is evaluated at each event rather than
			// run iteration by iteration, and ticks that provably change
			// nothing are skipped, their checks counted.
			t.RelaxUntilSteady(r.Cost(costs.RefcntCheck), until, func() bool { return r.AnyReadySpinning(devs) }, r.SkippedSpinning)
		}
	})
}
