package waitrefs

import (
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Expedited calls synchronize_rcu_expedited() in the loop instead of
// sleeping. Where that is a real expedited grace period it forces context
// switches and the callbacks run; on one CPU without preemptible RCU it is a
// no-op, the loop never sleeps, no quiescent state ever happens, and the
// callbacks holding the references never run: a livelock that the
// soft-lockup watchdog reports.
type Expedited struct{ noPrepare }

// Name implements netdev.Waiter.
func (Expedited) Name() string { return "expedited" }

// WaitAny implements netdev.Waiter.
func (Expedited) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	return poll(r, t, devs, func(int) {
		if !r.RCU().SynchronizeExpedited(t) {
			// A no-op: the loop spins. Between two events nothing it
			// polls can change, so spin to the next one at once.
			t.Relax(r.Cost(costs.RefcntCheck))
		}
	})
}
