package emu

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	ph "github.com/ndst-project/ndst/phase"
)

// explain writes the one or two sentences under a result that say what
// each device waited for and which setting would change it most. Every
// figure comes from the run's own phases and counters; the mechanisms named
// are the ones the run went through (a sleep in the wait loop, an
// rcu_barrier, a grace period ended by an FQS scan).
func explain(r *resolved, res *ndst.Result) []string {
	if res.Op != "del" || res.Result != ndst.ResultOK || res.Count == 0 || res.VirtualNS == nil {
		return nil
	}
	n := int64(res.Count)
	c := res.Counters
	total := *res.VirtualNS
	phases := slices.Clone(res.Phases)
	slices.SortFunc(phases, func(a, b ndst.Phase) int { return int(b.TotalNS() - a.TotalNS()) })
	if len(phases) == 0 || total == 0 {
		return nil
	}
	top := phases[0]
	share := float64(top.TotalNS()) / float64(total)
	unit, units := "each device", n
	if res.Batched {
		unit, units = "the batch", 1
	}
	per := func(ns int64) string { return dur(ns / units) }
	perN := func(x int64) float64 { return float64(x) / float64(units) }
	gps := c["grace_periods"]
	gpLen := int64(0)
	if gps > 0 {
		gpLen = c["gp_time_ns"] / gps
	}
	fqs := ""
	if c["fqs_scans"] > 0 && r.cfg.CPUs > 1 {
		fqs = fmt.Sprintf(" (an idle CPU is reported only by an FQS scan: %.1f scans)", perN(c["fqs_scans"]))
	}
	var what, try string
	switch top.Name {
	case ph.WaitLoop:
		sleeps := c["sleeps"]
		switch {
		case r.cfg.Strategy == "msleep250" && sleeps > 0:
			rate := float64(n) / (float64(total) / 1e9)
			what = fmt.Sprintf("%s slept %s in netdev_wait_allrefs (%d msleep(250) in all): about %.0f devices/s, because its last reference (%s) is dropped by an RCU callback that had not run at the first check",
				unit, per(top.TotalNS()), sleeps, rate, r.rcuHolder(c))
			if len(r.cfg.Holds) > 0 {
				what = fmt.Sprintf("%s slept %s in netdev_wait_allrefs (%d msleep(250) in all) for the references --hold keeps",
					unit, per(top.TotalNS()), sleeps)
			}
			try = "try --strategy tick (sleep one jiffy) or barrier (flush the callbacks first), or a profile from 2.6.36 on, where rcu_barrier() does that"
		case sleeps > 0 && len(r.cfg.Holds) > 0:
			what = fmt.Sprintf("%s waited %s in netdev_wait_allrefs over %.0f sleeps for the references --hold keeps",
				unit, per(top.TotalNS()), perN(sleeps))
		case sleeps > 0:
			what = fmt.Sprintf("%s waited %s in netdev_wait_allrefs over %.1f sleeps, while %.1f grace periods of %s ended%s",
				unit, per(top.TotalNS()), perN(sleeps), perN(gps), dur(gpLen), fqs)
		default:
			what = fmt.Sprintf("%s waited %s in netdev_wait_allrefs without sleeping (%d checks)", unit, per(top.TotalNS()), c["wait_checks"])
			if q := c["qs_schedule"] + c["qs_context_switch"]; q > 0 && q == c["rebroadcasts"] {
				what += fmt.Sprintf(": a loop that never sleeps gives RCU no quiescent state of its own, so its %.1f grace periods ended only at the once-a-second NETDEV_UNREGISTER rebroadcast, whose route-cache flush calls cond_resched() after RCU's forced quiescent state has set need_resched (%d such passes through schedule(), one per rebroadcast: %d kept the CPU, %d switched to another task)",
					perN(gps), q, c["qs_schedule"], c["qs_context_switch"])
				try = "a loop that sleeps (--strategy tick) lets each grace period end at the next tick"
			} else if by := qsSources(c); by != "" {
				what += "; the grace periods' quiescent states came from " + by
			}
		}
	case ph.Barrier:
		what = fmt.Sprintf("%s waited %s in rcu_barrier() for the callbacks queued during unregister: %.1f grace periods of %s%s, then the callbacks at their CPU's next tick",
			unit, per(top.TotalNS()), perN(gps), dur(gpLen), fqs)
		if !res.Batched && r.profile.Batched {
			try = "deleting them as one batch (without --one-by-one) waits for the barrier once for all devices"
		}
	case ph.SyncNet, ph.SyncNetExp:
		kind := "normal"
		if top.Name == ph.SyncNetExp {
			kind = "expedited"
		}
		what = fmt.Sprintf("%s waited %s in synchronize_net() (%.0f %s grace periods)", unit, per(top.TotalNS()), perN(c["synchronize_net"]), kind)
	case ph.Unregister:
		what = fmt.Sprintf("the unregister work itself dominates: %s of CPU per device, %.0f%% of the time", dur(top.CPUNS/n), 100*share)
		if len(phases) > 1 && phases[1].TotalNS() > 0 {
			what += fmt.Sprintf("; next is %s (%s)", phases[1].Name, dur(phases[1].TotalNS()))
		}
		if !res.Batched && r.profile.Batched {
			try = "as one batch the waits are shared"
		}
	case ph.RTNL:
		what = fmt.Sprintf("%s waited %s for RTNL", unit, per(top.TotalNS()))
	default:
		what = fmt.Sprintf("most of the time (%.0f%%) was %s", 100*share, ph.Describe(top.Name))
	}
	out := []string{what + fmt.Sprintf(" (%.0f%% of %s)", 100*share, dur(total))}
	if nested := c["last_ref_nested_rcu"]; nested > 0 {
		out = append(out, fmt.Sprintf("%d of %d devices were ready only after a second grace period: their last reference was an anycast route (IPv6 forwarding), released by fib6_info_destroy_rcu, which aca_free_rcu queues from inside its own callback, so netdev_run_todo's rcu_barrier() does not wait for it",
			nested, res.Count))
	}
	if try != "" {
		out = append(out, try)
	}
	return out
}

