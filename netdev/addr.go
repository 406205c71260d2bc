package netdev

import (
	"fmt"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/sim"
)

// Devices that are up and carry addresses. A device ndst makes is down and
// has no addresses unless its add asks for them (--addr4 K, --addr6 K,
// --ipv6-forwarding): it is then set up (dev_open) and given K addresses of
// each family, all of one device in one prefix, as `ip link set up` and
// `ip addr add` would. What that brings to its teardown, per line
// (AddrProfile; the sources are in docs/addr-sources.md):
//
//   - IPv6 on an up device: the link-local address and three routes
//     (fe80::/64, the link-local address's local route, ff00::/8); each
//     address adds its local route, the first of a prefix its prefix route.
//     Every route is a fib6_info whose nexthop holds the device; unregister
//     removes them from the tree and fib6_info_release queues
//     fib6_info_destroy_rcu, whose fib6_nh_release drops the reference.
//   - With forwarding, every prefix (fe80:: too) joins its subnet-router
//     anycast address: an ifacaddr6 holding its own anycast fib6_info.
//     aca_put queues aca_free_rcu, and that callback releases the route, so
//     fib6_info_destroy_rcu is queued from inside a callback: the device's
//     last route reference needs a second grace period, which the
//     rcu_barrier() of netdev_run_todo does not cover (2384d02520ff with
//     9b0a8da8c4c6; the case 0e4be9e57e8c was measured on).
//   - IPv4: each address a local route, the first of a prefix its prefix
//     and broadcast routes (fib_add_ifaddr), each a fib_info whose release
//     queues free_fib_info_rcu, which drops the nexthop's reference; each
//     in_ifaddr is freed by inet_rcu_free_ifa, which drops its in_device
//     reference, so the in_device (and its device reference) outlives
//     inetdev_destroy until the last of those callbacks.
//   - An up device with a queueing qdisc (ifb: pfifo_fast; dummy, veth,
//     vlan and macvlan are noqueue) makes dev_deactivate_many wait a
//     synchronize_net() on lines where it only waits for such qdiscs.
//
// Memory freed with kfree_rcu (inet6_ifaddr, ifmcaddr6) goes through
// kvfree_rcu's own batching, which rcu_barrier() does not wait for; it is
// not modelled.

// LinkConfig is what a device is and how it is set up beyond its
// registration.
type LinkConfig struct {
	// Kind is KindDummy (the default), KindIfb, KindVLAN or KindMacvlan
	// (veth ends and lo are the namespace layer's).
	Kind Kind
	// Up: the device is up (dev_open), with IPv6's link-local address and
	// routes.
	Up bool
	// V4 and V6 are the device's addresses of each family, all in one
	// prefix (a /24 and a /64).
	V4, V6 int
	// Forwarding6 is net.ipv6.conf.DEV.forwarding=1: a subnet-router
	// anycast address for each prefix.
	Forwarding6 bool
}

// MaxAddrs bounds the addresses of each family on one device: a /24 has
// 254 host addresses, and 254 IPv6 ones keep one device's teardown work
// within what the kernel does in one RTNL hold without complaint.
const MaxAddrs = 254

// Validate checks a configuration.
func (c LinkConfig) Validate() error {
	switch {
	case c.V4 < 0 || c.V4 > MaxAddrs:
		return fmt.Errorf("--addr4 %d: want 0..%d addresses a device (one /24)", c.V4, MaxAddrs)
	case c.V6 < 0 || c.V6 > MaxAddrs:
		return fmt.Errorf("--addr6 %d: want 0..%d addresses a device (one /64)", c.V6, MaxAddrs)
	case !c.Up && (c.V4 > 0 || c.V6 > 0 || c.Forwarding6):
		return fmt.Errorf("addresses and forwarding need the device up")
	case c.Kind != KindDummy && c.Kind != KindIfb && c.Kind != KindVLAN && c.Kind != KindMacvlan:
		return fmt.Errorf("a device of kind %s has no link configuration", c.Kind)
	}
	return nil
}

// Plain reports whether the configuration is a down dummy's.
func (c LinkConfig) Plain() bool { return c == LinkConfig{} }

// Qdisc reports whether the device is up with a queueing qdisc: ifb gets
// pfifo_fast; dummy, veth, vlan and macvlan are IFF_NO_QUEUE.
func (c LinkConfig) Qdisc() bool { return c.Up && c.Kind == KindIfb }

// Addressed reports whether the device is up (its teardown then has
// routes to release).
func (c LinkConfig) Addressed() bool { return c.Up }

