package waitrefs

import (
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Barrier is the fix of ef885afb (2.6.36) as a wait strategy: one rcu_barrier()
// per unregister batch before the wait loop, so the callbacks holding the
// references have run before the first check; the msleep(250) loop remains
// for references that are not RCU's.
type Barrier struct{}

// Name implements netdev.Waiter.
func (Barrier) Name() string { return "barrier" }

// Prepare runs one rcu_barrier for the whole todo list.
func (Barrier) Prepare(r *netdev.Registry, t *sim.Task, _ []*netdev.Device) {
	r.Barrier(t)
}

// WaitAny implements netdev.Waiter.
func (Barrier) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	return Msleep250{}.WaitAny(r, t, devs)
}
