package sim

import "math/rand/v2"

// CPU is one simulated processor: the task it runs, its run queue, its tick,
// its timer wheel and its pending softirqs.
type CPU struct {
	e  *Engine
	ID int

	curr *Task
	// deferred is a task woken from interrupt context onto this idle CPU:
	// the switch to it happens when the interrupt returns.
	deferred *Task
	runq     []*Task
	// wakeLatency is what the wake-up being enqueued waits before its
	// switch-in: Config.WakeLatency for a remote wake-up of this idle CPU,
	// else 0 (set and cleared around the enqueue by Task.wake).
	wakeLatency Time
	needResched bool
	// lazyResched is TIF_NEED_RESCHED_LAZY (lazy.go).
	lazyResched bool
	// hrtickEv is the pending slice timer (hrtick.go).
	hrtickEv   *Event
	hrtickFn   func()
	lastSwitch Time
	// keptCPU is set while the scheduler passes through without switching
	// (see Task.Schedule), so that hooks can tell that from a switch.
	keptCPU bool
	// irqBusyUntil is when the interrupt work charged so far ends: an
	// idle CPU's next task starts after it, a running task's charge has
	// been pushed back by it, and a tick that arrives before it interrupts
	// that work rather than the task or idle.
	irqBusyUntil Time
	// irqResume is the pending continuation of softirq work raised while
	// the CPU was still busy with earlier interrupt work.
	irqResume *Event
	// resumeEv is irqResume's event, armed again each time.
	resumeEv Event
	// stallUntil is when the CPU's current stall ends, stallRand the
	// source of its stall process, tickLate that the pending tick is one
	// a stall delayed (stall.go).
	stallUntil Time
	stallRand  *rand.Rand
	tickLate   bool
	// lateRand is the source of the CPU's tick lateness (ticklate.go);
	// LateTicks counts the ticks that came late, TicksLate their lateness.
	lateRand  *rand.Rand
	LateTicks int64
	TicksLate Time
	// inIRQ is set while interrupt code (the tick, its softirqs) runs;
	// irqBase is the CPU's clock when it began and irqSpent the work done
	// since, so that Clock() advances inside an interrupt.
	inIRQ    bool
	irqBase  Time
	irqSpent Time

	timers *timerQueue
	// tickEv is the pending tick (&tickEvt, armed again each jiffy), or nil.
	tickEv  *Event
	tickEvt Event
	tickAt  Time

	softirq   uint32
	softCtx   softirqContext
	ksoftirqd *Task
	ksoftWQ   WaitQueue
	// ktimers is PREEMPT_RT's timer thread (SoftirqLimits.TimerThread).
	ktimers     *Task
	ktimersWQ   WaitQueue
	ktimersWork bool

	// The soft-lockup detector (watchdog.go): its thread, when it last ran
	// (and that time in timestamp units), whether it has been woken since,
	// the generation of its sleep, and the hrtimer's function.
	watchdog       *Task
	touched        Time
	touchedUnits   int64
	watchdogKicked bool
	watchdogGen    uint64
	sampleFn       func()
	// traceTask is the task whose run the trace is timing on this CPU.
	traceTask *Task

	// Accounting, by Mode. Busy[ModeIRQ] is interrupt and softirq work
	// done at interrupt exit, whether it interrupted a task or idle.
	Busy     [numModes]Time
	Switches int64
	// Stalled is the time the CPU did not run at all, in StallCount
	// stalls (stall.go); not in Busy.
	Stalled    Time
	StallCount int64
	// IdleEntries counts the CPU's passages into the idle loop (what RCU's
	// dynticks counter sees: a context switch between tasks is none).
	IdleEntries int64
}

// Curr returns the task holding the CPU, or nil when idle.
func (c *CPU) Curr() *Task { return c.curr }

