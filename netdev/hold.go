package netdev

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ndst-project/ndst/sim"
)

// Held references: --hold makes a subsystem keep its reference on some or
// all devices beyond what the kernel line does, for a while or forever, so a
// run shows what a leak or a slow release looks like: the wait loop's
// warnings at the kernel's cadence, then, after the give-up time, a stuck
// result naming each device, its usage count and its holders.
//
// A holder the line already has (in_device, ...) keeps its reference that
// long after it would have let go; one it does not have (dst, route, socket,
// xfrm) takes a reference at registration and drops it that long after the
// device's NETDEV_UNREGISTER, from a timer.

// Hold is one --hold rule.
type Hold struct {
	Holder  Holder
	Device  string   // "" for every device
	For     sim.Time // how long after unregister; with Forever unused
	Forever bool
}

// applies reports whether the rule covers the device.
func (h Hold) applies(d *Device) bool { return h.Device == "" || h.Device == d.Name }

// holdFor returns the rule for holder h on d, if any.
func (r *Registry) holdFor(h Holder, d *Device) (Hold, bool) {
	for _, x := range r.holds {
		if x.Holder == h && x.applies(d) {
			return x, true
		}
	}
	return Hold{}, false
}

// SetHolds installs the --hold rules (before devices are restored).
func (r *Registry) SetHolds(holds []Hold) { r.holds = holds }

// takeExtraHolds gives d the references of the rules for holders the line's
// subsystems do not have.
func (r *Registry) takeExtraHolds(d *Device) {
	for _, x := range r.holds {
		if !r.hasSubsystem(x.Holder) && x.applies(d) && d.refs[x.Holder] == 0 {
			d.hold(x.Holder)
		}
	}
}

func (r *Registry) hasSubsystem(h Holder) bool {
	for _, s := range r.prof.Subsystems {
		if s.Holder == h {
			return true
		}
	}
	return false
}

// releaseLater drops d's reference of h after the rule's time, or never.
func (r *Registry) releaseLater(d *Device, h Holder, x Hold) {
	if x.Forever {
		return
	}
	r.e.After(x.For, func() {
		if d.refs[h] > 0 {
			r.put(nil, d, h)
		}
	})
}

// extraHoldsNotifier releases the extra holders at NETDEV_UNREGISTER.
type extraHoldsNotifier struct{}

func (extraHoldsNotifier) Register(r *Registry, _ *sim.Task, d *Device) { r.takeExtraHolds(d) }

func (extraHoldsNotifier) Unregister(r *Registry, _ *sim.Task, d *Device) {
	if d.State != Unregistering {
		return
	}
	for _, x := range r.holds {
		if !r.hasSubsystem(x.Holder) && x.applies(d) && d.refs[x.Holder] > 0 {
			r.releaseLater(d, x.Holder, x)
		}
	}
}

// StuckDevice is a device that still had references when the run gave up.
type StuckDevice struct {
	Name       string `json:"name"`
	UsageCount int    `json:"usage_count"`
	Holders    string `json:"holders"`
}

// StuckError stops a run whose devices kept references past the give-up
// time.
type StuckError struct {
	Waited  sim.Time
	Devices []StuckDevice
}

func (e *StuckError) Error() string {
	var parts []string
	for _, d := range e.Devices {
		parts = append(parts, fmt.Sprintf("%s (usage count %d, held by %s)", d.Name, d.UsageCount, d.Holders))
	}
	return fmt.Sprintf("gave up after %v of waiting: %s still referenced", e.Waited, strings.Join(parts, ", "))
}

// CheckStuck stops the run with a StuckError once devs have waited longer
// than the give-up time (GiveUp) since start.
func (r *Registry) CheckStuck(devs []*Device, since sim.Time) bool {
	w := r.e.Now() - since
	if w <= r.GiveUp {
		return false
	}
	err := &StuckError{Waited: w}
	for _, d := range devs {
		if !r.Ready(d) {
			err.Devices = append(err.Devices, StuckDevice{Name: d.Name, UsageCount: d.Refcount(), Holders: d.Holders()})
		}
	}
	sort.Slice(err.Devices, func(i, j int) bool { return err.Devices[i].Name < err.Devices[j].Name })
	r.e.Stop(err)
	return true
}
