package netdev

import (
	"fmt"
	"slices"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/sim"
)

// VLANs and macvlans on a lower device (net/8021q, drivers/net/macvlan.c;
// the sources are in docs/vlan-sources.md).
//
//   - A child holds a reference on its lower device (HolderUpper) from its
//     registration: a VLAN drops it in vlan_dev_uninit, during its own
//     unregister, on 5.10, and in vlan_dev_free, once the VLAN itself is
//     freed by netdev_run_todo, from 6.1 on (563bcbae3ba2); a macvlan has
//     no such reference on 5.10 and drops it in macvlan_dev_free from 6.1.
//     So from 6.1 the lower device cannot be ready before its children are
//     freed, and the wait loop frees them in ready order (children first).
//   - Deleting the lower device takes its children: its NETDEV_UNREGISTER
//     handler (vlan_device_event, macvlan_device_event) queues every child
//     that is not already going and unregisters them with an
//     unregister_netdevice_many of their own, nested in the lower device's
//     batch: its own close, grace periods and notifiers; all of them then
//     wait in one netdev_run_todo.
//   - The last macvlan of a lower device destroys its port:
//     netdev_rx_handler_unregister waits a synchronize_net().

// Lower is one child's link to its lower device.
type Lower struct {
	Parent *Device
	// ID is the VLAN id (1..4094); 0 for a macvlan.
	ID int
}

// VLANProfile is what a line does with VLANs and macvlans.
type VLANProfile struct {
	// VLANPutAtFree: a VLAN drops its lower device's reference in
	// vlan_dev_free (after it is freed), not in vlan_dev_uninit.
	VLANPutAtFree bool
	// MacvlanHolds: a macvlan holds its lower device until
	// macvlan_dev_free.
	MacvlanHolds bool
}

// VLANCosts are the per-child CPU costs of registering and unregistering a
// VLAN or macvlan beyond a plain device's, from the cost table's extra map
// ("vlan_register_ns", "vlan_unregister_ns", "macvlan_register_ns",
// "macvlan_unregister_ns"), else 0: a child costs what a dummy costs.
// Each may be negative: a child whose register or unregister is cheaper
// than the calibrated device's (an ifb allocates and tears down a private
// structure and a tasklet for each of its queues: 6.18 drivers/net/ifb.c
// l.184-205 ifb_dev_init, l.296 ifb_dev_free; a macvlan has no queues of
// its own), bounded so that the
// child's register and unregister work stay at least 0.
type VLANCosts struct {
	VLANRegister, VLANUnregister       sim.Time
	MacvlanRegister, MacvlanUnregister sim.Time
}

// VLANCostKeys are the cost-table keys of VLANCosts, in field order.
var VLANCostKeys = []string{"vlan_register_ns", "vlan_unregister_ns", "macvlan_register_ns", "macvlan_unregister_ns"}

// VLANCostsOf returns the VLAN costs of a cost table.
func VLANCostsOf(t *costs.Table) VLANCosts {
	var c VLANCosts
	if t == nil {
		return c
	}
	for i, f := range []*sim.Time{&c.VLANRegister, &c.VLANUnregister, &c.MacvlanRegister, &c.MacvlanUnregister} {
		if v, ok := t.Extra[VLANCostKeys[i]]; ok {
			*f = sim.Time(v)
		}
	}
	return c
}

// childUnregisterCost is the part of a child's unregister charged with
// every device's (UnregisterMany): its kind's cost beyond a plain
// device's, which may be negative.
func (r *Registry) childUnregisterCost(d *Device) sim.Time {
	r = r.homeOf(d)
	s := r.lowers[d]
	if s == nil || s.lower.Parent == nil {
		return 0
	}
	vc := VLANCostsOf(r.costs)
	if s.kind == KindVLAN {
		return vc.VLANUnregister
	}
	return vc.MacvlanUnregister
}

// lowerState is a child's link and a lower device's children.
type lowerState struct {
	lower    Lower
	kind     Kind
	children []*Device // of a lower device, in registration order
	held     bool      // the child still holds its lower device
}

func (r *Registry) lowerOf(d *Device) *lowerState {
	if r.lowers == nil {
		r.lowers = map[*Device]*lowerState{}
	}
	s := r.lowers[d]
	if s == nil {
		s = &lowerState{}
		r.lowers[d] = s
	}
	return s
}

// LowerOf returns a child's lower device and VLAN id (ok false for a
// device that is no child).
func (r *Registry) LowerOf(d *Device) (Lower, bool) {
	if s := r.lowers[d]; s != nil && s.lower.Parent != nil {
		return s.lower, true
	}
	return Lower{}, false
}

// Children returns a lower device's children, in registration order.
func (r *Registry) Children(d *Device) []*Device {
	if s := r.lowers[d]; s != nil {
		return s.children
	}
	return nil
}

// ChildByID returns the VLAN of parent with id, if any.
func (r *Registry) ChildByID(parent *Device, id int) (*Device, bool) {
	for _, c := range r.Children(parent) {
		if s := r.lowers[c]; s.lower.ID == id && s.kind == KindVLAN {
			return c, true
		}
	}
	return nil, false
}

