// Package rcu models the kernel's read-copy-update on top of the sim engine:
// read-side sections, call_rcu, synchronize_rcu, synchronize_rcu_expedited
// and rcu_barrier, with grace periods driven by quiescent states.
//
// Quiescent states (QS) come only from what the kernel counts: a context
// switch, a tick that interrupted user mode or idle, an idle CPU seen by a
// force-quiescent-state (FQS) scan, and, for preemptible RCU, a tick that
// interrupted kernel code outside any reader with preemption enabled.
//
// Two flavours:
//   - Tree (SMP and the 2.6.3x uniprocessor default): call_rcu does not
//     start a grace period (GP); a CPU with waiting callbacks asks for one
//     from its RCU softirq at its next tick, and the softirq starts it
//     (2.6.3x) or the unbound GP kernel thread does (GPKthread, modern);
//     every CPU must then pass a QS after noticing the GP, reported from its
//     RCU softirq; idle CPUs are reported by FQS scans every FQSJiffies;
//     callbacks run in the RCU softirq of their CPU once it has noticed the
//     end of a GP that started after they were queued. Modern rcu_barrier
//     entrains its callback behind the last one queued (BarrierEntrains).
//   - Tiny (1 CPU, no preemption): any QS makes every queued callback ready
//     and raises the softirq that runs them.
//
// On one CPU with non-preemptible RCU, synchronize_rcu and
// synchronize_rcu_expedited return at once (a context switch is a grace
// period there), exactly the property that made the 2009 expedited loop spin.
//
// Invariants (checked by the property tests): no callback runs before a
// grace period that began after it was queued has ended; callbacks of one CPU
// run in the order they were queued; every queued callback runs at most once.
// All methods run on the engine's loop or in its tasks (never concurrently).
package rcu

import (
	"fmt"

	"github.com/ndst-project/ndst/sim"
)

// Flavor selects the RCU implementation.
type Flavor int

// Flavours.
const (
	Tree Flavor = iota
	Tiny
)

func (f Flavor) String() string {
	if f == Tiny {
		return "tiny"
	}
	return "tree"
}

// Config selects the RCU behaviour.
type Config struct {
	Flavor Flavor
	// Preemptible is CONFIG_PREEMPT_RCU: readers may be preempted, so a
	// tick in kernel code outside any reader is a quiescent state.
	Preemptible bool
	// GPKthread drives grace periods from a kernel thread (modern kernels);
	// otherwise the RCU softirq starts and ends them itself (2.6.3x). Either
	// way a GP is asked for from the RCU softirq of a CPU whose callbacks
	// need one, at its next tick: call_rcu itself does not start one.
	GPKthread bool
	// BarrierEntrains: rcu_barrier places its callback behind the last one
	// queued on each CPU, so it needs no grace period of its own (modern
	// rcu_barrier_entrain); otherwise it is queued with call_rcu and waits
	// for the next grace period (2.6.3x).
	BarrierEntrains bool
	// ExpeditedSleeps: the expedited grace period is driven by a kworker
	// and its caller always sleeps, even when every CPU is already
	// quiescent (modern kernels).
	ExpeditedSleeps bool
	// FQSJiffies is the interval between force-quiescent-state scans.
	FQSJiffies int
	// BarrierSkipsIdle: rcu_barrier only queues on CPUs that have callbacks
	// and returns at once when none do (modern); otherwise it queues a
	// callback on every online CPU (2.6.3x).
	BarrierSkipsIdle bool
	// CondReschedQS: cond_resched() reports a quiescent state (rcu_all_qs),
	// and FQS asks CPUs that hold up a GP for too long to reschedule.
	CondReschedQS bool
	// BatchLimit is how many callbacks one softirq invokes (blimit); above
	// QHiMark queued callbacks the limit is lifted.
	BatchLimit int
	QHiMark    int
	// StallTimeout is when a GP that has not ended is reported as a stall.
	StallTimeout sim.Time
	// Costs of RCU's own operations.
	CallRCUCost  sim.Time
	CallbackCost sim.Time
	IPICost      sim.Time
	KthreadCost  sim.Time // one pass of the GP kthread
}