// Idle reports whether the CPU has nothing to run (and is not about to
// switch to a task woken from an interrupt).
func (c *CPU) Idle() bool { return c.curr == nil && c.deferred == nil && len(c.runq) == 0 }

// Mode returns what the CPU is doing now.
func (c *CPU) Mode() Mode {
	if c.curr == nil {
		return ModeIdle
	}
	return c.curr.mode
}

// InIRQ reports whether interrupt or softirq code is running on the CPU.
func (c *CPU) InIRQ() bool { return c.inIRQ }

// Clock is the CPU's own time: inside an interrupt, the time the interrupt
// work done so far has taken is added to the engine's clock.
func (c *CPU) Clock() Time {
	if c.inIRQ {
		return c.irqBase + c.irqSpent
	}
	return c.e.now
}

// SetNeedResched asks the CPU to reschedule at its next preemption point.
func (c *CPU) SetNeedResched() { c.needResched = true }

// NeedResched reports whether a reschedule is pending.
func (c *CPU) NeedResched() bool { return c.needResched }

// LastSwitch returns the time of the CPU's last context switch.
func (c *CPU) LastSwitch() Time { return c.lastSwitch }

func (c *CPU) account(m Mode, d Time) { c.Busy[m] += d }

// pushBack makes the CPU unavailable to tasks for d more: the running
// task's charge (or its pending switch-in) ends d later, and on an idle CPU
// the next task starts after it (interrupt work, and stalls: stall.go).
func (c *CPU) pushBack(d Time) {
	c.irqBusyUntil = max(c.irqBusyUntil, c.e.now) + d
	if t := c.curr; t != nil {
		switch {
		case t.chargeEv != nil:
			t.stretch(d)
		case t.dispatchEv != nil && !t.dispatchEv.cancelled:
			c.e.reschedule(t.dispatchEv, t.dispatchEv.at+d)
		}
	}
}

// Steal charges d of interrupt work to the CPU: the running task's charge
// (or its pending switch-in) is pushed back, or, on an idle CPU, the next
// task starts later.
func (c *CPU) Steal(d Time) {
	d = c.e.Jitter(d)
	if d <= 0 {
		return
	}
	c.Busy[ModeIRQ] += d
	if c.inIRQ {
		c.irqSpent += d
	}
	c.pushBack(d)
}

// inIRQWork reports whether interrupt work charged earlier is still running.
func (c *CPU) inIRQWork() bool { return c.irqBusyUntil > c.e.now }

// ---- scheduling ----

// enqueue makes t runnable here, dispatching it at once on an idle CPU;
// otherwise it is queued in class order and may preempt (class.go).
func (c *CPU) enqueue(t *Task) {
	if c.curr == nil && c.deferred == nil {
		c.switchIn(t)
		return
	}
	c.queue(t, false)
	c.armHRTick()
	c.wakeupPreempt(t)
	c.ensureTick()
}

// switchIn gives the CPU to t after the cost of a context switch; woken from
// an interrupt, the switch happens when the interrupt returns.
func (c *CPU) switchIn(t *Task) {
	t.state = taskRunning
	if c.inIRQ {
		c.deferred = t
		return
	}
	c.curr = t
	c.noteSwitch()
	c.armHRTick()
	start := max(c.e.now, c.irqBusyUntil) + c.wakeLatency
	sw := c.e.Jitter(c.e.cfg.ContextSwitch)
	c.Busy[ModeKernel] += sw
	start += sw
	if t.remaining > 0 { // preempted in the middle of a charge
		t.chargeEnd = start + t.remaining
		t.remaining = 0
		t.armCharge(t.chargeEnd)
	} else {
		t.dispatchEv = &t.dispatchEvt
		c.e.arm(t.dispatchEv, start)
	}
	c.ensureTick()
}

