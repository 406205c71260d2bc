package waitrefs

import (
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Ben flushes pending RCU callbacks with rcu_barrier() before each re-check
// and sleeps (msleep(250)) only if references remain after the flush. This is
// a reconstruction of Benjamin LaHaise's 2009 patch from the thread's
// description; the patch text itself was not available.
type Ben struct{ noPrepare }

// Name implements netdev.Waiter.
func (Ben) Name() string { return "ben" }

// WaitAny implements netdev.Waiter.
func (Ben) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	return poll(r, t, devs, func(int, sim.Time) {
		r.Barrier(t)
		if anyReady(r, devs) {
			return
		}
		r.NoteSleep()
		t.Msleep(250)
	})
}