// AddrProfile is what a line does with an up device's addresses.
type AddrProfile struct {
	// Modelled: the line's address teardown is modelled (5.10 on); the
	// 2.6.3x lines kept IPv6 routes as dst entries freed by the dst
	// garbage collector, which the model does not have.
	Modelled bool
	// AnycastCascade: aca_free_rcu releases the anycast route from inside
	// its callback (2384d02520ff, 9b0a8da8c4c6).
	AnycastCascade bool
}

// routes6 is the IPv6 route count of an up device: fe80::/64, the
// link-local local route, ff00::/8, then each address's local route and
// its prefix's route.
func (c LinkConfig) routes6() int {
	if !c.Up {
		return 0
	}
	n := 3 + c.V6
	if c.V6 > 0 {
		n++
	}
	return n
}

// anycasts6 is the subnet-router anycast count: fe80:: and the address
// prefix, with forwarding.
func (c LinkConfig) anycasts6() int {
	if !c.Up || !c.Forwarding6 {
		return 0
	}
	if c.V6 > 0 {
		return 2
	}
	return 1
}

// routes4 is the IPv4 route count: each address's local route, and the
// prefix's unicast and broadcast routes.
func (c LinkConfig) routes4() int {
	if c.V4 == 0 {
		return 0
	}
	return c.V4 + 2
}

// AddrCosts are the CPU costs of up devices and addresses that the cost
// table does not name as operations, set in its "extra" map under the keys
// below, else built-in estimates scaled like NetnsCosts.
type AddrCosts struct {
	Up     sim.Time // dev_open with IPv6 autoconf ("link_up_ns")
	Down   sim.Time // dev_close and the link-local teardown at unregister ("link_down_ns")
	Add4   sim.Time // one RTM_NEWADDR, IPv4, with its routes ("addr4_add_ns")
	Add6   sim.Time // one RTM_NEWADDR, IPv6 ("addr6_add_ns")
	Del4   sim.Time // one IPv4 address and its routes at unregister ("addr4_del_ns")
	Del6   sim.Time // one IPv6 address and its routes at unregister ("addr6_del_ns")
	Anycat sim.Time // one anycast join or leave ("anycast_ns")
}

// DefaultAddrCosts are estimates for the built-in table's machine, not
// fitted to any timing: an address and its routes cost a fraction of a
// device's registration.
var DefaultAddrCosts = AddrCosts{
	Up:     600 * sim.Microsecond,
	Down:   400 * sim.Microsecond,
	Add4:   150 * sim.Microsecond,
	Add6:   200 * sim.Microsecond,
	Del4:   100 * sim.Microsecond,
	Del6:   150 * sim.Microsecond,
	Anycat: 60 * sim.Microsecond,
}

// AddrCostKeys are the cost-table keys of AddrCosts, in field order.
var AddrCostKeys = []string{"link_up_ns", "link_down_ns", "addr4_add_ns", "addr6_add_ns", "addr4_del_ns", "addr6_del_ns", "anycast_ns"}

// AddrCostsOf returns the address costs for a cost table.
func AddrCostsOf(t *costs.Table) AddrCosts {
	c := DefaultAddrCosts
	fields := func(c *AddrCosts) []*sim.Time {
		return []*sim.Time{&c.Up, &c.Down, &c.Add4, &c.Add6, &c.Del4, &c.Del6, &c.Anycat}
	}
	if t == nil {
		return c
	}
	def := costs.Default()
	if t.Source != def.Source {
		if reg, base := t.Lookup(costs.Register), def.Lookup(costs.Register); reg > 0 && reg != base {
			for _, f := range fields(&c) {
				*f = sim.Time(int64(*f) * reg / base)
			}
		}
	}
	for i, f := range fields(&c) {
		if v, ok := t.Extra[AddrCostKeys[i]]; ok && v >= 0 {
			*f = sim.Time(v)
		}
	}
	return c
}

// addrCosts returns the registry's address costs, worked out once.
func (r *Registry) addrCosts() *AddrCosts {
	if r.addrCost == nil {
		c := AddrCostsOf(r.costs)
		r.addrCost = &c
	}
	return r.addrCost
}

// linkState is a device's configuration and how many of its references
// its routes hold.
type linkState struct {
	cfg    LinkConfig
	routes int32
}

// LinkConfigOf returns a device's configuration (the zero value for a down
// device).
func (r *Registry) LinkConfigOf(d *Device) LinkConfig {
	if s := r.links[d]; s != nil {
		return s.cfg
	}
	return LinkConfig{}
}

// CheckAddrs says whether the line can run devices configured as c.
func (p Profile) CheckAddrs(c LinkConfig) error {
	if !c.Up || p.Addrs.Modelled {
		return nil
	}
	return fmt.Errorf("kernel line %s is modelled without addresses (its IPv6 routes were dst entries freed by the dst garbage collector, which the emulated kernel does not have): use line 5.10 or later", p.Name)
}

