package netdev

// addrChanges are the address changes of each line, appended to the line's
// own changes in lines.go. Sources: docs/addr-sources.md.
var addrChanges = map[string][]Change{
	"5.10": {
		{"9b0a8da8c4c6", "4.x", "net/ipv6: respect rcu grace period before freeing fib6_info",
			"up devices with addresses are modelled: every IPv6 and IPv4 route's nexthop drops its device reference in an RCU callback (fib6_info_destroy_rcu, free_fib_info_rcu), and the in_ifaddrs keep the in_device until theirs", func(p *Profile) {
				p.Addrs.Modelled = true
			}},
		{"2384d02520ff", "4.x", "net/ipv6: Add anycast addresses to a global hashtable",
			"aca_free_rcu releases the anycast route from inside its callback: with forwarding, a device's last route reference waits a second grace period", func(p *Profile) {
				p.Addrs.AnycastCascade = true
			}},
	},
	"6.1": {
		{"563bcbae3ba2", "5.16", "net: vlan: fix a UAF in vlan_dev_real_dev()",
			"a VLAN drops its lower device's reference in vlan_dev_free, once it is freed, not in vlan_dev_uninit: the lower device is ready only after its VLANs", func(p *Profile) {
				p.VLAN.VLANPutAtFree = true
			}},
		{"", "5.17", "macvlan: hold the lower device with a tracked reference",
			"a macvlan holds its lower device from macvlan_init to macvlan_dev_free", func(p *Profile) {
				p.VLAN.MacvlanHolds = true
			}},
	},
}
