// Package rcu models the kernel's read-copy-update on top of the sim engine,
// as each kernel line implemented it: read-side sections, call_rcu,
// synchronize_rcu, synchronize_rcu_expedited and rcu_barrier, with grace
// periods (GPs) driven by quiescent states (QS).
//
// A QS comes only from what the kernel counts: a context switch, a tick that
// interrupted user mode or idle, a CPU that a force-quiescent-state (FQS)
// scan finds idle or having passed through idle since its snapshot (the
// dynticks counter: a context switch alone does not count), cond_resched()
// on kernels without preemptible RCU while RCU has flagged the CPU as urgent
// (rcu_all_qs), and, for preemptible RCU, a tick that interrupted kernel code
// outside any reader with preemption enabled.
//
// Implementations, one file each (the rules and their sources are in the
// files; docs/kernel-2.6-sources.md and docs/kernel-modern-sources.md give
// the line-by-line references):
//   - classic.go: Classic RCU (kernel/rcuclassic.c, to 2.6.31). call_rcu
//     tags a callback with the next batch; a CPU's RCU softirq, raised at
//     its tick, starts that batch; CPUs notice it and report their QS from
//     later softirqs; callbacks move to the done list, and run, at the
//     softirq after the one that saw their batch complete.
//   - tree26.go: Tree RCU of 2.6.29-2.6.3x (kernel/rcutree.c, with the
//     preemptible plugin from 2.6.32). call_rcu starts a GP when none is in
//     progress; the last CPU to report its QS ends the GP and starts the next
//     if callbacks need one; FQS runs from any ticking CPU's softirq once
//     RCU_JIFFIES_TILL_FORCE_QS (3) jiffies have passed, reporting dyntick-
//     idle CPUs and rescheduling holdouts (set_need_resched on UP, a resched
//     IPI on SMP).
//   - tree.go: modern Tree RCU (kernel/rcu/tree.c). call_rcu does not start
//     a GP; a CPU's RCU softirq asks for one, and the grace-period kthread
//     starts it, runs FQS scans (the first after jiffies_till_first_fqs,
//     then every jiffies_till_next_fqs) and ends it; each CPU notices the end
//     in its own softirq, which runs the callbacks.
//   - tiny.go: Tiny RCU (kernel/rcutiny.c, 2.6.33+; !SMP and non-preemptible
//     only): any QS makes every queued callback ready and raises the softirq
//     that runs them all.
//
// Callback invocation (rcu_do_batch) and its per-line limits are in
// dobatch.go, synchronize_rcu in sync.go, the expedited GP in expedited.go,
// rcu_barrier in barrier.go, the stall warning in stall.go, readers in
// reader.go, and the per-CPU callback list in cblist.go.
//
// Invariants (checked by the property tests): no callback runs before a GP
// that began after it was queued has ended, so never while a reader that was
// in progress when it was queued is still in its section; callbacks of one
// CPU run in the order they were queued; every queued callback runs at most
// once; rcu_barrier returns only after every callback queued before it has
// run; synchronize_rcu and synchronize_rcu_expedited return only after every
// reader in progress when they were called has ended. All methods run on the
// engine's loop or in its tasks (never concurrently).
package rcu

import (
	"fmt"

	"github.com/ndst-project/ndst/sim"
)

// Flavor selects the RCU implementation.
type Flavor int

// Implementations.
const (
	Tree    Flavor = iota // kernel/rcutree.c, kernel/rcu/tree.c
	Classic               // kernel/rcuclassic.c
	Tiny                  // kernel/rcutiny.c
)

func (f Flavor) String() string {
	return [...]string{"tree", "classic", "tiny"}[f]
}

// Expedited is how synchronize_rcu_expedited works in a kernel line.
type Expedited int

const (
	// ExpNone: the kernel has no synchronize_rcu_expedited (before 2.6.32).
	ExpNone Expedited = iota
	// ExpMigration: 2.6.32-2.6.3x TREE_RCU, synchronize_sched_expedited:
	// empty without SMP; on SMP each CPU's migration thread must run,
	// which on a CPU busy in non-preemptible kernel code waits for its
	// next schedule point. The caller sleeps meanwhile.
	ExpMigration
	// ExpNormal: 2.6.32 TREE_PREEMPT_RCU maps it onto synchronize_rcu.
	ExpNormal
	// ExpCondResched: Tiny RCU of 2.6.33 maps it onto synchronize_sched,
	// which is cond_resched().
	ExpCondResched
	// ExpIPI: modern kernels IPI every CPU that is not quiescent; a
	// holdout reports at its next QS; a kworker drives it, so the caller
	// always sleeps.
	ExpIPI
)

