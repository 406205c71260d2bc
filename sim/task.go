package sim

import (
	"fmt"
	"iter"
)

// Mode is what a CPU is doing when an interrupt arrives.
type Mode int

// CPU modes.
const (
	ModeIdle Mode = iota
	ModeUser
	ModeKernel
	// ModeIRQ is interrupt work (the tick, softirqs at interrupt exit).
	ModeIRQ
	numModes
)

func (m Mode) String() string {
	return [...]string{"idle", "user", "kernel", "irq"}[m]
}

type taskState int

const (
	taskRunnable taskState = iota // waiting on its CPU's run queue
	taskRunning                   // holds its CPU (running or charging)
	taskBlocked                   // sleeping on a timer, wait queue or completion
	taskDead
)

// Task is a simulated thread pinned to one CPU. Its function runs in its own
// goroutine but only while it holds the engine's baton.
type Task struct {
	e       *Engine
	cpu     *CPU
	Name    string
	PID     int
	fn      func(*Task)
	daemon  bool
	unbound bool
	// rt: a real-time (SCHED_FIFO) thread at priority prio, queued ahead
	// of ordinary tasks (class.go).
	rt      bool
	prio    int
	state   taskState
	mode    Mode
	started bool
	killed  bool
	// The task's coroutine: resume runs it until it yields or ends, stop
	// unwinds it, and yieldFn hands control back from inside it.
	resume  func() (struct{}, bool)
	stop    func()
	yieldFn func(struct{}) bool

	// preemptCount > 0 disables preemption (spinlocks, preempt_disable).
	preemptCount int
	// charge bookkeeping: the event that ends the current charge and how
	// much was left when the task was preempted.
	chargeEv  *Event
	chargeEvt Event // chargeEv when pending, armed again for each charge
	chargeEnd Time
	remaining Time
	endFn     func() // endCharge as a value, allocated once (relaxStep while RelaxUntil spins)
	// RelaxUntil's spin: what ends it, and its smallest step.
	relaxCond  func() bool
	relaxUntil Time
	relaxMin   Time
	relaxFn    func() // relaxStep as a value, allocated once
	// relaxSkipped counts evaluations of relaxCond that the engine skipped
	// (RelaxUntilSteady; nil: none may be).
	relaxSkipped func(n int64)
	// dispatchEv hands the CPU to the task once its switch-in is paid.
	dispatchEv  *Event
	dispatchEvt Event // dispatchEv when pending
	// sleepGen counts the task's sleeps; a waker registered for one sleep
	// cannot wake a later one.
	sleepGen uint64
	// Value is free for subsystems to attach per-task data (RCU nesting).
	Value any
	// phase attributes the task's time (phase.go).
	phase phaseState
	// sleepStart is when its current sleep began (for the trace).
	sleepStart Time
}

// killed tasks unwind with this panic value.
type killSignal struct{}

// Go creates a task on cpu that runs fn. A daemon task (a kernel thread)
// does not keep the run alive. The task becomes runnable at once.
func (e *Engine) Go(name string, cpu int, daemon bool, fn func(*Task)) *Task {
	return e.goTask(name, cpu, daemon, false, fn)
}

func (e *Engine) goTask(name string, cpu int, daemon, unbound bool, fn func(*Task)) *Task {
	e.nextTask++
	t := &Task{e: e, cpu: e.cpus[cpu], Name: name, PID: 100 + e.nextTask, fn: fn,
		daemon: daemon, mode: ModeKernel, state: taskBlocked, unbound: unbound}
	t.endFn = t.endCharge
	t.relaxFn = t.relaxStep
	t.dispatchEvt.fn = t.dispatch
	e.tasks = append(e.tasks, t)
	if !daemon {
		e.live++
	}
	t.wake()
	return t
}

// GoUnbound creates an unbound task (SetUnbound) that runs fn, placed as a
// wake-up of it from the running task's CPU would place it, with cpu as its
// last CPU: the kernel thread was created at boot and sleeps until its first
// work, and the waker of that work is the caller, so its first wake-up pays
// what any later one does (Config.WakeLatency onto another, idle CPU).
func (e *Engine) GoUnbound(name string, cpu int, daemon bool, fn func(*Task)) *Task {
	return e.goTask(name, cpu, daemon, true, fn)
}

// CPU returns the CPU the task runs on.
func (t *Task) CPU() *CPU { return t.cpu }

// Engine returns the task's engine.
func (t *Task) Engine() *Engine { return t.e }

