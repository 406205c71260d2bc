package netdev

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/sim"
)

// State is a device's registration state (the kernel's reg_state).
type State uint8

// Device states, in lifecycle order.
const (
	Registered    State = iota // hashed, visible, refs held by subsystems
	Unregistering              // unlisted; notifiers are tearing it down
	Unregistered               // on the todo list, waiting for its references
	Freed                      // references gone, destructor run
)

func (s State) String() string {
	return [...]string{"registered", "unregistering", "unregistered", "freed"}[s]
}

// Holder names who holds a reference on a device.
type Holder uint8

// Reference holders modelled explicitly, so that the wait for references has
// something real to wait for. Which of them a kernel line has, and how each
// lets go, is the profile's Subsystems list (subsystems.go).
const (
	// HolderRegistration is the reference taken at registration and
	// dropped at the end of unregister (before netdev_run_todo).
	HolderRegistration Holder = iota
	// HolderSelf is the device's own reference from alloc_netdev, which
	// modern kernels keep until free (ready at refcount 1).
	HolderSelf
	// HolderIPv4 is the per-device IPv4 state (struct in_device).
	HolderIPv4
	// HolderARPParms is IPv4's neighbour parameters (in_device->arp_parms).
	HolderARPParms
	// HolderIPv6 is the per-device IPv6 state (struct inet6_dev).
	HolderIPv6
	// HolderNDParms is IPv6's neighbour parameters (inet6_dev->nd_parms).
	HolderNDParms
	// Holders a down device with no addresses does not have, which --hold
	// gives it to emulate a leak or a slow release (the usual suspects of
	// "waiting for X to become free": a cached route or dst, a socket
	// bound to the device, an xfrm state).
	HolderDst
	HolderRoute
	HolderSocket
	HolderXfrm
	// HolderUpper is a VLAN's or macvlan's reference on its lower device
	// (vlan.go).
	HolderUpper
	numHolders
)

var holderNames = [numHolders]string{"registration", "self", "in_device", "arp_parms", "inet6_dev", "nd_parms",
	"dst", "route", "socket", "xfrm", "upper"}

// HoldableNames lists the holders --hold accepts.
var HoldableNames = []string{"in_device", "arp_parms", "inet6_dev", "nd_parms", "dst", "route", "socket", "xfrm"}

// HolderByName returns the holder of that name.
func HolderByName(name string) (Holder, bool) {
	for h, n := range holderNames {
		if n == name && h >= int(HolderIPv4) && Holder(h) != HolderUpper {
			return Holder(h), true
		}
	}
	return 0, false
}

func (h Holder) String() string { return holderNames[h] }

// Device is one network device of the emulated registry. It is owned by its
// Registry and touched only by model code (never concurrently). Invariants:
// refs[h] >= 0 for every holder; total == sum(refs); a device is freed at
// most once, and only when total <= the profile's ReadyRefcount.
type Device struct {
	Name    string
	Ifindex int
	State   State
	refs    [numHolders]int32
	total   int32
	// UnregisterStart is when its unregister began (for latency).
	UnregisterStart sim.Time
	// readied: the put that made the unregistered device ready was
	// counted (Stats.LastRef).
	readied bool
}

// Refcount returns the device's reference count.
func (d *Device) Refcount() int { return int(d.total) }

// Refs returns the count held by h.
func (d *Device) Refs(h Holder) int { return int(d.refs[h]) }

// Holders describes who holds references, e.g. "in_device, inet6_dev".
func (d *Device) Holders() string {
	var parts []string
	for h := Holder(0); h < numHolders; h++ {
		switch n := d.refs[h]; {
		case n == 1:
			parts = append(parts, h.String())
		case n > 1:
			parts = append(parts, fmt.Sprintf("%s x%d", h, n))
		}
	}
	if len(parts) == 0 {
		return "nobody"
	}
	return strings.Join(parts, ", ")
}

// hold takes a reference for h (dev_hold).
func (d *Device) hold(h Holder) {
	d.refs[h]++
	d.total++
}

// put drops a reference of h (dev_put). A put without a matching hold is a
// model bug and panics: refcounts never go negative.
func (d *Device) put(h Holder) {
	if d.refs[h] <= 0 {
		panic(fmt.Sprintf("netdev: dev_put(%s) by %s without a reference (refcount %d, held by %s)",
			d.Name, h, d.total, d.Holders()))
	}
	d.refs[h]--
	d.total--
}
