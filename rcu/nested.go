package rcu

// CallRCUNested is call_rcu from inside an RCU callback (aca_free_rcu
// releasing its route, whose release queues fib6_info_destroy_rcu): fn is
// queued on the CPU invoking the current callback and needs a grace period
// of its own, started after the one that ended the callback's; an
// rcu_barrier() that began before it does not wait for it. The queueing is
// softirq time of that CPU.
func (r *RCU) CallRCUNested(fn func()) {
	c := r.invoking
	if c == nil {
		panic("rcu: CallRCUNested outside an RCU callback")
	}
	d := r.cpus[c.ID]
	r.queueFrom(d, func() { // an offloaded CPU's goes to its rcuog (nocb.go)
		r.nested++
		fn()
		r.nested--
	}, false)
	r.spend(d, r.cfg.CallRCUCost)
}

// InNestedCallback reports whether the callback running now was queued by
// another callback (CallRCUNested).
func (r *RCU) InNestedCallback() bool { return r.nested > 0 }
