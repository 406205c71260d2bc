package rcu

import "github.com/ndst-project/ndst/sim"

// The RCU CPU stall warning. A normal GP that has not ended StallTimeout
// after it started is reported, then again every StallRepeat. The report
// comes from a tick: a holdout CPU reports itself ("self-detected"), and
// asks for a reschedule to kick out the stall (set_need_resched in 2.6.3x
// print_cpu_stall, set_tsk_need_resched in modern kernels); another CPU
// reports the holdouts it sees. 2.6.3x (CONFIG_RCU_CPU_STALL_DETECTOR, on by
// default from 2.6.33): 10 s, then every 30 s. Modern: RCU_CPU_STALL_TIMEOUT
// 21 s, then about three times that.

type stallState struct {
	next sim.Time // when the next report is due, relative to the GP start
}

func (s *stallState) reset() { s.next = 0 }

func (r *RCU) checkStall(c *sim.CPU) {
	if r.cfg.StallTimeout <= 0 || !r.impl.gpInProgress() {
		return
	}
	start := r.impl.gpStart()
	if r.stall.next == 0 {
		r.stall.next = r.cfg.StallTimeout
	}
	if r.e.Now()-start < r.stall.next {
		return
	}
	repeat := r.cfg.StallRepeat
	if repeat <= 0 {
		repeat = 3 * r.cfg.StallTimeout
	}
	r.stall.next += repeat
	r.stats.Stalls++
	t := int64((r.e.Now() - start) / r.e.Period())
	holdouts := r.impl.holdouts()
	self := false
	for _, h := range holdouts {
		if h == c.ID {
			self = true
		}
	}
	switch {
	case self && r.cfg.GPKthread:
		r.e.Printk("rcu: INFO: %s self-detected stall on CPU %d (t=%d jiffies)", r.flavourName(), c.ID, t)
	case self:
		r.e.Printk("INFO: RCU detected CPU %d stall (t=%d jiffies)", c.ID, t)
	case r.cfg.GPKthread:
		r.e.Printk("rcu: INFO: %s detected stalls on CPUs/tasks: %v (detected by %d, t=%d jiffies)", r.flavourName(), holdouts, c.ID, t)
	default:
		r.e.Printk("INFO: RCU detected CPU stalls: %v (detected by %d, t=%d jiffies)", holdouts, c.ID, t)
	}
	if self {
		c.SetNeedResched()
	}
}

func (r *RCU) flavourName() string {
	if r.cfg.Preemptible {
		return "rcu_preempt"
	}
	return "rcu_sched"
}
