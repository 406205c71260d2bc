package waitrefs

import (
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Wake goes beyond the kernel: the release that brings a device to its ready
// refcount wakes the waiter, so nothing polls. The price is a check on every
// reference release (counted as release_checks). A one-second timeout keeps
// the rebroadcast and the warning of the kernel's loop.
type Wake struct{ noPrepare }

// Name implements netdev.Waiter.
func (Wake) Name() string { return "wake" }

// ChecksOnRelease implements ReleaseChecker.
func (Wake) ChecksOnRelease() bool { return true }

// WaitAny implements netdev.Waiter.
func (Wake) WaitAny(r *netdev.Registry, t *sim.Task, devs []*netdev.Device) *netdev.Device {
	hz := int64(r.Engine().Config().HZ)
	return poll(r, t, devs, func(int, sim.Time) {
		r.NoteSleep()
		r.WaitReleaseTimeout(t, devs, rebroadcastEvery*hz)
	})
}
