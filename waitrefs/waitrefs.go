// Package waitrefs holds the strategies for netdev_wait_allrefs: how the
// unregistering task waits until a device's references are gone. Each lives
// in its own file and implements netdev.Waiter; Lookup selects one by the
// name used on the command line.
//
// The polling strategies share the kernel's loop (poll): check the devices;
// every second rebroadcast NETDEV_UNREGISTER; pause in the strategy's own
// way; every 10 seconds print "waiting for X to become free". They differ
// only in the pause, which is what the 2009 experiment compared. A strategy
// never decides the path around the wait (batching, synchronize_net,
// barriers in unregister): that is the kernel profile's job.
//
// Invariants: a strategy returns only a device that is ready (or nil when
// the run was stopped), and never frees anything itself.
package waitrefs

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Names lists the strategies in a stable order (part of the CLI contract).
var Names = []string{"msleep250", "tick", "expedited", "ben", "barrier", "backoff", "wake"}

var strategies = map[string]netdev.Waiter{
	"msleep250": Msleep250{},
	"tick":      Tick{},
	"expedited": Expedited{},
	"ben":       Ben{},
	"barrier":   Barrier{},
	"backoff":   Backoff{},
	"wake":      Wake{},
}

// Lookup returns the named strategy.
func Lookup(name string) (netdev.Waiter, error) {
	s, ok := strategies[name]
	if !ok {
		return nil, fmt.Errorf("unknown strategy %q (known: %s)", name, strings.Join(Names, ", "))
	}
	return s, nil
}

// ReleaseChecker is implemented by strategies that need every reference
// release to check whether a waiter can proceed.
type ReleaseChecker interface {
	ChecksOnRelease() bool
}

// The rebroadcast interval of the kernel's wait loop, in seconds; the
// warning's is net.core.netdev_unregister_timeout_secs (10 by default,
// Registry.WarnSeconds).
const rebroadcastEvery = 1

// poll is the kernel's wait loop with the strategy's pause.
func poll(r *netdev.Registry, t *sim.Task, devs []*netdev.Device, pause func(pass int, until sim.Time)) *netdev.Device {
	e := r.Engine()
	hz := int64(e.Config().HZ)
	start := t.Now()
	warnEvery := r.WarnSeconds()
	rebroadcast, warning := e.Jiffies(), e.Jiffies()
	for pass := 0; ; pass++ {
		if d := r.FirstReady(t, devs); d != nil {
			return d
		}
		if e.Jiffies() > rebroadcast+rebroadcastEvery*hz {
			r.Rebroadcast(t, devs)
			rebroadcast = e.Jiffies()
		}
		// until is the next time the loop has something of its own to
		// do (a rebroadcast, a warning, giving up): a pause that spins can
		// spin to it unless a device becomes ready first.
		until := min(e.JiffyStart(rebroadcast+rebroadcastEvery*hz+1), e.JiffyStart(warning+warnEvery*hz+1), start+r.GiveUp+1)
		pause(pass, until)
		if e.Jiffies() > warning+warnEvery*hz {
			r.WarnWaiting(devs[0])
			warning = e.Jiffies()
		}
		if r.CheckStuck(devs, start) {
			return nil
		}
	}
}

// anyReady reports whether one of devs is ready, without charging a check.
func anyReady(r *netdev.Registry, devs []*netdev.Device) bool {
	for _, d := range devs {
		if r.Ready(d) {
			return true
		}
	}
	return false
}

// noPrepare is embedded by strategies with nothing to do per batch.
type noPrepare struct{}

// Prepare does nothing.
func (noPrepare) Prepare(*netdev.Registry, *sim.Task, []*netdev.Device) {}