// qsSources lists what supplied the quiescent states the grace periods
// waited for, largest first, from the run's qs_* counters.
func qsSources(c map[string]int64) string {
	type src struct {
		what string
		n    int64
	}
	var l []src
	for _, s := range []src{
		{"context switches", c["qs_context_switch"]},
		{"schedule() passes that kept the CPU", c["qs_schedule"]},
		{"ticks in idle or user mode", c["qs_tick_idle"]},
		{"ticks outside a reader (preemptible RCU)", c["qs_tick_preempt"]},
		{"cond_resched()", c["qs_cond_resched"]},
		{"FQS scans of idle CPUs", c["qs_fqs_idle"]},
		{"the GP kthread's CPU at GP start", c["qs_gp_init"]},
	} {
		if s.n > 0 {
			l = append(l, s)
		}
	}
	slices.SortStableFunc(l, func(a, b src) int { return int(b.n - a.n) })
	var parts []string
	for _, s := range l {
		parts = append(parts, fmt.Sprintf("%s (%d)", s.what, s.n))
	}
	return strings.Join(parts, ", ")
}

// rcuHolder names the subsystem whose reference an RCU callback drops: the
// one whose release made most devices ready, for runs that count it, else
// the line's.
func (r *resolved) rcuHolder(c map[string]int64) string {
	if h, n := lastRef(c); n > 0 {
		return h
	}
	var l []string
	for _, s := range r.profile.Subsystems {
		if s.Release == netdev.ReleaseRCU {
			l = append(l, s.Holder.String())
		}
	}
	if len(l) == 0 {
		return "none of its holders"
	}
	return strings.Join(l, ", ")
}

func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}