// FQSJiffiesFor returns the modern default FQS interval: 1, 2 or 3 jiffies at
// HZ up to 250, up to 500, above 500.
func FQSJiffiesFor(hz int) int {
	j := 1
	if hz > 250 {
		j++
	}
	if hz > 500 {
		j++
	}
	return j
}

// Stats are RCU's counters.
type Stats struct {
	GPsStarted       int64
	GPsCompleted     int64
	ExpeditedGPs     int64
	ExpeditedNoops   int64
	SyncNoops        int64
	CallbacksQueued  int64
	CallbacksInvoked int64
	Barriers         int64
	BarrierNoops     int64
	FQSScans         int64
	QSReports        int64
	Stalls           int64
}

type callback struct {
	fn     func()
	needGP uint64 // GP number that must complete before fn may run
}

type cpuData struct {
	cpu          *sim.CPU
	gpSeen       uint64 // last GP this CPU noticed starting
	completeSeen uint64 // last GP this CPU noticed ending
	qsPending    bool   // owes a QS for gpSeen
	passedQS     bool
	cbs          []callback // FIFO, needGP non-decreasing
	head         int
}

// expGP is one expedited grace period: the CPUs that were not quiescent when
// it sent its IPIs, and its caller waiting for them.
type expGP struct {
	holdout []bool
	pending int
	wq      sim.WaitQueue
}

func (d *cpuData) queued() int { return len(d.cbs) - d.head }

// RCU is one RCU instance bound to an engine.
type RCU struct {
	e   *sim.Engine
	cfg Config

	gpNum, completed uint64
	gpStart          sim.Time
	fqsAt            int64 // jiffy of the next FQS scan (Tree without kthread)
	holdouts         []bool
	nHoldouts        int
	stallWarned      bool
	cpus             []*cpuData

	kthread     *sim.Task
	kthreadWQ   sim.WaitQueue
	gpRequested bool
	// gpNeeded is the highest GP number a CPU has asked for from its
	// softirq (the kernel's gp_seq_needed).
	gpNeeded uint64

	exps []*expGP // expedited GPs in progress, each waiting for its holdouts

	stats Stats
	// invoking is the CPU whose softirq is running callbacks, if any.
	invoking *sim.CPU
}

// New attaches an RCU model to e.
func New(e *sim.Engine, cfg Config) (*RCU, error) {
	n := len(e.CPUs())
	if cfg.Flavor == Tiny && (n != 1 || cfg.Preemptible) {
		return nil, fmt.Errorf("tiny RCU needs exactly 1 CPU and non-preemptible RCU (have %d CPUs, preemptible=%v)", n, cfg.Preemptible)
	}
	if cfg.FQSJiffies <= 0 {
		cfg.FQSJiffies = FQSJiffiesFor(e.Config().HZ)
	}
	if cfg.BatchLimit <= 0 {
		cfg.BatchLimit = 10
	}
	if cfg.QHiMark <= 0 {
		cfg.QHiMark = 10000
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = 21 * sim.Second
	}
	r := &RCU{e: e, cfg: cfg, holdouts: make([]bool, n)}
	for _, c := range e.CPUs() {
		r.cpus = append(r.cpus, &cpuData{cpu: c})
	}
	e.AddHooks(r)
	e.RegisterSoftirq(sim.SoftirqRCU, r.softirq)
	if cfg.Flavor == Tree && cfg.GPKthread {
		r.kthread = e.Go("rcu_preempt", 0, true, r.gpKthread)
		r.kthread.SetUnbound()
	}
	return r, nil
}

// Config returns the configuration.
func (r *RCU) Config() Config { return r.cfg }

// Stats returns the counters.
func (r *RCU) Stats() Stats { return r.stats }

// GPInProgress reports whether a normal grace period is running.
func (r *RCU) GPInProgress() bool { return r.gpNum != r.completed }

// CallbackCPU returns the CPU whose RCU softirq is running the current
// callback, or nil outside callbacks.
func (r *RCU) CallbackCPU() *sim.CPU { return r.invoking }

// Pending returns the number of callbacks queued and not yet invoked.
func (r *RCU) Pending() int {
	n := 0
	for _, d := range r.cpus {
		n += d.queued()
	}
	return n
}

