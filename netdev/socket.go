package netdev

import "github.com/ndst-project/ndst/sim"

// A socket opened in a namespace holds a reference to it: a user socket's
// sk_alloc takes one (sk_net_refcnt, get_net_track), and its free drops
// it (__sk_destruct's put_net_track, net/core/sock.c). A netlink socket is
// not freed at its close: netlink_release leaves it to an RCU callback
// (deferred_put_nlk_sk, net/netlink/af_netlink.c, 6.18: call_rcu at the
// end of netlink_release; sk_free from the callback, and __sk_free's
// sk_destruct runs __sk_destruct at once, netlink sockets not being
// SOCK_RCU_FREE). So when a program that worked in a namespace over
// netlink (a CNI plugin's DEL) closes its socket and the namespace is
// deleted right after, the namespace's last reference goes only when that
// callback runs, a grace period or more after the delete returned, and its
// cleanup is queued then.

// OpenSocket is socket(2) of a netlink socket in n: the socket's reference
// to n.
func (ns *Namespaces) OpenSocket(n *Netns) {
	if n.State != NetnsAlive {
		panic("netdev: socket opened in namespace " + n.Name + " in state " + n.State.String())
	}
	n.sockets++
}

// CloseSocket is close(2) of such a socket by t: the RCU callback that
// frees it drops its reference to n, and queues n's cleanup when n was
// deleted meanwhile and this was its last reference.
func (ns *Namespaces) CloseSocket(t *sim.Task, n *Netns) {
	if n.sockets <= 0 {
		panic("netdev: socket closed in namespace " + n.Name + ", which has none open")
	}
	ns.host.rcu.CallRCU(t, func() {
		if n.sockets--; n.sockets == 0 && n.State == NetnsQueued {
			ns.enqueue(n)
		}
	})
}
