package rcu

import "github.com/ndst-project/ndst/sim"

// tree26 is Tree RCU as 2.6.29-2.6.3x had it (kernel/rcutree.c, read at
// 2.6.31.14 and 2.6.32; the preemptible variant is rcutree_plugin.h of
// 2.6.32). One rcu_node (a few CPUs), so the hierarchy is a single qsmask.
//
//   - __call_rcu: notes GP ends and starts on this CPU, queues the callback
//     in NEXT, and starts a GP if none is in progress ("Start a new grace
//     period if one not already started"); rcu_start_gp puts all of this
//     CPU's callbacks in WAIT for it, sets every online CPU in qsmask, and
//     sets jiffies_force_qs = jiffies + RCU_JIFFIES_TILL_FORCE_QS (3).
//   - The tick calls rcu_check_callbacks when rcu_pending says there is
//     work: a tick from user mode or the idle loop is a QS (rcu_qsctr_inc;
//     for the preemptible flavour any tick outside a reader), then it
//     raises RCU_SOFTIRQ. A context switch is a QS (rcu_qsctr_inc from
//     schedule()).
//   - The softirq (__rcu_process_callbacks): FQS if jiffies_force_qs has
//     passed; advance this CPU's callbacks if a GP ended (DONE <- WAIT <-
//     NEXT_READY <- NEXT); notice a new GP, or report a QS passed since
//     noticing it (cpu_quiet: this CPU's NEXT become NEXT_READY); the last
//     report ends the GP, advances the reporting CPU's callbacks and starts
//     the next GP if that CPU needs one; start a GP if this CPU needs one;
//     rcu_do_batch.
//   - 2.6.33 (GPEndBeforeAdvance): the GP end starts the next GP whenever
//     the reporting CPU had callbacks beyond DONE before advancing them,
//     including the ones that waited for the GP that just ended, so every
//     such GP end is followed by one more GP (kernel/rcutree.c at 2.6.33.3:
//     cpu_needs_another_gp l.172-175, rcu_start_gp l.660-741 with
//     rcu_start_gp_per_cpu l.626-647, rcu_report_qs_rsp l.750-757).
//   - force_quiescent_state: on UP only set_need_resched(), every time;
//     on SMP, the first scan after a GP starts reports CPUs in dyntick
//     idle, later scans report CPUs idle now or that passed through
//     dyntick idle since (rcu_implicit_dynticks_qs: the counter moves on
//     idle entry and exit, not at a context switch), and send a reschedule
//     IPI to the others (set_need_resched on the scanning CPU).
//     Each scan pushes jiffies_force_qs 3 jiffies on.
type tree26 struct {
	r                *RCU
	gpnum, completed uint64
	qsmask           []bool
	nqs              int
	forceQSAt        int64 // jiffies_force_qs
	signaled         int   // fqsSaveDyntick or fqsForce
	started          sim.Time
	cpu              []tree26CPU
}

type tree26CPU struct {
	gpnum, completed uint64
	qsPending        bool
	passedQuiesc     bool
	passedCompleted  uint64 // passed_quiesc_completed
	dyntickSnap      int64  // idle entries seen by the first FQS scan (the dynticks counter)
}

// RCU_JIFFIES_TILL_FORCE_QS in 2.6.3x.
const tree26ForceQSJiffies = 3

const (
	fqsSaveDyntick = iota // RCU_SAVE_DYNTICK (= RCU_SIGNAL_INIT with NO_HZ)
	fqsForce              // RCU_FORCE_QS
)

func newTree26(r *RCU) *tree26 {
	n := len(r.cpus)
	return &tree26{r: r, qsmask: make([]bool, n), cpu: make([]tree26CPU, n)}
}

func (g *tree26) gpInProgress() bool { return g.completed != g.gpnum }
func (g *tree26) gpStart() sim.Time  { return g.started }
func (g *tree26) holdouts() []int    { return maskList(g.qsmask) }

func (g *tree26) needsCPU(d *cpuData) bool { return d.cbs.len() > 0 }

func (g *tree26) cpuNeedsAnotherGP(d *cpuData) bool {
	return !d.cbs.restEmpty(segDone) && !g.gpInProgress()
}