// Barrier is how rcu_barrier queues its callbacks in a kernel line.
type Barrier int

const (
	// BarrierEveryCPU: a callback on every online CPU through
	// on_each_cpu(call_rcu), each needing a GP of its own (2.6.3x).
	BarrierEveryCPU Barrier = iota
	// BarrierEntrain: only CPUs with callbacks, each entrained behind the
	// last one queued there (rcu_segcblist_entrain), so it needs no GP of
	// its own; nothing queued anywhere returns at once (modern).
	BarrierEntrain
)

// Config selects the RCU behaviour. The profile of a kernel line fills it
// (netdev.Profile.RCUConfig); every rule names its source there.
type Config struct {
	Flavor Flavor
	// Preemptible is CONFIG_PREEMPT_RCU / TREE_PREEMPT_RCU: readers may be
	// preempted, so a tick in kernel code outside any reader is a QS, and
	// synchronize_rcu never returns at once.
	Preemptible bool
	// PreemptCount is CONFIG_PREEMPT_COUNT in a modern kernel without
	// preemptible RCU (PREEMPT_DYNAMIC builds run as none or voluntary):
	// a tick in kernel code outside any preempt-disabled region is a QS.
	PreemptCount bool

	// GPKthread: modern Tree RCU (tree.go); otherwise 2.6.3x (tree26.go).
	GPKthread bool
	// GPEndBeforeAdvance: 2.6.33 Tree RCU decides whether to start the
	// next GP before advancing the ending CPU's callbacks, so a GP end with
	// any callbacks queued there starts one more GP (tree26.go).
	GPEndBeforeAdvance bool
	// FQSFirst and FQSNext are the jiffies before the first FQS scan of a
	// GP and between later ones (jiffies_till_first_fqs/next_fqs; 2.6.3x:
	// RCU_JIFFIES_TILL_FORCE_QS for both). FQSFirstZero makes a zero
	// FQSFirst mean "scan at once" rather than the default.
	FQSFirst, FQSNext int
	FQSFirstZero      bool
	// SchedQS, with SchedQSSet, is jiffies_to_sched_qs as
	// jiffies_till_sched_qs sets it; unset, it is first + 2*next FQS, at
	// least HZ/10 + nr_cpu_ids/256 (adjust_jiffies_till_sched_qs).
	SchedQS    int
	SchedQSSet bool
	// CondReschedQS: cond_resched() calls rcu_all_qs, which reports a QS
	// only while the CPU's rcu_urgent_qs flag is set (modern kernels
	// without PREEMPT_RCU: 5.10 kernel/sched/core.c _cond_resched l.6132,
	// 6.18 __cond_resched l.7479-7480; rcu_all_qs 6.18 tree_plugin.h
	// l.972-992). The flag is set by the FQS scan for a CPU that holds a GP
	// up past jiffies_to_sched_qs, and by an expedited GP's IPI handler.
	CondReschedQS bool
	// SyncUPShortcut: synchronize_rcu (and the modern expedited one) return
	// at once on one CPU with non-preemptible RCU: rcu_blocking_is_gp in
	// 2.6.3x, and in 5.10 and 5.15 on kernels without PREEMPTION (5.10
	// kernel/rcu/tree.c l.3668-3679, 5.15 l.3704-3728); from 6.1
	// (258f887aba60) only before the scheduler runs, which the model never
	// sees.
	SyncUPShortcut bool
	// TinyTickResched: modern Tiny RCU, a tick in kernel code with
	// callbacks waiting sets need_resched.
	TinyTickResched bool

	Expedited Expedited
	// ExpKthreadWorker: an ExpIPI expedited GP is driven by
	// rcu_exp_gp_kthread_worker, one kernel thread not bound to any CPU,
	// which the caller wakes and which wakes the caller (expworker.go;
	// 6.12 on). Unset, by a worker of the caller's own CPU (6.1's bound
	// rcu_gp workqueue), a local round trip.
	ExpKthreadWorker bool
	Barrier          Barrier
	// CoreKthread: RCU core work runs in per-CPU rcuc kthreads at real-time
	// priority instead of RCU_SOFTIRQ, and the GP kthread is real-time too
	// (PREEMPT_RT: use_softirq=0, RCU_BOOST's kthread_prio; corethread.go).
	CoreKthread bool
	// NormalOnly is rcu_normal (set after boot on PREEMPT_RT by
	// rcu_normal_after_boot): an expedited grace period is a normal one.
	NormalOnly bool
	// ExpediteAll is rcu_expedited: synchronize_rcu() waits for an
	// expedited grace period (rcu_gp_is_expedited; sync.go).
	ExpediteAll bool
	// WakeFromGP is rcu_normal_wake_from_gp (wakefromgp.go): a normal
	// synchronize_rcu() starts its GP at once and the GP kthread wakes it.
	// WakeFromGPLatch, when positive, is RCU_SR_NORMAL_LATCH_THR (7.x): as
	// many callers in flight send the next ones back to the callback wait
	// until all have been woken.
	WakeFromGP      bool
	WakeFromGPLatch int
	// GPInitSelfQS: rcu_gp_init reports the GP kthread's own CPU's QS
	// (7.x; tree.go selfQS).
	GPInitSelfQS bool
	// CoreKthreadNormalPrio: the rcuc/N kthreads (and the GP kthread) stay
	// SCHED_NORMAL (use_softirq=0 without RCU_BOOST).
	CoreKthreadNormalPrio bool
	// NoCB marks the CPUs whose callbacks are offloaded to rcuog/rcuo
	// kthreads (rcu_nocbs=, nohz_full=; nocb.go); nil: none.
	NoCB []bool
	// Lazy: call_rcu() on an offloaded CPU may hold its callback back in
	// the bypass list (CONFIG_RCU_LAZY, enable_rcu_lazy; lazy.go).
	Lazy bool
	// OtherWork is the rate of the RCU callbacks that the machine's other
	// work queues, a CPU a second (otherwork.go); 0: none.
	OtherWork float64

	// Callback invocation (rcu_do_batch): BatchLimit (blimit) callbacks a
	// softirq, lifted while more than QHiMark are queued until at most
	// QLowMark remain (2.6.3x: unbounded; modern: 10000, and the flood
	// starts a GP or forces an FQS scan at once, tree.go overloaded); modern kernels raise the limit to the ready count
	// >> Divisor, stop after ReschedTime when the limit exceeds 100, and in
	// softirq stop at the limit only if a reschedule is pending or the CPU
	// is not idle (BatchOnlyIfBusy).
	BatchLimit, QHiMark, QLowMark int
	// QLowMarkZero makes a zero QLowMark mean zero, not the default.
	QLowMarkZero    bool
	Divisor         int
	ReschedTime     sim.Time
	BatchOnlyIfBusy bool
	// DivisorOfAll: the divisor applies to all queued callbacks (5.10 to
	// 6.1), not only the ready ones (6.6 on).
	DivisorOfAll bool

	// StallTimeout is when a GP that has not ended is reported as a stall
	// (0: no stall detector, as 2.6.3x without CONFIG_RCU_CPU_STALL_DETECTOR),
	// and StallRepeat the interval of later reports (0: 3*StallTimeout).
	StallTimeout, StallRepeat sim.Time

	// Costs of RCU's own operations.
	CallRCUCost  sim.Time
	CallbackCost sim.Time
	IPICost      sim.Time
	KthreadCost  sim.Time // one pass of the GP kthread
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
	// BarrierShared counts the rcu_barrier() calls that found, once they
	// held the barrier mutex, that a barrier begun after their call had
	// already ended (barriermutex.go); they are not in Barriers.
	BarrierShared int64
	FQSScans      int64
	FQSResched    int64
	// UrgentQS counts the rcu_urgent_qs flags FQS set on holdouts;
	// TickResched the ticks that turned such a flag into a reschedule.
	UrgentQS    int64
	TickResched int64
	QSReports   int64
	// QSBy counts the quiescent states that a grace period was waiting
	// for, by what supplied them (QSSource); a QS no grace period needed is
	// not counted.
	QSBy   [NumQSSources]int64
	Stalls int64
	// LazyCallbacks were held back in a bypass list (lazy.go);
	// LazyFlushes emptied a bypass list into the callbacks, LazyWakeups
	// of them by the 10 s timer.
	LazyCallbacks, LazyFlushes, LazyWakeups int64
	// WakeFromGPLatched counts the synchronize_rcu() calls that the
	// latch of rcu_normal_wake_from_gp sent to the callback wait.
	WakeFromGPLatched int64
	// GPTime sums the length of completed GPs.
	GPTime sim.Time
}

