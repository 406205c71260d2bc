package netdev

import "github.com/ndst-project/ndst/sim"

// Which of the teardown's RCU callbacks may be lazy, by line. With lazy RCU
// (6.2 on, offloaded CPUs only; rcu/lazy.go) call_rcu() may hold a callback
// back up to 10 s, call_rcu_hurry() never does. The net code moved the
// callbacks that drop a device reference to call_rcu_hurry():
//   - 6.2: 483c26ff63f4 "net: Use call_rcu_hurry() for dst_release()" (a
//     dst's device reference) and 9d40c84cf5bc "net: devinet: Reduce
//     refcount before grace period" (the in_device drops its reference
//     before its call_rcu; the 6.6 line has it), both in the lazy RCU
//     series merged for 6.2;
//   - 6.10: c4e86b4363ac "net: add two more call_rcu_hurry()"
//     (nexthop_free_rcu, free_fib_info_rcu), then b5327b9a300e "ipv6: use
//     call_rcu_hurry() in fib6_info_release()" and 61f5338d6267 "inet: use
//     call_rcu_hurry() in inet_free_ifa()": the route releases of an up
//     loopback (LoRoutesRCU) and of an up device's addresses (addr.go:
//     its routes, its anycast routes, its in_ifaddrs) are never lazy from
//     there (aca_free_rcu's is read as call_rcu_hurry in 6.12 and 6.18;
//     its commit was not found, so it is taken to come with these).
// In 6.2-6.9 those route releases are plain call_rcu(), lazy on an
// offloaded CPU: the loopback stays referenced until the bypass is flushed
// (by the wait loop's rcu_barrier, a hurried callback, or the 10 s timer).
// Every other teardown callback the model queues frees memory only and is
// plain call_rcu() on every line.

// callRCU queues fn as call_rcu_hurry() when hurry, else as call_rcu().
func (r *Registry) callRCU(t *sim.Task, hurry bool, fn func()) {
	if hurry {
		r.rcu.CallRCUHurry(t, fn)
		return
	}
	r.rcu.CallRCU(t, fn)
}