// Now returns the current virtual time.
func (t *Task) Now() Time { return t.e.now }

// Mode returns the task's current mode (user or kernel).
func (t *Task) Mode() Mode { return t.mode }

// SetMode moves the task between user and kernel mode (a system call entry
// or return).
func (t *Task) SetMode(m Mode) {
	back := m == ModeUser && t.mode == ModeKernel
	t.mode = m
	if back {
		t.returnToUser()
	}
}

// PreemptDisable and PreemptEnable bracket code that must not be preempted.
func (t *Task) PreemptDisable() { t.preemptCount++ }

// PreemptEnable re-enables preemption (and honours a pending resched under
// full preemption).
func (t *Task) PreemptEnable() {
	if t.preemptCount == 0 {
		panic("sim: PreemptEnable without PreemptDisable in task " + t.Name)
	}
	t.preemptCount--
	if t.preemptCount == 0 && t.e.cfg.Preempt.Preemptive() && t.cpu.needResched {
		t.Schedule()
	}
}

// PreemptCount returns the task's preemption-disable depth.
func (t *Task) PreemptCount() int { return t.preemptCount }

// Preemptible reports whether the task could be preempted right now by an
// interrupt: user mode always, kernel mode only under full preemption with
// preemption enabled.
func (t *Task) Preemptible() bool {
	return t.mode == ModeUser || (t.e.cfg.Preempt.Preemptive() && t.preemptCount == 0)
}

// start makes the task's coroutine; called when it is first dispatched.
// The coroutine (iter.Pull) runs only between a dispatch's resume and the
// task's next yield, on the goroutine that runs the engine, so the baton is
// a direct switch between the two, not a hand-off through the scheduler.
func (t *Task) start() {
	t.started = true
	t.resume, t.stop = iter.Pull(func(yield func(struct{}) bool) {
		t.yieldFn = yield
		defer func() {
			r := recover()
			if _, ok := r.(killSignal); !ok && r != nil {
				t.e.Stop(fmt.Errorf("task %s panicked: %v", t.Name, r))
			}
			t.finish()
		}()
		if t.killed {
			panic(killSignal{})
		}
		t.fn(t)
	})
}

// finish marks the task ended and frees its CPU.
func (t *Task) finish() {
	if t.state == taskDead {
		return
	}
	wasRunning := t.state == taskRunning
	t.state = taskDead
	if !t.daemon {
		t.e.live--
	}
	if wasRunning && !t.killed {
		t.cpu.switchOut(t)
	}
}

// dispatch hands the baton to t and waits for it to give it back.
func (t *Task) dispatch() {
	t.dispatchEv = nil
	t.e.curCPU = t.cpu
	if !t.started {
		t.start()
	}
	t.resume()
}

// yield gives the baton back to the engine and waits to be dispatched again
// (or to be killed: stop makes the coroutine's yield return false).
func (t *Task) yield() {
	if !t.yieldFn(struct{}{}) || t.killed {
		panic(killSignal{})
	}
}

// Charge spends d of CPU time (after jitter) in the task's current mode.
// Interrupts that arrive meanwhile run at their time and stretch the charge
// by the time they take.
func (t *Task) Charge(d Time) {
	if t.cpu.needResched && t.e.cfg.Preempt.Preemptive() && t.Preemptible() && len(t.cpu.runq) > 0 {
		t.Schedule() // woken a task that preempts: it runs before this work
	}
	d = t.e.Jitter(d)
	if d <= 0 {
		return
	}
	t.cpu.account(t.mode, d)
	t.chargedInPhase(d)
	end := t.e.now + d
	// Fast path: nothing else is due before the charge ends, so no other
	// code could observe the difference between running it and skipping it.
	if next := t.e.nextEventAt(); next < 0 || next > end {
		t.e.now = end
		return
	}
	t.chargeEnd = end
	t.armCharge(end)
	t.yield()
}

// armCharge arms the end of the task's current charge (endFn) at end.
func (t *Task) armCharge(end Time) {
	t.chargeEvt.fn = t.endFn
	t.chargeEv = &t.chargeEvt
	t.e.arm(t.chargeEv, end)
}

// endCharge resumes a task whose charge is complete.
func (t *Task) endCharge() {
	t.chargeEv = nil
	t.dispatch()
}

// stretch delays the end of the task's current charge by d (interrupt work).
func (t *Task) stretch(d Time) {
	if t.chargeEv == nil {
		return
	}
	t.chargeEnd += d
	t.e.reschedule(t.chargeEv, t.chargeEnd)
}