// impl is one RCU implementation: the hooks the kernel calls into it.
type impl interface {
	// queue is __call_rcu's implementation part: it appends fn to the
	// CPU's list, with whatever bookkeeping the implementation does around
	// that.
	queue(d *cpuData, fn func())
	// tick is the RCU part of the scheduling-clock interrupt.
	tick(d *cpuData, mode sim.Mode)
	// contextSwitch is the QS of a pass through the scheduler (or of
	// cond_resched()'s rcu_all_qs, as src says).
	contextSwitch(d *cpuData, src QSSource)
	// softirq is the RCU_SOFTIRQ handler.
	softirq(d *cpuData)
	// needsCPU is rcu_needs_cpu: an idle CPU must keep its tick.
	needsCPU(d *cpuData) bool
	// gpInProgress and gpStart describe the current normal GP; holdouts
	// lists the CPUs it still waits for.
	gpInProgress() bool
	gpStart() sim.Time
	holdouts() []int
}

type cpuData struct {
	cpu *sim.CPU
	// qsSrc is what supplied the CPU's latest needed quiescent state; it
	// is counted in Stats.QSBy when that state is reported.
	qsSrc  QSSource
	cbs    cblist
	blimit int
	// qlenLastFQS and fqsSnap are modern call_rcu_core's hysteresis
	// (qlen_last_fqs_check, n_force_qs_snap).
	qlenLastFQS int
	fqsSnap     int64
	// urgentQS is rcu_urgent_qs: RCU needs a QS from this CPU soon (set
	// by FQS or an expedited GP; cleared by the tick, which then forces a
	// reschedule, or by rcu_all_qs).
	urgentQS bool
	// The rcuc/N thread (CoreKthread): its task, whether core work is
	// pending, and the task while it runs rcu_core.
	core     *sim.Task
	coreWork bool
	coreWQ   sim.WaitQueue
	inCore   *sim.Task
	// offloaded: the CPU's callbacks are handled by rcuog/rcuo kthreads
	// (nocb.go), with nocb its state there.
	offloaded bool
	nocb      *nocbCPU
}

