package rcu

import "github.com/ndst-project/ndst/sim"

// Steady ticks (sim.SteadyHooks): which coming ticks of a CPU whose task
// spins change nothing in RCU but counters, so that the engine may compute
// them instead of running them (sim/steady.go). Each implementation that
// can say so implements steadyTicker; the others never let a spin skip a
// tick. Every rule here restates what the implementation's tick and softirq
// do in the state it finds, and refuses whatever it does not restate.

// steadyTicker is an implementation that can certify ticks.
type steadyTicker interface {
	// steadyTicks returns how many ticks from jiffy first (no more than most)
	// interrupting mode leave every state as it is but counters.
	steadyTicks(d *cpuData, mode sim.Mode, first, most int64) int64
	// skipTicks adds the counters of n such ticks from jiffy first.
	skipTicks(d *cpuData, first, n int64)
}

// SteadyTicks implements sim.SteadyHooks.
func (r *RCU) SteadyTicks(c *sim.CPU, mode sim.Mode, first, most int64) int64 {
	s, ok := r.impl.(steadyTicker)
	d := r.cpus[c.ID]
	if !ok || r.cfg.CoreKthread || d.offloaded || d.urgentQS {
		return 0
	}
	n := s.steadyTicks(d, mode, first, most)
	if n > 0 && r.cfg.StallTimeout > 0 && r.impl.gpInProgress() {
		// checkStall: a report at the first tick at or after the GP's
		// start plus the next report's delay (set at the GP's first tick).
		if r.stall.next == 0 {
			return 0
		}
		due := int64(r.impl.gpStart() + r.stall.next)
		p := int64(r.e.Period())
		n = min(n, (due+p-1)/p-first)
	}
	return max(n, 0)
}

// SkipTicks implements sim.SteadyHooks.
func (r *RCU) SkipTicks(c *sim.CPU, _ sim.Mode, first, n int64) {
	r.impl.(steadyTicker).skipTicks(r.cpus[c.ID], first, n)
}

// steadyTicks, for 2.6.3x Tree RCU: rcu_pending at jiffy j is the CPU's own
// work (a QS still owed, callbacks ready, a GP to start or to notice) or,
// with a GP in progress, j past jiffies_force_qs. Where it is false the
// tick does nothing. Where it is true the tick reports no QS only in kernel
// mode of non-preemptible RCU, and the softirq it raises changes nothing
// only when this CPU has noticed the current GP and its end, has no QS
// passed to report, needs no GP and has no callback ready; its FQS then
// changes nothing on one CPU once need_resched is set but FQSResched (an
// SMP scan moves jiffies_force_qs on). The ticks certified stay on one side
// of jiffies_force_qs.
func (g *tree26) steadyTicks(d *cpuData, mode sim.Mode, first, most int64) int64 {
	c := &g.cpu[d.cpu.ID]
	own := c.qsPending || d.cbs.ready() || g.cpuNeedsAnotherGP(d) || g.completed != c.completed || g.gpnum != c.gpnum
	gp := g.gpInProgress()
	n := most
	fqs := gp && first > g.forceQSAt
	if gp && !fqs {
		n = min(most, g.forceQSAt-first+1)
	}
	if !own && !fqs {
		return n // rcu_pending is false at each
	}
	if mode != sim.ModeKernel || g.r.cfg.Preemptible {
		return 0 // the tick reports a QS (or may)
	}
	if fqs && (len(g.r.cpus) != 1 || !d.cpu.NeedResched()) {
		return 0
	}
	if c.completed != g.completed || c.gpnum != g.gpnum || c.qsPending && c.passedQuiesc || g.cpuNeedsAnotherGP(d) || d.cbs.ready() {
		return 0
	}
	return n
}

// skipTicks: each certified tick past jiffies_force_qs ran FQS, which on
// one CPU only asks for a reschedule.
func (g *tree26) skipTicks(_ *cpuData, first, n int64) {
	if g.gpInProgress() && first > g.forceQSAt {
		g.r.stats.FQSResched += n
	}
}