// Relax busy-waits in the current mode until the next event anywhere in the
// system (at least min of CPU time), like a cpu_relax() polling loop: between
// two events nothing can change what the loop polls, so one step here is
// exactly as many iterations of a real busy loop as fit in that time.
func (t *Task) Relax(min Time) {
	if t.cpu.needResched && t.e.cfg.Preempt.Preemptive() && t.Preemptible() && len(t.cpu.runq) > 0 {
		t.Schedule()
	}
	next := t.e.nextEventAt()
	d := min
	if next > t.e.now+d {
		d = next - t.e.now
	}
	t.cpu.account(t.mode, d)
	t.chargedInPhase(d)
	t.chargeEnd = t.e.now + d
	t.armCharge(t.chargeEnd)
	t.yield()
}

// RelaxUntil busy-waits like Relax, but across events: after each event it
// asks cond (from the engine, without running the task) and returns only
// when cond reports true, the clock reaches until, or the CPU must go to
// another task. It is exactly Relax in a loop whose body only polls cond,
// at the cost of one evaluation per event instead of a task switch.
func (t *Task) RelaxUntil(min, until Time, cond func() bool) {
	t.RelaxUntilSteady(min, until, cond, nil)
}

// RelaxUntilSteady is RelaxUntil for a cond that reads only the model's
// state and changes nothing but counters, which skipped(n) adds for n
// evaluations: the engine may then fast-forward over ticks that provably
// change nothing cond reads (steady.go). A nil skipped is RelaxUntil.
func (t *Task) RelaxUntilSteady(min, until Time, cond func() bool, skipped func(n int64)) {
	if t.cpu.needResched && t.e.cfg.Preempt.Preemptive() && t.Preemptible() && len(t.cpu.runq) > 0 {
		t.Schedule()
	}
	t.relaxCond, t.relaxUntil, t.relaxMin, t.relaxSkipped = cond, until, min, skipped
	end := t.endFn
	t.endFn = t.relaxFn
	t.relaxArm()
	t.yield()
	t.endFn, t.relaxCond, t.relaxSkipped = end, nil, nil
}

// relaxArm charges the spin up to the next event (at least relaxMin, at
// most to relaxUntil) and arms its end.
func (t *Task) relaxArm() {
	d := t.relaxMin
	if next := t.e.nextEventAt(); next > t.e.now+d {
		d = next - t.e.now
	} else if next < 0 && t.relaxUntil > t.e.now+d {
		d = t.relaxUntil - t.e.now
	}
	if t.e.now+d > t.relaxUntil && t.relaxUntil > t.e.now {
		d = max(t.relaxUntil-t.e.now, 1)
	}
	t.cpu.account(t.mode, d)
	t.chargedInPhase(d)
	t.chargeEnd = t.e.now + d
	t.armCharge(t.chargeEnd)
}

// relaxStep ends one step of RelaxUntil's spin: it spins on, or resumes
// the task.
func (t *Task) relaxStep() {
	t.chargeEv = nil
	c := t.cpu
	resched := c.needResched && t.e.cfg.Preempt.Preemptive() && t.Preemptible() && len(c.runq) > 0
	if t.relaxCond == nil || t.e.now >= t.relaxUntil || resched || c.curr != t || t.relaxCond() {
		t.dispatch()
		return
	}
	if t.relaxSkipped != nil && t.e.steady && t.skipSteadyTicks() {
		return // the run stopped within the ticks skipped: the spin is armed as it stood
	}
	t.relaxArm()
}

// prepareSleep starts a new sleep and returns its generation; wakers
// registered for it call wakeIf with that generation.
func (t *Task) prepareSleep() uint64 {
	t.sleepGen++
	return t.sleepGen
}

// wakeIf wakes the task if it is still in the sleep of generation gen.
func (t *Task) wakeIf(gen uint64) {
	if t.sleepGen == gen {
		t.wake()
	}
}

// block gives up the CPU until a waker registered with prepareSleep's
// generation calls wakeIf.
func (t *Task) block() {
	if t.e.trace != nil {
		t.sleepStart = t.e.now
	}
	t.state = taskBlocked
	t.e.stats.Sleeps++
	t.cpu.switchOut(t)
	t.yield()
}