// blockingIsGP is rcu_blocking_is_gp(): on one CPU without preemptible RCU,
// the caller's own blocking would be a grace period, so none is needed.
func (r *RCU) blockingIsGP() bool {
	return len(r.cpus) == 1 && !r.cfg.Preemptible
}

// ---- read side ----

type taskRCU struct{ nesting int }

func nestingOf(t *sim.Task) *taskRCU {
	if v, ok := t.Value.(*taskRCU); ok {
		return v
	}
	v := &taskRCU{}
	t.Value = v
	return v
}

// ReadLock enters a read-side critical section. Readers are not preempted
// in this model (blocked-reader tracking and priority boosting are not
// modelled), so a reader also holds off its CPU's quiescent states.
func (r *RCU) ReadLock(t *sim.Task) {
	nestingOf(t).nesting++
	t.PreemptDisable()
}

// ReadUnlock leaves a read-side critical section.
func (r *RCU) ReadUnlock(t *sim.Task) {
	n := nestingOf(t)
	if n.nesting == 0 {
		panic("rcu: ReadUnlock without ReadLock in task " + t.Name)
	}
	n.nesting--
	t.PreemptEnable()
}

func (r *RCU) mustNotBeReader(t *sim.Task, what string) {
	if nestingOf(t).nesting > 0 {
		panic(fmt.Sprintf("rcu: %s called inside an RCU read-side critical section (task %s): it would wait for itself", what, t.Name))
	}
}

// ---- update side ----

// CallRCU queues fn on t's CPU to run after a grace period (call_rcu).
func (r *RCU) CallRCU(t *sim.Task, fn func()) {
	t.Charge(r.cfg.CallRCUCost)
	r.enqueue(t.CPU().ID, fn)
}

// needGPForNew is the GP a callback queued now must wait for: the next one to
// start (if one is running it may have begun before the callback was queued).
func (r *RCU) needGPForNew() uint64 { return r.gpNum + 1 }

func (r *RCU) enqueue(cpu int, fn func()) {
	d := r.cpus[cpu]
	d.cbs = append(d.cbs, callback{fn: fn, needGP: r.needGPForNew()})
	r.stats.CallbacksQueued++
	d.cpu.KickTick()
}

// entrain queues fn behind the last callback of the CPU, sharing its grace
// period (rcu_segcblist_entrain). The CPU must have callbacks.
func (r *RCU) entrain(cpu int, fn func()) {
	d := r.cpus[cpu]
	need := d.cbs[len(d.cbs)-1].needGP
	d.cbs = append(d.cbs, callback{fn: fn, needGP: need})
	r.stats.CallbacksQueued++
	d.cpu.KickTick()
}

// Synchronize waits for a full grace period (synchronize_rcu).
func (r *RCU) Synchronize(t *sim.Task) {
	r.mustNotBeReader(t, "synchronize_rcu")
	t.MightSleep()
	if r.blockingIsGP() {
		r.stats.SyncNoops++
		return
	}
	var done sim.Completion
	r.CallRCU(t, done.Complete)
	done.Wait(t)
}

// SynchronizeExpedited waits for an expedited grace period
// (synchronize_rcu_expedited). It reports whether it waited at all: on one
// CPU without preemptible RCU it is a no-op.
func (r *RCU) SynchronizeExpedited(t *sim.Task) bool {
	r.mustNotBeReader(t, "synchronize_rcu_expedited")
	if r.cfg.Flavor == Tiny || r.blockingIsGP() {
		r.stats.ExpeditedNoops++
		return false
	}
	r.stats.ExpeditedGPs++
	me := t.CPU().ID
	x := &expGP{holdout: make([]bool, len(r.cpus))}
	for i, d := range r.cpus {
		if i != me {
			t.Charge(r.cfg.IPICost)
		}
		if r.quiescentNow(d.cpu, i == me) {
			continue
		}
		x.holdout[i] = true
		x.pending++
		if i != me {
			d.cpu.SetNeedResched()
		}
	}
	switch {
	case x.pending > 0:
		r.exps = append(r.exps, x)
		x.wq.Wait(t, func() bool { return x.pending == 0 })
	case r.cfg.ExpeditedSleeps:
		// The kworker's round trip: the caller sleeps, so whatever else
		// is runnable on its CPU (the GP kthread) gets to run.
		t.Nanosleep(r.cfg.IPICost)
	}
	return true
}

