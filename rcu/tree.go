package rcu

import "github.com/ndst-project/ndst/sim"

// tree is modern Tree RCU (kernel/rcu/tree.c, read at 6.18; the same shape
// since the grace-period kthread took over GP processing). Callbacks wait in
// an rcu_segcblist: NEXT until accelerated, then WAIT or NEXT_READY tagged
// with the GP they need.
//
//   - call_rcu only queues (in NEXT); it starts nothing.
//   - The tick (rcu_sched_clock_irq): a QS from user mode or idle, and, with
//     preemptible RCU or CONFIG_PREEMPT_COUNT, from kernel code outside any
//     reader or preempt-disabled region (rcu_flavor_sched_clock_irq); then,
//     if rcu_pending, it raises RCU_SOFTIRQ.
//   - The softirq (rcu_core): note GP changes (advance callbacks whose GP
//     ended, accelerate new ones, note a new GP and whether this CPU owes
//     it a QS); report a QS passed since (rcu_report_qs_rdp, accelerating
//     this CPU's callbacks); with no GP in progress, accelerate NEXT, which
//     asks for a GP (rcu_start_this_gp wakes the GP kthread); rcu_do_batch.
//   - The GP kthread (rcu_gp_kthread, unbound): rcu_gp_init, then the FQS
//     loop: sleep jiffies_till_first_fqs (a timer, so the timer wheel's
//     rounding applies), or until the last QS is reported; an FQS scan
//     first snapshots the CPUs' dynticks state and reports those that are
//     idle (rcu_watching_snap_save); later scans report CPUs idle now or
//     that passed through idle since the snapshot (rcu_watching_snap_recheck:
//     a context switch alone is no such passage), and flag a CPU that has
//     held the GP up past jiffies_to_sched_qs as urgent (rcu_urgent_qs; its
//     own next tick then forces a reschedule, or cond_resched() reports
//     through rcu_all_qs); past halfway to the stall timeout they also
//     resched_cpu() it once per jiffies_to_sched_qs; then every
//     jiffies_till_next_fqs.
//     rcu_gp_cleanup ends the GP; only the kthread's own CPU notes the end
//     there (every other CPU in its next softirq); another GP starts if one
//     was asked for meanwhile.
type tree struct {
	r                *RCU
	gpNum, completed uint64
	gpNeeded         uint64
	qsmask           []bool
	nqs              int
	started          sim.Time
	requested        bool // RCU_GP_FLAG_INIT
	fqsFlag          bool // RCU_GP_FLAG_FQS: the last QS was reported
	kthread          *sim.Task
	wq               sim.WaitQueue
	cpu              []treeCPU
}

type treeCPU struct {
	seenStarted, seenCompleted uint64 // rdp->gp_seq
	coreNeedsQS                bool
	noQS                       bool  // cpu_no_qs.b.norm
	snap                       int64 // idle entries at the first scan (watching_snap)
	lastResched                int64 // last_fqs_resched, in jiffies
}

func newTree(r *RCU) *tree {
	n := len(r.cpus)
	g := &tree{r: r, qsmask: make([]bool, n), cpu: make([]treeCPU, n)}
	g.kthread = r.e.Go("rcu_preempt", 0, true, g.gpKthread)
	if !r.cfg.Preemptible {
		g.kthread.Name = "rcu_sched"
	}
	g.kthread.SetUnbound()
	if r.cfg.CoreKthread && !r.cfg.CoreKthreadNormalPrio {
		g.kthread.SetRT()
	}
	return g
}

func (g *tree) gpInProgress() bool { return g.gpNum != g.completed }
func (g *tree) gpStart() sim.Time  { return g.started }
func (g *tree) holdouts() []int    { return maskList(g.qsmask) }

func (g *tree) queue(d *cpuData, fn func()) { d.cbs.append(fn) }

func (g *tree) needsCPU(d *cpuData) bool { return d.cbs.len() > 0 && !d.offloaded }

// ---- the callback list (rcu_segcblist_advance / _accelerate) ----

