package netdev

import (
	"github.com/ndst-project/ndst/sim"
)

// The subsystems that hold a reference on a down device with no addresses
// from its registration to its unregistration, per kernel line, as read in
// the kernel sources (docs/kernel-2.6-sources.md §1, docs/kernel-modern-
// sources.md §1). Each takes its reference in its NETDEV_REGISTER handler and
// lets go in its NETDEV_UNREGISTER handler, either at once or through an RCU
// callback; some also queue RCU callbacks that free memory only. A
// rebroadcast of NETDEV_UNREGISTER (the wait loop's, every second) finds the
// state already torn down and does nothing.

// Release is how a subsystem drops its reference at unregistration.
type Release uint8

const (
	// ReleaseAtUnregister: dev_put inside the NETDEV_UNREGISTER handler.
	ReleaseAtUnregister Release = iota
	// ReleaseRCU: the handler queues a call_rcu callback that does the
	// dev_put (in_device: in_dev_rcu_put).
	ReleaseRCU
)

func (r Release) String() string {
	if r == ReleaseRCU {
		return "call_rcu"
	}
	return "at once"
}

// Subsystem is one holder, as a kernel line has it.
type Subsystem struct {
	Holder  Holder
	Release Release
	// RCUFrees is how many call_rcu callbacks its teardown queues that
	// free memory only; they take softirq time and batch slots.
	RCUFrees int
	// Source names where the behaviour was read.
	Source string
}

// FibFlush is where the IPv4 route cache is flushed (rt_do_flush), whose
// loop calls cond_resched() when a reschedule is pending: a scheduling
// point inside unregister even without preemption.
type FibFlush uint8

const (
	// FibFlushNone: no such flush in the path (the route cache is gone
	// since 3.6).
	FibFlushNone FibFlush = iota
	// FibFlushPerEvent: in every NETDEV_UNREGISTER, the first and each
	// rebroadcast (2.6.31, 2.6.32: fib_frontend.c fib_netdev_event).
	FibFlushPerEvent
	// FibFlushPerBatch: once per NETDEV_UNREGISTER_BATCH (2.6.33 on).
	FibFlushPerBatch
)

// subsystemNotifier is the NETDEV_REGISTER/UNREGISTER handler of one
// subsystem.
type subsystemNotifier struct{ s Subsystem }

func (n subsystemNotifier) Register(_ *Registry, _ *sim.Task, d *Device) { d.hold(n.s.Holder) }

func (n subsystemNotifier) Unregister(r *Registry, t *sim.Task, d *Device) {
	h := n.s.Holder
	if d.refs[h] == 0 || d.State != Unregistering {
		return
	}
	x, held := r.holdFor(h, d)
	switch {
	case n.s.Release == ReleaseAtUnregister && held:
		r.releaseLater(d, h, x)
	case n.s.Release == ReleaseAtUnregister:
		r.put(t, d, h)
	case held:
		r.rcu.CallRCU(t, func() { r.releaseLater(d, h, x) })
	default:
		r.rcu.CallRCU(t, func() { r.put(nil, d, h) })
	}
	for range n.s.RCUFrees {
		r.rcu.CallRCU(t, func() {})
	}
}