// RCU is one RCU instance bound to an engine.
type RCU struct {
	e    *sim.Engine
	cfg  Config
	cpus []*cpuData
	impl impl

	exps []*expGP // expedited GPs in progress
	// expWorker is rcu_exp_gp_kthread_worker (ExpKthreadWorker).
	expWorker expWorker
	stall     stallState
	stats     Stats
	// invoking is the CPU whose softirq is running callbacks, if any;
	// nested counts the callbacks running that CallRCUNested queued.
	invoking *sim.CPU
	nested   int
	// srWaiters are the synchronize_rcu() callers waiting for their GP's
	// end under rcu_normal_wake_from_gp (wakefromgp.go); srInFlight counts
	// them (rcu_sr_normal_count) and srLatched is rcu_sr_normal_latched.
	srWaiters  []*srWaiter
	srInFlight int
	srLatched  bool
	// nocbGroups are the rcuog kthreads' groups (nocb.go).
	nocbGroups []*nocbGroup
	// barrierSerial serialises rcu_barrier() callers (barriermutex.go).
	barrierSerial barrierSerial
}

// New attaches an RCU model to e.
func New(e *sim.Engine, cfg Config) (*RCU, error) {
	n := len(e.CPUs())
	switch {
	case cfg.Flavor == Tiny && (n != 1 || cfg.Preemptible):
		return nil, fmt.Errorf("tiny RCU needs exactly 1 CPU and non-preemptible RCU (have %d CPUs, preemptible=%v)", n, cfg.Preemptible)
	case cfg.Flavor == Classic && cfg.Preemptible:
		return nil, fmt.Errorf("classic RCU is not preemptible")
	case cfg.Flavor < Tree || cfg.Flavor > Tiny:
		return nil, fmt.Errorf("unknown RCU flavour %d", cfg.Flavor)
	}
	if cfg.FQSFirst <= 0 && !cfg.FQSFirstZero {
		cfg.FQSFirst = 3
	}
	if cfg.FQSNext <= 0 {
		cfg.FQSNext = cfg.FQSFirst
	}
	if cfg.BatchLimit <= 0 {
		cfg.BatchLimit = 10
	}
	if cfg.QHiMark <= 0 {
		cfg.QHiMark = 10000
	}
	if cfg.QLowMark <= 0 && !cfg.QLowMarkZero {
		cfg.QLowMark = 100
	}
	if err := checkNoCB(cfg, n); err != nil {
		return nil, err
	}
	if err := checkOtherWork(cfg); err != nil {
		return nil, err
	}
	r := &RCU{e: e, cfg: cfg}
	for i, c := range e.CPUs() {
		r.cpus = append(r.cpus, &cpuData{cpu: c, blimit: cfg.BatchLimit, offloaded: i < len(cfg.NoCB) && cfg.NoCB[i]})
	}
	switch {
	case cfg.Flavor == Classic:
		r.impl = newClassic(r)
	case cfg.Flavor == Tiny:
		r.impl = newTiny(r)
	case cfg.GPKthread:
		r.impl = newTree(r)
	default:
		r.impl = newTree26(r)
	}
	e.AddHooks(r)
	e.RegisterSoftirq(sim.SoftirqRCU, r.softirq)
	r.startNoCB()
	r.startOtherWork() // otherwork.go
	return r, nil
}