// advance moves the callbacks whose GP has completed to DONE.
func advance(l *cblist, completed uint64) {
	i := segWait
	for ; i < segNext; i++ {
		if l.gp[i] > completed {
			break
		}
		l.tail[segDone] = l.tail[i]
	}
	if i == segWait {
		return
	}
	for j := segWait; j < i; j++ {
		l.tail[j] = l.tail[segDone]
	}
	for j := segWait; i < segNext; i, j = i+1, j+1 {
		if l.tail[j] == l.tail[segNext] {
			break
		}
		l.tail[j], l.gp[j] = l.tail[i], l.gp[i]
	}
}

// accelerate assigns GP seq to the callbacks that can wait for it, merging
// them into one segment; it reports whether any were assigned.
func accelerate(l *cblist, seq uint64) bool {
	if l.restEmpty(segDone) {
		return false
	}
	i := segNextReady
	for ; i > segDone; i-- {
		if l.segLen(i) > 0 && l.gp[i] < seq {
			break
		}
	}
	if l.restEmpty(i) {
		return false
	}
	if i++; i >= segNext {
		return false
	}
	for ; i < segNext; i++ {
		l.tail[i] = l.tail[segNext]
		l.gp[i] = seq
	}
	return true
}

// accelerateCBs is rcu_accelerate_cbs: assign the next GP and ask for it.
func (g *tree) accelerateCBs(d *cpuData) {
	if d.offloaded {
		return // rcuog does it (nocb.go)
	}
	if accelerate(&d.cbs, g.gpNum+1) {
		g.startThisGP(g.gpNum + 1)
	}
}

// startThisGP is rcu_start_this_gp: record the request; wake the kthread
// if no GP is in progress.
func (g *tree) startThisGP(seq uint64) {
	g.gpNeeded = max(g.gpNeeded, seq)
	if g.gpInProgress() || g.requested {
		return
	}
	g.requested = true
	g.wq.WakeAll()
}

// maxBlimit is DEFAULT_MAX_RCU_BLIMIT: the batch limit of an overloaded CPU.
const maxBlimit = 10000

// overloaded is the flood check of call_rcu_core (6.18 kernel/rcu/tree.c
// l.3023-3041; 5.10 l.2881-2899): once a CPU's list has grown by more than
// qhimark since the last check, start a GP at once if none is running,
// else raise the CPU's batch limit to 10000 and force a quiescent-state
// scan now, unless one ran since the last such kick.
func (g *tree) overloaded(d *cpuData) {
	if d.cbs.len() <= d.qlenLastFQS+g.r.cfg.QHiMark {
		return
	}
	g.noteGPChanges(d)
	if !g.gpInProgress() {
		g.accelerateCBs(d)
		return
	}
	d.blimit = maxBlimit
	if g.r.stats.FQSScans == d.fqsSnap && d.cbs.len() > 1 {
		g.fqsFlag = true // rcu_force_quiescent_state: RCU_GP_FLAG_FQS
		g.wq.WakeAll()
	}
	d.fqsSnap = g.r.stats.FQSScans
	d.qlenLastFQS = d.cbs.len()
}

// ---- per-CPU GP tracking ----

// noteGPChanges is __note_gp_changes.
func (g *tree) noteGPChanges(d *cpuData) {
	c := &g.cpu[d.cpu.ID]
	if c.seenStarted == g.gpNum && c.seenCompleted == g.completed {
		return
	}
	if g.completed > c.seenCompleted {
		if !d.offloaded {
			advance(&d.cbs, g.completed)
		}
		g.accelerateCBs(d)
		c.coreNeedsQS = false
	} else {
		g.accelerateCBs(d)
		if c.coreNeedsQS {
			c.coreNeedsQS = g.qsmask[d.cpu.ID]
		}
	}
	if g.gpNum > c.seenStarted {
		need := g.gpInProgress() && g.qsmask[d.cpu.ID]
		c.noQS, c.coreNeedsQS = need, need
	}
	c.seenStarted, c.seenCompleted = g.gpNum, g.completed
}

// qs is rcu_qs.
func (g *tree) qs(d *cpuData, src QSSource) {
	c := &g.cpu[d.cpu.ID]
	if c.noQS {
		d.qsSrc = src
	}
	c.noQS = false
}