// link makes d a child of kind on l.Parent.
func (r *Registry) link(d *Device, kind Kind, l Lower) {
	s := r.lowerOf(d)
	s.lower, s.kind = l, kind
	if kind == KindVLAN || r.prof.VLAN.MacvlanHolds {
		l.Parent.hold(HolderUpper)
		s.held = true
	}
	p := r.lowerOf(l.Parent)
	p.children = append(p.children, d)
}

// RestoreChild links a restored child to its restored lower device,
// without running kernel code.
func (r *Registry) RestoreChild(d *Device, kind Kind, l Lower) error {
	if err := r.checkChild(kind, l); err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	r.link(d, kind, l)
	return nil
}

func (r *Registry) checkChild(kind Kind, l Lower) error {
	switch {
	case l.Parent == nil || l.Parent.State != Registered:
		return fmt.Errorf("its lower device is not registered")
	case kind == KindVLAN && (l.ID < 1 || l.ID > 4094):
		return fmt.Errorf("VLAN id %d is out of 1..4094", l.ID)
	case kind == KindMacvlan && l.ID != 0:
		return fmt.Errorf("a macvlan has no VLAN id")
	case kind != KindVLAN && kind != KindMacvlan:
		return fmt.Errorf("kind %s has no lower device", kind)
	}
	if _, ok := r.LowerOf(l.Parent); ok {
		return fmt.Errorf("its lower device %s is itself a child (stacked VLANs are not modelled)", l.Parent.Name)
	}
	return nil
}

// RegisterChild is register_netdevice of a VLAN or macvlan named name on
// l.Parent (vlan_newlink, macvlan_newlink); the caller holds RTNL.
func (r *Registry) RegisterChild(t *sim.Task, name string, kind Kind, l Lower) (*Device, error) {
	if err := r.checkChild(kind, l); err != nil {
		return nil, err
	}
	if kind == KindVLAN {
		if _, dup := r.ChildByID(l.Parent, l.ID); dup {
			return nil, fmt.Errorf("VLAN %d exists on %s (EEXIST)", l.ID, l.Parent.Name)
		}
	}
	vc := VLANCostsOf(r.costs)
	extra := vc.MacvlanRegister
	if kind == KindVLAN {
		extra = vc.VLANRegister
	}
	d, err := r.registerNamed(t, name, max(0, r.Cost(costs.Register)+extra))
	if err != nil {
		return nil, err
	}
	r.setLink(d, LinkConfig{Kind: kind})
	r.link(d, kind, l)
	return d, nil
}

// vlanNotifier is vlan_device_event and macvlan_device_event at
// NETDEV_UNREGISTER, and the children's own uninit.
type vlanNotifier struct{}

func (vlanNotifier) Register(*Registry, *sim.Task, *Device) {}

func (vlanNotifier) Unregister(r *Registry, t *sim.Task, d *Device) {
	r = r.homeOf(d) // a namespace's device, unregistered by its cleanup
	s := r.lowers[d]
	if s == nil || d.State != Unregistering {
		return
	}
	if p := s.lower.Parent; p != nil {
		r.uninitChild(t, d, s)
	}
	// The lower device's handlers: every child not yet going, in one
	// nested batch.
	var kill []*Device
	for _, c := range s.children {
		if c.State == Registered {
			kill = append(kill, c)
		}
	}
	if len(kill) > 0 {
		r.stats.ChildBatches++
		r.UnregisterMany(t, kill)
	}
}

// uninitChild is a child's part of its own unregister: unlink from the
// lower device, and on 5.10 a VLAN's reference on it (vlan_dev_uninit);
// the last macvlan of a lower device destroys the port.
func (r *Registry) uninitChild(t *sim.Task, d *Device, s *lowerState) {
	p := s.lower.Parent
	ps := r.lowers[p]
	ps.children = slices.DeleteFunc(ps.children, func(c *Device) bool { return c == d })
	if s.kind == KindVLAN {
		if s.held && !r.prof.VLAN.VLANPutAtFree {
			s.held = false
			r.put(t, p, HolderUpper)
		}
		return
	}
	for _, c := range ps.children {
		if r.lowers[c].kind == KindMacvlan {
			return
		}
	}
	r.synchronizeNet(t) // macvlan_port_destroy: netdev_rx_handler_unregister
}

// freeChild is a child's priv_destructor (vlan_dev_free,
// macvlan_dev_free): it drops the reference on the lower device where the
// line keeps it until then.
func (r *Registry) freeChild(t *sim.Task, d *Device) {
	r = r.homeOf(d)
	s := r.lowers[d]
	if s == nil {
		return
	}
	if len(s.children) == 0 {
		delete(r.lowers, d)
	}
	if s.lower.Parent != nil && s.held {
		s.held = false
		r.put(t, s.lower.Parent, HolderUpper)
	}
}

// AllocName allocates a name from tmpl (its lowest free number) for a
// device registered with RegisterNamed or RegisterChild.
func (r *Registry) AllocName(tmpl ifname.Template) (string, error) { return r.allocName(tmpl) }