// Config returns the configuration.
func (r *RCU) Config() Config { return r.cfg }

// Stats returns the counters.
func (r *RCU) Stats() Stats { return r.stats }

// GPInProgress reports whether a normal grace period is running.
func (r *RCU) GPInProgress() bool { return r.impl.gpInProgress() }

// CallbackCPU returns the CPU whose RCU softirq is running the current
// callback, or nil outside callbacks.
func (r *RCU) CallbackCPU() *sim.CPU { return r.invoking }

// Pending returns the number of callbacks queued and not yet invoked.
func (r *RCU) Pending() int {
	n := 0
	for _, d := range r.cpus {
		n += d.cbs.len() + bypassLen(d)
	}
	return n
}

// ---- update side ----

// CallRCU queues fn on t's CPU to run after a grace period (call_rcu). The
// queueing runs with interrupts off in the kernel, so nothing can come
// between the call and the callback being on the list; its cost follows.
//
// On kernels with lazy RCU (lazy.go) the callback may be held back on an
// offloaded CPU; CallRCUHurry never is.
func (r *RCU) CallRCU(t *sim.Task, fn func()) {
	r.queueFrom(r.cpus[t.CPU().ID], fn, r.cfg.Lazy)
	t.Charge(r.cfg.CallRCUCost)
}

// CallRCUHurry is call_rcu_hurry (6.2 on): call_rcu that is never lazy.
func (r *RCU) CallRCUHurry(t *sim.Task, fn func()) {
	r.queueFrom(r.cpus[t.CPU().ID], fn, false)
	t.Charge(r.cfg.CallRCUCost)
}

// queueFrom is __call_rcu_common: an offloaded CPU's callback goes to its
// rcuog kthread (nocb.go), lazily when lazy; the others to the CPU's list.
func (r *RCU) queueFrom(d *cpuData, fn func(), lazy bool) {
	if d.offloaded {
		r.nocbQueue(d, fn, lazy)
		return
	}
	r.enqueue(d, fn)
}

func (r *RCU) enqueue(d *cpuData, fn func()) {
	r.impl.queue(d, fn)
	r.stats.CallbacksQueued++
	if o, ok := r.impl.(interface{ overloaded(*cpuData) }); ok {
		o.overloaded(d) // modern call_rcu_core (tree.go)
	} else if d.cbs.len() > r.cfg.QHiMark {
		d.blimit = 1 << 30 // 2.6.3x: rdp->blimit = LONG_MAX, too many queued
	}
	d.cpu.KickTick()
}