// switchOut takes t off the CPU (it blocked, ended, or yielded) and runs the
// next task or goes idle.
func (c *CPU) switchOut(t *Task) {
	if c.curr != t {
		return
	}
	c.curr = nil
	// __schedule clears the reschedule request it is honouring (both
	// bits): the task it picks does not owe the CPU to anyone yet.
	c.needResched, c.lazyResched = false, false
	c.dropHRTick()
	if len(c.runq) > 0 {
		next := c.runq[0]
		copy(c.runq, c.runq[1:])
		c.runq = c.runq[:len(c.runq)-1]
		c.switchIn(next)
		return
	}
	if c.e.pullOrdinary(c) { // sched_balance_newidle (balance.go)
		return
	}
	c.IdleEntries++
	c.noteSwitch()
	c.ensureTick()
}

func (c *CPU) noteSwitch() {
	if c.e.trace != nil {
		name := "idle"
		if c.traceTask != nil {
			name = c.traceTask.Name
		}
		if name != "idle" {
			c.e.traceSpan(tracePidCPUs, c.ID, "sched", name, c.lastSwitch, nil)
		}
		c.traceTask = c.curr
	}
	c.lastSwitch = c.e.now
	c.Switches++
	c.e.stats.ContextSwitches++
	for _, h := range c.e.hooks {
		h.ContextSwitch(c)
	}
}

// preempt takes the running task off the CPU in the middle of its charge.
func (c *CPU) preempt() {
	t := c.curr
	if t == nil || t.chargeEv == nil || len(c.runq) == 0 {
		return
	}
	if !outranks(c.runq[0], t) {
		// __schedule picks the real-time task again: the request is
		// honoured and cleared without a switch.
		c.needResched, c.lazyResched = false, false
		return
	}
	c.e.disarm(t.chargeEv)
	t.chargeEv = nil
	t.remaining = t.chargeEnd - c.e.now
	t.state = taskRunnable
	c.e.stats.Preemptions++
	c.switchOut(t)
	c.queue(t, true)
}

// ---- interrupts and the tick ----

// tickSlice is the least a task runs before the tick asks it to let a
// waiting one in: EEVDF's sysctl_sched_base_slice, 0.7 ms (6.18
// kernel/sched/fair.c l.79; update_curr reschedules once the slice is used,
// l.1316-1317). It is not scaled by the CPU count here, and CFS before 6.6
// (check_preempt_tick, a share of sched_latency: 3 ms for two tasks on one
// CPU) asked later; at HZ=250 both come due at the first or second tick.
const tickSlice = 700 * Microsecond

// irqEnter starts interrupt work on the CPU.
func (c *CPU) irqEnter() {
	c.e.curCPU = c
	c.inIRQ = true
	c.irqSpent = 0
	c.irqBase = max(c.e.now, c.irqBusyUntil)
}

// irqExit runs pending softirqs, then makes the switch to a task woken
// meanwhile, and honours a pending reschedule where the model preempts. An
// interrupt that arrived while earlier interrupt work was still running
// (nested: in_interrupt()) leaves its softirqs to that work, which picks
// them up when it gets to them (resumeSoftirqs).
func (c *CPU) irqExit(nested bool) {
	if !nested {
		c.runSoftirqsAtIRQExit()
	} else if c.softirq != 0 && c.softCtx == softirqNone && c.irqResume == nil {
		c.armResume()
	}
	c.inIRQ = false
	if t := c.deferred; t != nil {
		c.deferred = nil
		c.switchIn(t)
	}
	if c.needResched && c.curr != nil && c.curr.Preemptible() {
		c.preempt()
	}
	c.ensureTick()
}

