package rcu

import "github.com/ndst-project/ndst/sim"

// classic is Classic RCU (kernel/rcuclassic.c, read at 2.6.31.14; removed
// in 2.6.32). Batches are numbered: rcp->cur is the batch in progress (or
// the last started), rcp->completed the last finished, rcp->pending the
// highest one asked for.
//
//   - __call_rcu tags the callback with batch cur+1 (rdp->batch), moving
//     this CPU's older nxtlist parts forward first; it starts nothing.
//   - The tick calls rcu_check_callbacks when rcu_pending says there is
//     work: user mode or idle is a QS (rcu_qsctr_inc); then it raises
//     RCU_SOFTIRQ. A context switch is a QS.
//   - The softirq (__rcu_process_callbacks): moves the nxtlist parts whose
//     batch has completed to the done list; asks for this CPU's batch
//     (rcp->pending) and starts it if none is in progress (rcu_start_batch:
//     the batch needs every online CPU not in nohz idle at that moment);
//     then rcu_check_quiescent_state: a CPU first notices a new batch (and
//     forgets earlier QSs), and reports a QS passed since noticing it from a
//     later softirq; the last report completes the batch and starts the
//     next pending one; finally rcu_do_batch runs the done list. So a
//     callback moves to the done list only at the softirq after the one
//     that saw its batch complete.
//   - force_quiescent_state only when more than qhimark callbacks are
//     queued: set_need_resched(), plus a reschedule IPI to the CPUs the
//     batch waits for (once per batch) on SMP.
//
// The four list segments are: done list, nxtlist[0], nxtlist[1], nxtlist[2].
type classic struct {
	r                    *RCU
	cur, completed, pend uint64
	cpumask              []bool
	signaled             bool
	started              sim.Time
	cpu                  []classicCPU
}

type classicCPU struct {
	quiescbatch  uint64
	qsPending    bool
	passedQuiesc bool
	batch        uint64
}

func newClassic(r *RCU) *classic {
	n := len(r.cpus)
	return &classic{r: r, cpumask: make([]bool, n), cpu: make([]classicCPU, n)}
}

func (g *classic) gpInProgress() bool { return g.cur != g.completed }
func (g *classic) gpStart() sim.Time  { return g.started }
func (g *classic) holdouts() []int    { return maskList(g.cpumask) }

func nxtNonEmpty(d *cpuData) bool { return !d.cbs.restEmpty(segDone) }

func (g *classic) queue(d *cpuData, fn func()) {
	c := &g.cpu[d.cpu.ID]
	batch := g.cur + 1
	l := &d.cbs
	if nxtNonEmpty(d) && batch > c.batch {
		l.setTail(segWait, l.tail[segNextReady]) // nxttail[0] = nxttail[1]
		l.setTail(segNextReady, l.tail[segNext]) // nxttail[1] = nxttail[2]
		if batch-1 > c.batch {
			l.setTail(segWait, l.tail[segNext]) // nxttail[0] = nxttail[2]
		}
	}
	c.batch = batch
	l.append(fn)
	if l.len() > g.r.cfg.QHiMark {
		g.forceQS(d)
	}
}

func (g *classic) forceQS(d *cpuData) {
	d.cpu.SetNeedResched()
	if !g.signaled {
		g.signaled = true
		for i, x := range g.r.cpus {
			if g.cpumask[i] && i != d.cpu.ID {
				x.cpu.SetNeedResched()
			}
		}
	}
}

// pending is __rcu_pending.
func (g *classic) pending(d *cpuData) bool {
	c := &g.cpu[d.cpu.ID]
	l := &d.cbs
	if nxtNonEmpty(d) {
		switch {
		case g.completed >= c.batch:
			return true
		case g.completed+1 >= c.batch && l.tail[segWait] != l.tail[segNextReady]:
			return true
		case l.segLen(segWait) > 0:
			return true
		case c.batch > g.pend:
			return true
		}
	}
	return l.ready() || c.quiescbatch != g.cur || c.qsPending
}

func (g *classic) needsCPU(d *cpuData) bool { return nxtNonEmpty(d) || g.pending(d) }

func (g *classic) tick(d *cpuData, mode sim.Mode) {
	if !g.pending(d) {
		return
	}
	if mode == sim.ModeUser || mode == sim.ModeIdle {
		g.qs(d, QSTickIdle)
	}
	d.cpu.RaiseSoftirq(sim.SoftirqRCU)
}

func (g *classic) contextSwitch(d *cpuData, src QSSource) { g.qs(d, src) }

func (g *classic) qs(d *cpuData, src QSSource) {
	c := &g.cpu[d.cpu.ID]
	if !c.passedQuiesc {
		d.qsSrc = src
	}
	c.passedQuiesc = true
}

func (g *classic) softirq(d *cpuData) {
	c := &g.cpu[d.cpu.ID]
	l := &d.cbs
	if nxtNonEmpty(d) {
		switch {
		case g.completed >= c.batch:
			l.setTail(segWait, l.tail[segNext])
		case g.completed+1 >= c.batch:
			l.setTail(segWait, l.tail[segNextReady])
		}
		if l.segLen(segWait) > 0 { // nxtlist[0] done: to the done list
			l.setTail(segDone, l.tail[segWait])
		}
		if c.batch > g.pend {
			g.pend = c.batch
			g.startBatch()
		}
	}
	g.checkQS(d)
	g.r.doBatch(d)
}

// startBatch is rcu_start_batch.
func (g *classic) startBatch() {
	if g.cur == g.pend || g.completed != g.cur {
		return
	}
	g.cur++
	g.r.traceGP(g.cur, true)
	g.started = g.r.e.Now()
	g.r.stats.GPsStarted++
	g.r.stall.reset()
	n := 0
	for i, x := range g.r.cpus {
		// online CPUs not in nohz idle: an idle CPU whose tick is
		// stopped is left out.
		g.cpumask[i] = !(x.cpu.Idle() && !g.needsCPUNow(x))
		if g.cpumask[i] {
			n++
		}
	}
	g.signaled = false
	if n == 0 {
		g.complete()
		return
	}
	for _, x := range g.r.cpus {
		x.cpu.KickTick()
	}
}

// needsCPUNow says whether an idle CPU keeps its tick (is not in nohz).
func (g *classic) needsCPUNow(d *cpuData) bool { return nxtNonEmpty(d) || d.cbs.ready() }

func (g *classic) checkQS(d *cpuData) {
	c := &g.cpu[d.cpu.ID]
	if c.quiescbatch != g.cur {
		c.qsPending, c.passedQuiesc, c.quiescbatch = true, false, g.cur
		return
	}
	if !c.qsPending || !c.passedQuiesc {
		return
	}
	c.qsPending = false
	if c.quiescbatch == g.cur && g.cpumask[d.cpu.ID] {
		g.cpumask[d.cpu.ID] = false
		g.r.countQS(d.cpu.ID)
		for _, m := range g.cpumask {
			if m {
				return
			}
		}
		g.complete()
	}
}

func (g *classic) complete() {
	g.completed = g.cur
	g.r.traceGP(g.completed, false)
	g.r.stats.GPsCompleted++
	g.r.stats.GPTime += g.r.e.Now() - g.started
	g.startBatch()
	for _, x := range g.r.cpus {
		x.cpu.KickTick()
	}
}