// ---- sim.Hooks ----

// Tick is the RCU part of the scheduling-clock interrupt.
func (r *RCU) Tick(c *sim.CPU, mode sim.Mode) {
	d := r.cpus[c.ID]
	r.impl.tick(d, mode)
	r.checkStall(c)
}

// ContextSwitch is rcu_note_context_switch / rcu_qsctr_inc.
func (r *RCU) ContextSwitch(c *sim.CPU) {
	d := r.cpus[c.ID]
	src := QSSwitch
	if c.KeptCPU() {
		src = QSSchedule
	}
	r.impl.contextSwitch(d, src)
	r.expReport(d)
}

// CondResched is rcu_all_qs from cond_resched(), where the line has it: a
// QS only while the CPU's urgent flag is set, which it clears.
func (r *RCU) CondResched(t *sim.Task) {
	d := r.cpus[t.CPU().ID]
	if r.cfg.CondReschedQS && d.urgentQS && nestingOf(t).nesting == 0 {
		d.urgentQS = false
		r.impl.contextSwitch(d, QSCondResched)
		r.expReport(d)
	}
}

// urgentTick is the head of rcu_sched_clock_irq (6.18 kernel/rcu/tree.c
// l.2697-2704, the same in 5.10): a tick that finds the urgent flag set
// forces a reschedule unless it interrupted idle or user mode (themselves
// quiescent), and clears the flag.
func (r *RCU) urgentTick(d *cpuData, mode sim.Mode) {
	if !d.urgentQS {
		return
	}
	if mode != sim.ModeIdle && mode != sim.ModeUser {
		d.cpu.SetNeedResched()
		r.stats.TickResched++
	}
	d.urgentQS = false
}

// NeedsTick is rcu_needs_cpu.
func (r *RCU) NeedsTick(c *sim.CPU) bool { return r.impl.needsCPU(r.cpus[c.ID]) }

func (r *RCU) softirq(c *sim.CPU) { r.impl.softirq(r.cpus[c.ID]) }

// readerFree reports whether the CPU's current task is outside any reader
// with preemption enabled: for preemptible RCU, a tick there is a QS.
func (r *RCU) readerFree(c *sim.CPU) bool {
	t := c.Curr()
	return t != nil && t.PreemptCount() == 0 && nestingOf(t).nesting == 0
}

// traceGP marks a grace period's start or end in the trace.
func (r *RCU) traceGP(n uint64, begin bool) {
	if r.e.Tracing() {
		r.e.TraceAsync("rcu", fmt.Sprintf("GP %d", n), fmt.Sprintf("gp%d", n), begin)
	}
}

// traceQS marks a CPU's quiescent state being reported.
func (r *RCU) traceQS(cpu int, how string) {
	if r.e.Tracing() {
		r.e.TraceInstant(cpu, "rcu", "QS reported", map[string]any{"by": how})
	}
}

// QSSource is what supplied a quiescent state.
type QSSource int

const (
	// QSSwitch is a context switch.
	QSSwitch QSSource = iota
	// QSSchedule is a pass through schedule() that kept the CPU: nothing
	// else was runnable (need_resched set by RCU itself, for example).
	QSSchedule
	// QSTickIdle is a tick that found the CPU idle or in user mode.
	QSTickIdle
	// QSTickPreempt is preemptible RCU's tick in kernel code outside any
	// reader.
	QSTickPreempt
	// QSCondResched is cond_resched()'s rcu_all_qs, without a schedule().
	QSCondResched
	// QSFQSIdle is a force-quiescent-state scan that found the CPU idle, or
	// having passed through idle since its snapshot.
	QSFQSIdle
	// QSGPInit is the GP kthread's own CPU, reported as the GP starts
	// (Config.GPInitSelfQS).
	QSGPInit
	// NumQSSources is the number of sources.
	NumQSSources
)

// Name is the counter suffix of the source.
func (s QSSource) Name() string {
	return [...]string{"context_switch", "schedule", "tick_idle", "tick_preempt", "cond_resched", "fqs_idle", "gp_init"}[s]
}

// countQS counts a needed quiescent state of CPU i as reported.
func (r *RCU) countQS(i int) {
	r.stats.QSReports++
	r.stats.QSBy[r.cpus[i].qsSrc]++
}
