package rcu

// Lazy RCU (CONFIG_RCU_LAZY, 3cb278e73be5, 6.2; rcutree.enable_rcu_lazy
// from 6.9), read in 6.6 and 6.18 kernel/rcu/tree_nocb.h
// (rcu_nocb_try_bypass, nocb_gp_wait, wake_nocb_gp_defer) and tree.c
// (__call_rcu_common, rcu_barrier_entrain). Only offloaded CPUs have it:
//   - call_rcu() (not call_rcu_hurry()) on an offloaded CPU puts the
//     callback in the CPU's bypass list and wakes nobody; rcuog's deferred
//     lazy wake-up is armed for LAZY_FLUSH_JIFFIES (10*HZ) later;
//   - the bypass is flushed into the callback list, and so gets a grace
//     period, when that timer has rcuog find it older than 10 s, when a
//     non-lazy callback is queued on the CPU, when it holds qhimark
//     callbacks, or when rcu_barrier() entrains its callback (it flushes
//     every bypass first);
//   - synchronize_rcu() uses call_rcu_hurry(), so it never waits on laziness.
// A lazy callback that drops a device reference (the route releases of an
// up loopback in 6.2-6.9, before c4e86b4363ac and b5327b9a300e made them
// call_rcu_hurry(); netdev/lazy.go) holds the device until one of those
// flushes: seconds, unless the wait loop calls rcu_barrier() (it does on
// every pass from cd42ba1c8ac9, written after waits of about 100 s under
// lazy RCU). Not modelled: the memory-pressure shrinker that also flushes.

// lazyFlushJiffies is LAZY_FLUSH_JIFFIES in seconds of jiffies.
const lazyFlushSeconds = 10

func (r *RCU) lazyFlushJiffies() int64 { return lazyFlushSeconds * int64(r.e.Config().HZ) }

// lazyQueue holds a lazy callback back in the CPU's bypass list.
func (r *RCU) lazyQueue(d *cpuData, fn func()) {
	n := d.nocb
	if len(n.bypass) == 0 {
		n.bypassFirst = r.e.Jiffies()
	}
	n.bypass = append(n.bypass, fn)
	r.stats.LazyCallbacks++
	if len(n.bypass) >= r.cfg.QHiMark {
		wasAllDone := !pendCBs(d)
		r.flushBypass(d)
		if wasAllDone {
			r.nocbWake(n.group)
		}
		return
	}
	r.lazyArm(n.group)
}

// flushBypass moves the CPU's bypass callbacks into its list, in order.
func (r *RCU) flushBypass(d *cpuData) {
	n := d.nocb
	if n == nil || len(n.bypass) == 0 {
		return
	}
	for _, fn := range n.bypass {
		d.cbs.append(fn)
	}
	n.bypass = n.bypass[:0]
	r.stats.LazyFlushes++
}

// lazyFlushDue flushes a bypass that has waited LAZY_FLUSH_JIFFIES (rcuog,
// nocb_gp_wait).
func (r *RCU) lazyFlushDue(d *cpuData) {
	n := d.nocb
	if len(n.bypass) > 0 && r.e.Jiffies() >= n.bypassFirst+r.lazyFlushJiffies() {
		r.flushBypass(d)
	}
}

// lazyArm arms rcuog's deferred lazy wake-up for the oldest bypass of the
// group, if any and if none is armed (wake_nocb_gp_defer with
// RCU_NOCB_WAKE_LAZY does not push an armed timer back).
func (r *RCU) lazyArm(g *nocbGroup) {
	if g.lazyTimer != nil {
		return
	}
	first := int64(-1)
	for _, d := range g.cpus {
		if n := d.nocb; len(n.bypass) > 0 && (first < 0 || n.bypassFirst < first) {
			first = n.bypassFirst
		}
	}
	if first < 0 {
		return
	}
	leader := g.cpus[0].cpu
	g.lazyTimer = leader.AddTimer(first+r.lazyFlushJiffies(), func() {
		g.lazyTimer = nil
		r.stats.LazyWakeups++
		r.nocbWake(g)
	})
}

// bypassLen is the number of callbacks held back on the CPU.
func bypassLen(d *cpuData) int {
	if d.nocb == nil {
		return 0
	}
	return len(d.nocb.bypass)
}
