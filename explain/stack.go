package explain

import "strings"

// The frames of a ref_tracker stack that take the reference for someone
// else: the tracker and hold helpers and the notifier machinery. The first
// frame after them is the one that holds it.
var plumbing = []string{
	"__netdev_tracker_alloc", "netdev_tracker_alloc", "netdev_hold", "dev_hold", "dev_hold_track", "__dev_hold",
	"ref_tracker_alloc", "notifier_call_chain", "raw_notifier_call_chain", "call_netdevice_notifiers",
	"call_netdevice_notifiers_info", "call_netdevice_notifiers_extack", "call_netdevice_notifiers_mtu",
	"__netdev_put", "netdev_put",
}

// holderOf names the holder a stack's owning frame belongs to, as package
// netdev names them (in_device, arp_parms, inet6_dev, nd_parms, dst, route,
// socket, xfrm), or "" for a holder the model has no name for. The match is
// on the function names that take each reference (read in 6.1 and 6.18:
// net/ipv4/devinet.c inetdev_init, net/ipv6/addrconf.c ipv6_add_dev,
// net/core/neighbour.c neigh_parms_alloc, net/core/dst.c dst_init,
// net/ipv4/fib_semantics.c fib_nh_common_init, net/ipv6/route.c
// fib6_nh_init, net/core/sock.c sock_bindtoindex_locked,
// net/xfrm/xfrm_device.c xfrm_dev_state_add).
func holderOf(stack []Frame) (holder, owner string) {
	var frames []string
	for _, f := range stack {
		frames = append(frames, f.Func)
	}
	i := 0
	for i < len(frames) && isPlumbing(frames[i]) {
		i++
	}
	if i == len(frames) {
		return "", ""
	}
	owner = frames[i]
	// neigh_parms_alloc is IPv4's or IPv6's by its caller.
	if owner == "neigh_parms_alloc" {
		for _, f := range frames[i+1:] {
			switch {
			case strings.HasPrefix(f, "inetdev_init"):
				return "arp_parms", owner
			case strings.HasPrefix(f, "ipv6_add_dev"):
				return "nd_parms", owner
			}
		}
		return "arp_parms or nd_parms", owner
	}
	for _, r := range holderRules {
		for _, p := range r.prefixes {
			if strings.HasPrefix(owner, p) {
				return r.holder, owner
			}
		}
	}
	return "", owner
}

func isPlumbing(f string) bool {
	for _, p := range plumbing {
		if f == p {
			return true
		}
	}
	return false
}

var holderRules = []struct {
	holder   string
	prefixes []string
}{
	{"in_device", []string{"inetdev_init", "inetdev_event", "in_dev_"}},
	{"inet6_dev", []string{"ipv6_add_dev", "addrconf_", "in6_dev_"}},
	{"dst", []string{"dst_init", "dst_alloc", "dst_dev_put", "rt_dst_alloc", "ip6_dst_alloc", "xfrm_fill_dst", "dst_cache"}},
	{"route", []string{"fib_nh_common_init", "fib_nh_init", "fib_create_info", "fib6_nh_init", "ip6_route_", "rt6_", "fib_table_insert"}},
	{"xfrm", []string{"xfrm_"}},
	{"socket", []string{"sock_bindtoindex", "sock_setbindtodevice", "sk_", "sock_", "__sys_bind", "packet_", "raw_bind", "ax25_bind", "inet_bind", "udp_", "tcp_"}},
}