// quiescentNow is the expedited IPI handler's test: is the CPU in a quiescent
// state at this instant? The caller's own CPU is in kernel code.
func (r *RCU) quiescentNow(c *sim.CPU, self bool) bool {
	if self {
		return r.cfg.Preemptible && c.Curr() != nil && nestingOf(c.Curr()).nesting == 0
	}
	switch c.Mode() {
	case sim.ModeIdle, sim.ModeUser:
		return true
	}
	return r.cfg.Preemptible && c.Curr() != nil && nestingOf(c.Curr()).nesting == 0
}

// expReport reports a quiescent state of d to every expedited GP waiting
// for it.
func (r *RCU) expReport(d *cpuData) {
	if len(r.exps) == 0 {
		return
	}
	id := d.cpu.ID
	var done []*expGP
	live := make([]*expGP, 0, len(r.exps))
	for _, x := range r.exps {
		if x.holdout[id] {
			x.holdout[id] = false
			x.pending--
		}
		if x.pending == 0 {
			done = append(done, x)
		} else {
			live = append(live, x)
		}
	}
	r.exps = live
	// Wake only after the list is consistent: a wake-up can switch a task
	// in, and that context switch reports a QS again.
	for _, x := range done {
		x.wq.WakeAll()
	}
}

// Barrier waits until every callback queued before it has run (rcu_barrier).
func (r *RCU) Barrier(t *sim.Task) {
	r.mustNotBeReader(t, "rcu_barrier")
	t.MightSleep()
	r.stats.Barriers++
	me := t.CPU().ID
	pending := 0
	var done sim.Completion
	cb := func() {
		pending--
		if pending == 0 {
			done.Complete()
		}
	}
	for i, d := range r.cpus {
		if r.cfg.BarrierSkipsIdle && d.queued() == 0 {
			continue
		}
		if i != me {
			t.Charge(r.cfg.IPICost)
		}
		pending++
	}
	if pending == 0 {
		r.stats.BarrierNoops++
		return
	}
	for i, d := range r.cpus {
		if r.cfg.BarrierSkipsIdle && d.queued() == 0 {
			continue
		}
		t.Charge(r.cfg.CallRCUCost)
		if r.cfg.BarrierEntrains && d.queued() > 0 {
			r.entrain(i, cb)
		} else {
			r.enqueue(i, cb)
		}
		d.cpu.KickTick()
	}
	done.Wait(t)
}

// ---- grace-period machinery ----

func (r *RCU) cpuNeedsGP(d *cpuData) bool {
	return d.queued() > 0 && d.cbs[len(d.cbs)-1].needGP > r.gpNum
}

// startGP begins a grace period; the CPU that starts it notices it at once.
func (r *RCU) startGP(starter *cpuData) {
	r.gpNum++
	r.gpStart = r.e.Now()
	r.stallWarned = false
	r.fqsAt = r.e.Jiffies() + int64(r.cfg.FQSJiffies)
	r.nHoldouts = len(r.cpus)
	for i := range r.holdouts {
		r.holdouts[i] = true
	}
	r.stats.GPsStarted++
	if starter != nil {
		r.noticeGP(starter)
	}
	for _, d := range r.cpus {
		d.cpu.KickTick()
	}
}

func (r *RCU) noticeGP(d *cpuData) {
	if d.gpSeen != r.gpNum && r.GPInProgress() {
		d.gpSeen = r.gpNum
		d.qsPending = r.holdouts[d.cpu.ID]
		d.passedQS = false
	}
}

// reportQS clears the CPU from the current GP and ends the GP when it was the
// last one.
func (r *RCU) reportQS(i int) {
	if !r.GPInProgress() || !r.holdouts[i] {
		return
	}
	r.holdouts[i] = false
	r.cpus[i].qsPending = false
	r.nHoldouts--
	r.stats.QSReports++
	if r.nHoldouts == 0 {
		if r.cfg.GPKthread {
			r.kthreadWQ.WakeAll() // the kthread ends the GP when it runs
		} else {
			r.endGP()
		}
	}
}