func (g *tree) contextSwitch(d *cpuData, src QSSource) { g.qs(d, src) }

func (g *tree) tick(d *cpuData, mode sim.Mode) {
	g.r.urgentTick(d, mode)
	switch {
	case mode == sim.ModeUser || mode == sim.ModeIdle:
		g.qs(d, QSTickIdle)
	case (g.r.cfg.Preemptible || g.r.cfg.PreemptCount) && mode == sim.ModeKernel && g.r.readerFree(d.cpu):
		g.qs(d, QSTickPreempt)
	}
	if g.pending(d) {
		g.r.invokeCore(d)
	}
}

// pending is rcu_pending.
func (g *tree) pending(d *cpuData) bool {
	c := &g.cpu[d.cpu.ID]
	switch {
	case c.coreNeedsQS && !c.noQS && g.gpInProgress():
		return true
	case !d.offloaded && d.cbs.ready():
		return true
	case !d.offloaded && !g.gpInProgress() && !d.cbs.restEmpty(segNextReady):
		return true
	case c.seenStarted != g.gpNum || c.seenCompleted != g.completed:
		return true
	}
	return false
}

// softirq is rcu_core.
func (g *tree) softirq(d *cpuData) {
	g.checkQS(d)
	if !g.gpInProgress() && !d.cbs.restEmpty(segNextReady) {
		g.accelerateCBs(d)
	}
	if d.cbs.ready() && !d.offloaded {
		g.r.doBatch(d)
	}
}

// checkQS is rcu_check_quiescent_state and rcu_report_qs_rdp.
func (g *tree) checkQS(d *cpuData) {
	g.noteGPChanges(d)
	c := &g.cpu[d.cpu.ID]
	if !c.coreNeedsQS || c.noQS || !g.gpInProgress() || !g.qsmask[d.cpu.ID] {
		return
	}
	c.coreNeedsQS = false
	g.accelerateCBs(d) // "this GP can't end until this CPU checks in"
	g.r.traceQS(d.cpu.ID, "its own rcu_core")
	g.report(d.cpu.ID)
}

// report clears a CPU from the current GP; the last one wakes the kthread.
func (g *tree) report(i int) {
	if !g.qsmask[i] {
		return
	}
	g.qsmask[i] = false
	g.nqs--
	g.r.countQS(i)
	if g.nqs == 0 {
		g.fqsFlag = true
		g.wq.WakeAll()
	}
}

// ---- the grace-period kthread ----

func (g *tree) gpKthread(t *sim.Task) {
	for {
		g.wq.Wait(t, func() bool { return g.requested })
		g.requested = false
		t.Charge(g.r.cfg.KthreadCost)
		if g.gpInProgress() || g.gpNeeded <= g.gpNum {
			continue
		}
		g.gpInit(t)
		g.fqsLoop(t)
		g.gpCleanup(t)
	}
}

// gpInit is rcu_gp_init.
func (g *tree) gpInit(t *sim.Task) {
	g.gpNum++
	g.r.traceGP(g.gpNum, true)
	g.started = g.r.e.Now()
	g.fqsFlag = false
	g.r.stats.GPsStarted++
	g.r.stall.reset()
	for i := range g.qsmask {
		g.qsmask[i] = true
	}
	g.nqs = len(g.qsmask)
	d := g.r.cpus[t.CPU().ID]
	g.noteGPChanges(d)
	if g.r.cfg.GPInitSelfQS {
		g.selfQS(d)
	}
	for _, d := range g.r.cpus {
		d.cpu.KickTick()
	}
}

// selfQS is the end of rcu_gp_init from 7.x (read in 7.2.13
// kernel/rcu/tree.c l.2015-2024, not in 6.18): rcu_qs() and
// rcu_report_qs_rdp() for the GP kthread's own CPU, which cannot be in a
// reader while it initializes the GP; without it that CPU, busy running the
// kthread at the first FQS scan's idle snapshot, is credited only by a later
// scan or its own tick.
func (g *tree) selfQS(d *cpuData) {
	c := &g.cpu[d.cpu.ID]
	if !g.qsmask[d.cpu.ID] {
		return
	}
	c.noQS, c.coreNeedsQS = false, false
	d.qsSrc = QSGPInit
	g.accelerateCBs(d)
	g.r.traceQS(d.cpu.ID, "rcu_gp_init (the GP kthread's CPU)")
	g.report(d.cpu.ID)
}