func (g *tree26) queue(d *cpuData, fn func()) {
	g.processGPEnd(d)
	g.checkNewGP(d)
	d.cbs.append(fn)
	if !g.gpInProgress() {
		g.startGP(d)
	}
	if d.cbs.len() > g.r.cfg.QHiMark {
		g.fqs(d, false)
	} else if g.r.e.Jiffies() > g.forceQSAt {
		g.fqs(d, true)
	}
}

// tick and softirq are restated by steadyTicks (steady.go) for the ticks a
// spinning CPU may skip: a change here needs one there, which
// TestSteadyTicksChangeNoFigure (ndst/emu) shows when it is missing.
func (g *tree26) tick(d *cpuData, mode sim.Mode) {
	if !g.pending(d) {
		return
	}
	switch {
	case mode == sim.ModeUser || mode == sim.ModeIdle:
		g.qs(d, QSTickIdle)
	case g.r.cfg.Preemptible && mode == sim.ModeKernel && d.cpu.Curr() != nil && nestingOf(d.cpu.Curr()).nesting == 0:
		g.qs(d, QSTickPreempt) // rcu_preempt_check_callbacks
	}
	d.cpu.RaiseSoftirq(sim.SoftirqRCU)
}

func (g *tree26) contextSwitch(d *cpuData, src QSSource) { g.qs(d, src) }

// qs is rcu_qsctr_inc / rcu_preempt_qs.
func (g *tree26) qs(d *cpuData, src QSSource) {
	c := &g.cpu[d.cpu.ID]
	if !c.passedQuiesc {
		d.qsSrc = src
	}
	c.passedQuiesc = true
	c.passedCompleted = c.completed
}

// pending is __rcu_pending.
func (g *tree26) pending(d *cpuData) bool {
	c := &g.cpu[d.cpu.ID]
	switch {
	case c.qsPending, d.cbs.ready(), g.cpuNeedsAnotherGP(d):
		return true
	case g.completed != c.completed, g.gpnum != c.gpnum:
		return true
	case g.gpInProgress() && g.r.e.Jiffies() > g.forceQSAt:
		return true
	}
	return false
}

func (g *tree26) softirq(d *cpuData) {
	if g.gpInProgress() && g.r.e.Jiffies() > g.forceQSAt {
		g.fqs(d, true)
	}
	g.processGPEnd(d)
	g.checkQS(d)
	if g.cpuNeedsAnotherGP(d) {
		g.startGP(d)
	}
	g.r.doBatch(d)
}

// startGP is rcu_start_gp, run on d's CPU.
func (g *tree26) startGP(d *cpuData) {
	if !g.cpuNeedsAnotherGP(d) {
		return
	}
	g.beginGP(d)
}

// beginGP starts the next GP on d's CPU, whose callbacks all belong to it.
func (g *tree26) beginGP(d *cpuData) {
	g.gpnum++
	g.r.traceGP(g.gpnum, true)
	g.started = g.r.e.Now()
	g.forceQSAt = g.r.e.Jiffies() + tree26ForceQSJiffies
	g.signaled = fqsSaveDyntick
	g.r.stats.GPsStarted++
	g.r.stall.reset()
	g.noteNewGP(d)
	// "Because we are first, we know that all our callbacks will be
	// covered by this upcoming grace period."
	d.cbs.setTail(segNextReady, d.cbs.tail[segNext])
	d.cbs.setTail(segWait, d.cbs.tail[segNext])
	for i := range g.qsmask {
		g.qsmask[i] = true
	}
	g.nqs = len(g.qsmask)
	for _, x := range g.r.cpus {
		x.cpu.KickTick()
	}
}

func (g *tree26) noteNewGP(d *cpuData) {
	c := &g.cpu[d.cpu.ID]
	c.qsPending, c.passedQuiesc, c.gpnum = true, false, g.gpnum
}

// checkNewGP is check_for_new_grace_period.
func (g *tree26) checkNewGP(d *cpuData) bool {
	if g.cpu[d.cpu.ID].gpnum != g.gpnum {
		g.noteNewGP(d)
		return true
	}
	return false
}