// wake makes a blocked task runnable on its CPU.
func (t *Task) wake() {
	if t.state != taskBlocked {
		return
	}
	if t.e.trace != nil && t.started {
		t.e.traceSpan(tracePidTasks, t.PID, "sched", "sleeping", t.sleepStart, map[string]any{"phase": t.phase.name})
	}
	t.e.stats.Wakeups++
	t.state = taskRunnable
	if t.unbound {
		t.cpu = t.e.placeUnbound(t.cpu, t.e.curCPU)
	}
	if w := t.e.curCPU; w != nil && w != t.cpu && t.cpu.curr == nil && t.cpu.deferred == nil {
		t.cpu.wakeLatency = t.e.cfg.WakeLatency // a remote wake-up of an idle CPU (Config.WakeLatency)
	}
	t.cpu.enqueue(t)
	t.cpu.wakeLatency = 0
}

// SetRT makes the task a real-time thread at the lowest real-time
// priority (SCHED_FIFO 1, kthread_prio's default): queued ahead of the
// ordinary tasks on its CPU, preempting them when it wakes, and never
// preempted by their wakeups (class.go).
func (t *Task) SetRT() { t.setRT(PrioFIFOLow) }

// SetUnbound lets the scheduler run the task on any CPU: when it wakes it
// goes to its last CPU if that is idle, else to the waking CPU if that is
// idle (CFS's wake_affine_idle), else to the lowest-numbered idle CPU, else
// back to its last CPU's run queue. (Kernel threads such as the RCU
// grace-period kthread are unbound.)
func (t *Task) SetUnbound() { t.unbound = true }

// placeUnbound picks the CPU for a waking unbound task.
func (e *Engine) placeUnbound(last, waker *CPU) *CPU {
	if last.Idle() {
		return last
	}
	if waker != nil && waker.Idle() {
		return waker
	}
	for _, c := range e.cpus {
		if c.Idle() {
			return c
		}
	}
	return last
}

// Schedule voluntarily gives the CPU to another runnable task, if any.
//
// Like __schedule(), it passes through the scheduler even when nothing else
// is runnable: the hooks see a context switch (RCU's quiescent state), but
// the task keeps the CPU and the soft-lockup watchdog sees no switch.
func (t *Task) Schedule() {
	c := t.cpu
	if len(c.runq) == 0 || !outranks(c.runq[0], t) { // nothing above t waits (class.go)
		c.needResched, c.lazyResched = false, false
		c.keptCPU = true
		for _, h := range t.e.hooks {
			h.ContextSwitch(c)
		}
		c.keptCPU = false
		return
	}
	t.state = taskRunnable
	c.needResched = false
	c.switchOut(t)
	c.queue(t, true)
	t.yield()
}

// CondResched is cond_resched(): a preemption point in every model. It
// reschedules only if another task needs the CPU.
func (t *Task) CondResched() {
	for _, h := range t.e.hooks {
		if q, ok := h.(interface{ CondResched(*Task) }); ok {
			q.CondResched(t)
		}
	}
	if t.cpu.needResched {
		t.Schedule()
	}
}

// MightSleep is might_sleep(): a preemption point under voluntary (and
// full) preemption, a no-op under none.
func (t *Task) MightSleep() {
	if t.e.cfg.Preempt != PreemptNone {
		t.CondResched()
	}
}

// ScheduleTimeout sleeps for n jiffies (schedule_timeout_uninterruptible):
// a timer armed for jiffies+n wakes it, in the tick the timer wheel assigns.
func (t *Task) ScheduleTimeout(n int64) {
	if n <= 0 {
		t.CondResched()
		return
	}
	expire := t.e.Jiffies() + n
	gen := t.prepareSleep()
	t.cpu.AddTimer(expire, func() { t.wakeIf(gen) })
	t.block()
}

// Nanosleep sleeps exactly d on a high-resolution timer (no tick rounding).
func (t *Task) Nanosleep(d Time) {
	if d <= 0 {
		return
	}
	gen := t.prepareSleep()
	t.e.After(d, func() { t.wakeIf(gen) })
	t.block()
}

// Msleep sleeps at least ms milliseconds: a timeout of msecs_to_jiffies(ms)
// jiffies, plus one in kernels before 6.13, whose msleep added it to
// guarantee the full duration on the cascading wheel (Config.MsleepExact).
// When the timeout fires depends on the timer wheel (TimerWheel).
func (t *Task) Msleep(ms int64) {
	n := t.e.MsecsToJiffies(ms)
	if !t.e.cfg.MsleepExact {
		n++
	}
	t.ScheduleTimeout(n)
}