// ensureTick (re)arms the CPU's tick: every jiffy while the CPU is busy or a
// hook needs it; otherwise only at the next timer (NO_HZ idle).
func (c *CPU) ensureTick() {
	next := c.e.JiffyStart(c.e.Jiffies() + 1)
	want := Time(-1)
	if !c.Idle() || c.hooksNeedTick() {
		want = next
	} else if fire, ok := c.timers.earliest(); ok {
		want = max(c.e.JiffyStart(fire), next)
	}
	if c.tickEv != nil {
		if c.tickLate {
			return // a late tick, or one a stall delayed, comes when it comes (ticklate.go, stall.go)
		}
		if want == c.tickAt || c.tickAt <= c.e.now { // as wanted, or due this instant
			return
		}
		// Earlier: rearm. Later or not at all: an idle CPU stops or
		// defers its tick (tick_nohz_idle_stop_tick).
		c.e.disarm(c.tickEv)
		c.tickEv = nil
	}
	if want < 0 {
		return
	}
	c.tickAt = want
	if c.tickEvt.fn == nil {
		c.tickEvt.fn = c.tick
	}
	c.tickEv = &c.tickEvt
	c.e.arm(c.tickEv, want)
}

// KickTick re-evaluates the CPU's tick after a state change that a hook's
// NeedsTick depends on (for example callbacks queued on an idle CPU).
func (c *CPU) KickTick() { c.ensureTick() }

func (c *CPU) hooksNeedTick() bool {
	for _, h := range c.e.hooks {
		if h.NeedsTick(c) {
			return true
		}
	}
	return false
}

// tick is the periodic timer interrupt.
func (c *CPU) tick() {
	if !c.tickLate {
		if d := c.tickDelay(); d > 0 { // its interrupt comes late (ticklate.go)
			c.LateTicks++
			c.TicksLate += d
			c.tickAt, c.tickLate = c.e.now+d, true
			c.e.arm(c.tickEv, c.tickAt)
			return
		}
	}
	if c.stalled() { // it fires when the stall ends (stall.go)
		c.tickAt, c.tickLate = c.stallUntil, true
		c.e.arm(c.tickEv, c.tickAt)
		return
	}
	c.tickEv, c.tickLate = nil, false
	c.e.stats.Ticks++
	if c.e.trace != nil {
		c.e.TraceInstant(c.ID, "irq", "tick", nil)
	}
	mode := c.Mode()
	nested := c.inIRQWork()
	if nested {
		mode = ModeIRQ // it interrupted interrupt work, not the task or idle
	}
	c.irqEnter()
	c.Steal(c.e.cfg.TickCost)
	// sched_tick: in lazy mode a lazy flag set before this tick is
	// upgraded first (lazy.go); then a task that has had its slice while
	// others wait owes the CPU (update_curr's slice check,
	// resched_curr_lazy); it gives it up at its next preemption point.
	if c.e.lazy() {
		c.lazyTick()
	}
	if t := c.curr; t != nil && !t.rt && len(c.runq) > 0 && !c.runq[0].rt && c.e.now-c.lastSwitch >= tickSlice {
		c.reschedLazy()
	}
	for _, h := range c.e.hooks {
		h.Tick(c, mode)
	}
	if fire, ok := c.timers.earliest(); ok && fire <= c.e.Jiffies() {
		c.softirq |= 1 << SoftirqTimer
	}
	c.checkLockup()
	c.irqExit(nested)
}

// resumeSoftirqs runs softirqs raised while the CPU was busy with earlier
// interrupt work, once that work is done.
func (c *CPU) resumeSoftirqs() {
	c.irqResume = nil
	if c.inIRQWork() {
		c.armResume()
		return
	}
	c.irqEnter()
	c.irqExit(false)
}

// armResume arms resumeSoftirqs for when the interrupt work charged so far
// ends.
func (c *CPU) armResume() {
	if c.resumeEv.fn == nil {
		c.resumeEv.fn = c.resumeSoftirqs
	}
	c.irqResume = &c.resumeEv
	c.e.arm(c.irqResume, c.irqBusyUntil)
}

// KeptCPU reports, inside a ContextSwitch hook, that the scheduler is
// passing through without switching: the task that called schedule() keeps
// the CPU.
func (c *CPU) KeptCPU() bool { return c.keptCPU }
