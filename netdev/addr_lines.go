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
}