// fqsLoop is rcu_gp_fqs_loop.
func (g *tree) fqsLoop(t *sim.Task) {
	j := int64(g.r.cfg.FQSFirst)
	first := true
	for {
		forceAt := g.r.e.Jiffies() + j
		if j > 0 { // jiffies_till_first_fqs=0: the first scan at once
			g.wq.WaitTimeout(t, func() bool { return g.fqsFlag || g.nqs == 0 }, j)
		}
		if g.nqs == 0 {
			return
		}
		if g.r.e.Jiffies() >= forceAt || g.fqsFlag {
			t.Charge(g.r.cfg.KthreadCost)
			g.fqs(first)
			first, g.fqsFlag = false, false
			j = int64(g.r.cfg.FQSNext)
		} else {
			j = max(1, forceAt-g.r.e.Jiffies())
		}
	}
}

// fqs is rcu_gp_fqs: report idle CPUs (rcu_watching_snap_save on the first
// scan, _recheck later) and push long holdouts (6.18 kernel/rcu/tree.c
// l.854-985).
func (g *tree) fqs(first bool) {
	g.r.stats.FQSScans++
	e := g.r.e
	jtsq := g.holdoutPushDelay()
	j := e.Jiffies()
	startJ := e.JiffiesAt(g.started)
	resched := g.r.cfg.StallTimeout > 0 && j > startJ+int64(g.r.cfg.StallTimeout/2/e.Period()) // jiffies_resched
	for i, d := range g.r.cpus {
		if !g.qsmask[i] {
			continue
		}
		c := &g.cpu[i]
		idle := d.cpu.Idle()
		if first {
			c.snap = d.cpu.IdleEntries
		} else if d.cpu.IdleEntries != c.snap {
			idle = true // it passed through idle since the snapshot
		}
		if idle {
			g.r.traceQS(i, "FQS scan (idle)")
			d.qsSrc = QSFQSIdle
			g.report(i)
			continue
		}
		if first {
			continue // the snapshot pass only reports CPUs in an extended QS
		}
		if j > startJ+jtsq || resched {
			if !d.urgentQS {
				g.r.stats.UrgentQS++
			}
			d.urgentQS = true // set again at every scan, as the kernel does
		}
		if resched && j > c.lastResched+jtsq {
			c.lastResched = j
			d.cpu.SetNeedResched() // resched_cpu
			g.r.stats.FQSResched++
		}
	}
}

// holdoutPushDelay is jiffies_to_sched_qs: jiffies_till_sched_qs when
// given, else first + 2*next FQS intervals, at least HZ/10 + nr_cpu_ids/256
// (adjust_jiffies_till_sched_qs, 6.18 tree.c l.458-474).
func (g *tree) holdoutPushDelay() int64 {
	if g.r.cfg.SchedQSSet {
		return int64(g.r.cfg.SchedQS)
	}
	j := int64(g.r.cfg.FQSFirst + 2*g.r.cfg.FQSNext)
	return max(j, int64(g.r.e.Config().HZ/10+len(g.r.cpus)/256))
}

// gpCleanup is rcu_gp_cleanup.
func (g *tree) gpCleanup(t *sim.Task) {
	t.Charge(g.r.cfg.KthreadCost)
	g.completed = g.gpNum
	g.r.traceGP(g.completed, false)
	g.r.stats.GPsCompleted++
	g.r.stats.GPTime += g.r.e.Now() - g.started
	d := g.r.cpus[t.CPU().ID]
	g.noteGPChanges(d)
	if g.gpNeeded > g.completed {
		g.requested = true
	}
	for _, x := range g.r.cpus {
		x.cpu.KickTick()
	}
	g.r.gpEnded(g.completed) // wake_from_gp waiters, rcuog (wakefromgp.go)
}