func (r *RCU) endGP() {
	r.completed = r.gpNum
	r.stats.GPsCompleted++
	for _, d := range r.cpus {
		d.cpu.KickTick()
	}
}

// fqs is a force-quiescent-state scan: CPUs idle now (dyntick-idle) are
// quiescent; with CondReschedQS, CPUs that held the GP up too long are asked
// to reschedule.
func (r *RCU) fqs() {
	r.stats.FQSScans++
	push := r.GPInProgress() && r.cfg.CondReschedQS &&
		r.e.Now()-r.gpStart >= r.holdoutPushDelay()
	for i, d := range r.cpus {
		if !r.holdouts[i] {
			continue
		}
		if d.cpu.Idle() {
			r.reportQS(i)
		} else if push {
			d.cpu.SetNeedResched()
		}
	}
	r.fqsAt = r.e.Jiffies() + int64(r.cfg.FQSJiffies)
}

// holdoutPushDelay is when FQS starts asking holdouts to reschedule:
// first + 2*next FQS intervals, at least HZ/10.
func (r *RCU) holdoutPushDelay() sim.Time {
	j := int64(3 * r.cfg.FQSJiffies)
	if min := int64(r.e.Config().HZ / 10); j < min {
		j = min
	}
	return sim.Time(j) * r.e.Period()
}

// noteQS records a quiescent state on a CPU.
func (r *RCU) noteQS(d *cpuData) {
	if r.cfg.Flavor == Tiny {
		if d.queued() > 0 {
			for k := d.head; k < len(d.cbs); k++ {
				d.cbs[k].needGP = 0
			}
			d.cpu.RaiseSoftirq(sim.SoftirqRCU)
		}
		return
	}
	if d.qsPending {
		d.passedQS = true
	}
	r.expReport(d)
}

// ---- sim.Hooks ----

// Tick is rcu_check_callbacks / rcu_sched_clock_irq.
func (r *RCU) Tick(c *sim.CPU, mode sim.Mode) {
	d := r.cpus[c.ID]
	switch {
	case mode == sim.ModeUser || mode == sim.ModeIdle:
		r.noteQS(d)
	case r.cfg.Flavor == Tiny && d.queued() > 0:
		// Tiny RCU: a tick in kernel code with callbacks waiting asks for
		// a reschedule, whose pass through schedule() is the QS.
		c.SetNeedResched()
	case r.cfg.Preemptible && c.Curr() != nil && c.Curr().PreemptCount() == 0:
		// Preemptible RCU: kernel code outside any reader (readers
		// disable preemption in this model) is quiescent.
		r.noteQS(d)
	}
	if r.GPInProgress() && !r.stallWarned && r.e.Now()-r.gpStart >= r.cfg.StallTimeout {
		r.stallWarned = true
		r.stats.Stalls++
		r.e.Printk("INFO: rcu detected stall on CPUs: %v (t=%d jiffies, GP %d)",
			r.holdoutList(), int64((r.e.Now()-r.gpStart)/r.e.Period()), r.gpNum)
	}
	if r.pending(d) {
		c.RaiseSoftirq(sim.SoftirqRCU)
	}
}

func (r *RCU) holdoutList() []int {
	var l []int
	for i, h := range r.holdouts {
		if h {
			l = append(l, i)
		}
	}
	return l
}

// ContextSwitch is rcu_note_context_switch.
func (r *RCU) ContextSwitch(c *sim.CPU) { r.noteQS(r.cpus[c.ID]) }

// CondResched is rcu_all_qs from cond_resched().
func (r *RCU) CondResched(t *sim.Task) {
	if r.cfg.CondReschedQS && nestingOf(t).nesting == 0 {
		r.noteQS(r.cpus[t.CPU().ID])
	}
}

// NeedsTick is rcu_needs_cpu: an idle CPU with callbacks keeps its tick.
func (r *RCU) NeedsTick(c *sim.CPU) bool { return r.cpus[c.ID].queued() > 0 }

