package waitrefs

import (
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Tick replaces msleep(250) with schedule_timeout_uninterruptible(1): the
// sleep is a context switch (a quiescent state), so pending callbacks can run,
// and the loop re-checks at the next tick.
type Tick struct{ noPrepare }

// Name implements netdev.Waiter.
func (Tick) Name() string { return "tick" }

// WaitAny implements netdev.Waiter.
func (Tick) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	return poll(r, t, devs, func(int, sim.Time) {
		r.NoteSleep()
		t.ScheduleTimeout(1)
	})
}
