package waitrefs

import (
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Msleep250 is 2.6.31's netdev_wait_allrefs: poll, msleep(250) between
// checks. A device whose last references sit in pending RCU callbacks waits
// at least one full sleep: msecs_to_jiffies(250)+1 jiffies.
type Msleep250 struct{ noPrepare }

// Name implements netdev.Waiter.
func (Msleep250) Name() string { return "msleep250" }

// WaitAny implements netdev.Waiter.
func (Msleep250) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	return poll(r, t, devs, func(int, sim.Time) {
		r.NoteSleep()
		t.Msleep(250)
	})
}