// processGPEnd is rcu_process_gp_end: advance the callbacks by one
// segment if a GP ended since this CPU last looked.
func (g *tree26) processGPEnd(d *cpuData) {
	c := &g.cpu[d.cpu.ID]
	if c.completed == g.completed {
		return
	}
	l := &d.cbs
	l.setTail(segDone, l.tail[segWait])
	l.setTail(segWait, l.tail[segNextReady])
	l.setTail(segNextReady, l.tail[segNext])
	c.completed = g.completed
}

// checkQS is rcu_check_quiescent_state.
func (g *tree26) checkQS(d *cpuData) {
	if g.checkNewGP(d) {
		return
	}
	c := &g.cpu[d.cpu.ID]
	if !c.qsPending || !c.passedQuiesc {
		return
	}
	// cpu_quiet
	if c.passedCompleted != g.completed {
		c.passedQuiesc = false // a QS from before this GP: try again later
		return
	}
	if !g.qsmask[d.cpu.ID] {
		return
	}
	c.qsPending = false
	d.cbs.setTail(segNextReady, d.cbs.tail[segNext])
	g.quiet(d.cpu.ID, d)
}

// quiet is cpu_quiet_msk for one CPU; cur is the CPU running it. The last
// report ends the GP there.
func (g *tree26) quiet(i int, cur *cpuData) {
	if !g.qsmask[i] {
		return
	}
	g.qsmask[i] = false
	g.nqs--
	g.r.countQS(i)
	g.r.traceQS(i, "cpu_quiet")
	if g.nqs > 0 {
		return
	}
	g.completed = g.gpnum
	g.r.traceGP(g.completed, false)
	g.r.stats.GPsCompleted++
	g.r.stats.GPTime += g.r.e.Now() - g.started
	// 2.6.33's rcu_report_qs_rsp calls rcu_start_gp, which asks
	// cpu_needs_another_gp before this CPU's callbacks are advanced: the
	// ones that waited for the GP just ended still count, so a GP starts
	// whenever any were queued, and only then are they advanced
	// (rcu_start_gp_per_cpu). 2.6.31/32's cpu_quiet_msk advances first.
	if g.r.cfg.GPEndBeforeAdvance && !cur.cbs.restEmpty(segDone) {
		g.processGPEnd(cur)
		g.beginGP(cur)
	} else {
		g.processGPEnd(cur)
		g.startGP(cur)
	}
	for _, x := range g.r.cpus {
		x.cpu.KickTick()
	}
}

// fqs is force_quiescent_state, run on cur's CPU.
func (g *tree26) fqs(cur *cpuData, relaxed bool) {
	if !g.gpInProgress() {
		return
	}
	if len(g.r.cpus) == 1 {
		cur.cpu.SetNeedResched()
		g.r.stats.FQSResched++
		return
	}
	j := g.r.e.Jiffies()
	if relaxed && g.forceQSAt >= j {
		return
	}
	g.r.stats.FQSScans++
	g.forceQSAt = j + tree26ForceQSJiffies
	lastcomp := g.completed
	for i, d := range g.r.cpus {
		if g.completed != lastcomp {
			return // the GP ended while scanning
		}
		if !g.qsmask[i] {
			continue
		}
		c := &g.cpu[i]
		switch {
		case g.signaled == fqsSaveDyntick:
			c.dyntickSnap = d.cpu.IdleEntries
			if d.cpu.Idle() {
				d.qsSrc = QSFQSIdle
				g.quiet(i, cur)
			}
		case d.cpu.Idle() || d.cpu.IdleEntries != c.dyntickSnap:
			d.qsSrc = QSFQSIdle
			g.quiet(i, cur) // rcu_implicit_dynticks_qs
		default:
			d.cpu.SetNeedResched() // rcu_implicit_offline_qs: resched IPI
			g.r.stats.FQSResched++
		}
	}
	if g.completed == lastcomp {
		g.signaled = fqsForce
	}
}

func maskList(m []bool) []int {
	var l []int
	for i, h := range m {
		if h {
			l = append(l, i)
		}
	}
	return l
}
