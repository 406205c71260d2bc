package waitrefs

import (
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Backoff is the modern netdev_wait_allrefs_any: rcu_barrier() on every
// pass, no sleep on the first pass, then sleeps of 1, 2, 4, ... 128 ms,
// capped at 250 ms.
type Backoff struct{ noPrepare }

// Backoff's sleep bounds in milliseconds.
const (
	backoffMin = 1
	backoffMax = 250
)

// Name implements netdev.Waiter.
func (Backoff) Name() string { return "backoff" }

// WaitAny implements netdev.Waiter.
func (Backoff) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	wait := int64(0)
	return poll(r, t, devs, func(int, sim.Time) {
		r.Barrier(t)
		if wait == 0 {
			wait = backoffMin
			return
		}
		r.NoteSleep()
		t.Msleep(wait)
		wait = min(wait*2, backoffMax)
	})
}