// pending is rcu_pending: does the RCU softirq have work on this CPU?
func (r *RCU) pending(d *cpuData) bool {
	if r.cfg.Flavor == Tiny {
		return d.queued() > 0 && d.cbs[d.head].needGP == 0
	}
	switch {
	case d.gpSeen != r.gpNum && r.GPInProgress():
		return true
	case d.qsPending && d.passedQS:
		return true
	case d.completeSeen != r.completed:
		return true
	case r.readyCallbacks(d):
		return true
	case !r.GPInProgress() && r.cpuNeedsGP(d) && (!r.cfg.GPKthread || r.gpNeeded < d.cbs[len(d.cbs)-1].needGP):
		// A GP is needed and not yet asked for (2.6.3x: this CPU starts it).
		return true
	case !r.cfg.GPKthread && r.GPInProgress() && r.e.Jiffies() >= r.fqsAt:
		return true
	}
	return false
}

func (r *RCU) readyCallbacks(d *cpuData) bool {
	return d.queued() > 0 && d.cbs[d.head].needGP <= d.completeSeen
}

// softirq is the RCU softirq (rcu_process_callbacks / rcu_core).
func (r *RCU) softirq(c *sim.CPU) {
	d := r.cpus[c.ID]
	if r.cfg.Flavor == Tree {
		if !r.cfg.GPKthread && r.GPInProgress() && r.e.Jiffies() >= r.fqsAt {
			r.fqs()
		}
		d.completeSeen = r.completed
		r.noticeGP(d)
		if d.qsPending && d.passedQS {
			r.reportQS(c.ID)
			d.completeSeen = r.completed
		}
		if r.cpuNeedsGP(d) {
			// Accelerate: ask for the GP these callbacks need.
			r.gpNeeded = max(r.gpNeeded, d.cbs[len(d.cbs)-1].needGP)
			if !r.GPInProgress() {
				if r.cfg.GPKthread {
					r.requestGP()
				} else {
					r.startGP(d)
				}
			}
		}
	}
	r.invoke(d)
}

// invoke runs ready callbacks, up to the batch limit.
func (r *RCU) invoke(d *cpuData) {
	limit := r.cfg.BatchLimit
	if d.queued() > r.cfg.QHiMark {
		limit = d.queued()
	}
	ready := d.completeSeen
	if r.cfg.Flavor == Tiny {
		ready = 0
	}
	for n := 0; n < limit && d.queued() > 0 && d.cbs[d.head].needGP <= ready; n++ {
		cb := d.cbs[d.head]
		d.cbs[d.head] = callback{}
		d.head++
		d.cpu.Steal(r.cfg.CallbackCost)
		r.stats.CallbacksInvoked++
		r.invoking = d.cpu
		cb.fn()
		r.invoking = nil
	}
	if d.head > 1024 && d.head*2 > len(d.cbs) {
		d.cbs = append(d.cbs[:0], d.cbs[d.head:]...)
		d.head = 0
	}
	if d.queued() > 0 && d.cbs[d.head].needGP <= ready {
		d.cpu.RaiseSoftirq(sim.SoftirqRCU)
	}
}

// ---- the GP kernel thread (modern kernels) ----

func (r *RCU) requestGP() {
	if !r.gpRequested {
		r.gpRequested = true
		r.kthreadWQ.WakeAll()
	}
}

func (r *RCU) gpKthread(t *sim.Task) {
	for {
		r.kthreadWQ.Wait(t, func() bool { return r.gpRequested })
		r.gpRequested = false
		t.Charge(r.cfg.KthreadCost)
		if r.GPInProgress() || r.gpNeeded <= r.gpNum {
			continue
		}
		r.startGP(r.cpus[t.CPU().ID])
		for r.nHoldouts > 0 {
			r.kthreadWQ.WaitTimeout(t, func() bool { return r.nHoldouts == 0 }, int64(r.cfg.FQSJiffies))
			if r.nHoldouts > 0 {
				t.Charge(r.cfg.KthreadCost)
				r.fqs()
			}
		}
		t.Charge(r.cfg.KthreadCost)
		r.endGP()
		r.cpus[t.CPU().ID].completeSeen = r.completed
		if r.gpNeeded > r.gpNum { // a CPU asked for another one meanwhile
			r.gpRequested = true
		}
	}
}