// RestoreLink gives a restored device its configuration without running
// kernel code: its route references are taken, no time passes.
func (r *Registry) RestoreLink(d *Device, c LinkConfig) error {
	if c.Plain() {
		return nil
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("device %s: %w", d.Name, err)
	}
	if err := r.prof.CheckAddrs(c); err != nil {
		return err
	}
	r.setLink(d, c)
	return nil
}

func (r *Registry) setLink(d *Device, c LinkConfig) {
	if r.links == nil {
		r.links = map[*Device]*linkState{}
	}
	s := &linkState{cfg: c, routes: int32(c.routes6() + c.anycasts6() + c.routes4())}
	for range s.routes {
		d.hold(HolderRoute)
	}
	r.links[d] = s
}

// SetUp is what `ip link set DEV up`, the forwarding sysctl and c.V4 + c.V6
// `ip addr add` requests do to a registered device, run by t: one RTNL
// hold for the up and one per address. The device takes its routes'
// references. A device that stays down only records its kind.
func (r *Registry) SetUp(t *sim.Task, d *Device, c LinkConfig, sys sim.Time) error {
	if c.Plain() {
		return nil
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if err := r.prof.CheckAddrs(c); err != nil {
		return err
	}
	if !c.Up {
		r.setLink(d, c)
		return nil
	}
	ac := r.addrCosts()
	prev := t.Phase()
	defer t.SetPhase(prev)
	req := func(cost sim.Time) {
		t.SetPhase(phase.Syscall)
		t.Charge(sys)
		r.RTNLLock(t)
		t.SetPhase(PhaseAddr)
		t.Charge(cost)
		r.RTNLUnlock(t)
	}
	join := sim.Time(0) // a prefix's anycast join, with its first address
	if c.Forwarding6 {
		join = ac.Anycat
	}
	req(ac.Up + join) // fe80::/64's anycast
	for i := range c.V6 {
		if i == 0 {
			req(ac.Add6 + join)
			continue
		}
		req(ac.Add6)
	}
	for range c.V4 {
		req(ac.Add4)
	}
	r.setLink(d, c)
	return nil
}

// PhaseAddr is the CPU of setting devices up and adding their addresses.
const PhaseAddr = "addr"

// linkNotifier tears an up device's addresses and routes down at
// NETDEV_UNREGISTER (addrconf_ifdown, inetdev_destroy, fib_disable_ip),
// before the subsystems' own handlers run.
type linkNotifier struct{}

func (linkNotifier) Register(*Registry, *sim.Task, *Device) {}

func (linkNotifier) Unregister(r *Registry, t *sim.Task, d *Device) {
	r = r.homeOf(d) // a namespace's device, unregistered by its cleanup
	s := r.links[d]
	if s == nil || d.State != Unregistering {
		return
	}
	delete(r.links, d)
	c := s.cfg
	if !c.Up {
		return
	}
	r.stats.UpUnregistered++
	ac := r.addrCosts()
	t.Charge(ac.Down + sim.Time(c.V4)*ac.Del4 + sim.Time(c.V6)*ac.Del6 + sim.Time(c.anycasts6())*ac.Anycat)
	release := func() { r.put(nil, d, HolderRoute) }
	// fib6_info_release and fib_release_info of the device's own routes:
	// one callback each, which drops the nexthop's reference.
	for range c.routes6() + c.routes4() {
		r.callRCU(t, r.prof.RouteReleaseHurry, release) // lazy.go
	}
	// aca_put: aca_free_rcu releases the anycast route from its callback.
	for range c.anycasts6() {
		if r.prof.Addrs.AnycastCascade {
			r.callRCU(t, r.prof.RouteReleaseHurry, func() { r.rcu.CallRCUNested(release) })
		} else {
			r.callRCU(t, r.prof.RouteReleaseHurry, release)
		}
	}
	if c.V4 > 0 {
		// The in_ifaddrs hold the in_device, and so its device reference,
		// until the last inet_rcu_free_ifa.
		d.hold(HolderIPv4)
		left := c.V4
		for range c.V4 {
			r.callRCU(t, r.prof.RouteReleaseHurry, func() { // inet_rcu_free_ifa: 61f5338d6267
				if left--; left == 0 {
					r.put(nil, d, HolderIPv4)
				}
			})
		}
	}
}

// qdiscSync reports whether closing devs waits in dev_deactivate_many: on
// every line that syncs there unconditionally, else when one of them is up
// with a queueing qdisc (88df16f851ad).
func (r *Registry) qdiscSync(devs []*Device) bool {
	if r.prof.SyncNetInClose {
		return true
	}
	for _, d := range devs {
		if s := r.homeOf(d).links[d]; s != nil && s.cfg.Qdisc() {
			return true
		}
	}
	return false
}
