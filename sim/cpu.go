package sim

import "container/heap"

// Softirq numbers, in the order the kernel runs them at irq exit.
const (
	SoftirqTimer = iota
	SoftirqNetRx
	SoftirqRCU
	nrSoftirqs
)

// CPU is one simulated processor: the task it runs, its run queue, its tick,
// its timer wheel and its pending softirqs.
type CPU struct {
	e  *Engine
	ID int

	curr        *Task
	runq        []*Task
	needResched bool
	lastSwitch  Time
	// irqBusyUntil is when interrupt work done while the CPU had no task
	// (softirqs on an idle CPU) ends; a task woken meanwhile starts after.
	irqBusyUntil Time

	timers  *timerQueue
	tickFn  func()
	tickEv  *Event
	tickAt  Time
	softirq uint32
	ksoftEv *Event
	inIRQ   bool

	// Accounting.
	Busy     [3]Time // by Mode; Busy[ModeIdle] counts interrupt work on an idle CPU
	Switches int64
}

// Curr returns the task holding the CPU, or nil when idle.
func (c *CPU) Curr() *Task { return c.curr }

// Idle reports whether the CPU has nothing to run.
func (c *CPU) Idle() bool { return c.curr == nil && len(c.runq) == 0 }

// Mode returns what the CPU is doing now.
func (c *CPU) Mode() Mode {
	if c.curr == nil {
		return ModeIdle
	}
	return c.curr.mode
}

// InIRQ reports whether interrupt or softirq code is running on the CPU.
func (c *CPU) InIRQ() bool { return c.inIRQ }

// SetNeedResched asks the CPU to reschedule at its next preemption point.
func (c *CPU) SetNeedResched() { c.needResched = true }

// NeedResched reports whether a reschedule is pending.
func (c *CPU) NeedResched() bool { return c.needResched }

// LastSwitch returns the time of the CPU's last context switch.
func (c *CPU) LastSwitch() Time { return c.lastSwitch }

func (c *CPU) account(m Mode, d Time) { c.Busy[m] += d }

// Steal charges d of interrupt work to the CPU: the running task's charge is
// stretched, or, on an idle CPU, the next task starts later.
func (c *CPU) Steal(d Time) {
	d = c.e.Jitter(d)
	if d <= 0 {
		return
	}
	c.Busy[ModeKernel] += d
	if c.curr != nil && c.curr.chargeEv != nil {
		c.curr.stretch(d)
		return
	}
	if c.irqBusyUntil < c.e.now {
		c.irqBusyUntil = c.e.now
	}
	c.irqBusyUntil += d
}

// enqueue makes t runnable here, dispatching it at once on an idle CPU.
func (c *CPU) enqueue(t *Task) {
	if c.curr == nil {
		c.switchIn(t)
		return
	}
	c.runq = append(c.runq, t)
	c.needResched = true
	if c.curr.Preemptible() && c.e.cfg.Preempt == PreemptFull {
		c.preempt()
	}
	c.ensureTick()
}

// switchIn gives the CPU to t after the cost of a context switch.
func (c *CPU) switchIn(t *Task) {
	c.curr = t
	t.state = taskRunning
	if c.inIRQ {
		// Woken from interrupt context on an idle CPU: the switch itself
		// happens after the interrupt returns.
		c.e.At(c.e.now, c.noteSwitch)
	} else {
		c.noteSwitch()
	}
	start := c.e.now
	if c.irqBusyUntil > start {
		start = c.irqBusyUntil
	}
	start += c.e.Jitter(c.e.cfg.ContextSwitch)
	c.Busy[ModeKernel] += start - c.e.now
	if t.remaining > 0 { // preempted in the middle of a charge
		t.chargeEnd = start + t.remaining
		t.remaining = 0
		t.chargeEv = c.e.At(t.chargeEnd, t.endFn)
	} else {
		c.e.At(start, t.dispatch)
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
	if len(c.runq) > 0 {
		next := c.runq[0]
		copy(c.runq, c.runq[1:])
		c.runq = c.runq[:len(c.runq)-1]
		c.switchIn(next)
		return
	}
	c.needResched = false
	c.noteSwitch()
	if c.softirq != 0 {
		c.scheduleKsoftirqd()
	}
	c.ensureTick()
}

func (c *CPU) noteSwitch() {
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
	t.chargeEv.Cancel()
	t.chargeEv = nil
	t.remaining = t.chargeEnd - c.e.now
	t.state = taskRunnable
	c.e.stats.Preemptions++
	c.switchOut(t)
	c.runq = append(c.runq, t)
}

// ---- ticks, timers and softirqs ----

// ensureTick (re)arms the CPU's tick: every jiffy while the CPU is busy or a
// hook needs it; otherwise only at the next timer (NO_HZ idle).
func (c *CPU) ensureTick() {
	next := c.e.JiffyStart(c.e.Jiffies() + 1)
	want := Time(-1)
	if !c.Idle() || c.hooksNeedTick() {
		want = next
	} else if exp, ok := c.timers.earliest(); ok {
		want = c.e.JiffyStart(exp)
		if want < next {
			want = next
		}
	}
	if c.tickEv != nil && !c.tickEv.cancelled {
		if want >= 0 && want < c.tickAt {
			c.tickEv.Cancel()
		} else {
			return
		}
	}
	if want < 0 {
		c.tickEv = nil
		return
	}
	c.tickAt = want
	if c.tickFn == nil {
		c.tickFn = c.tick
	}
	c.tickEv = c.e.At(want, c.tickFn)
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
	c.tickEv = nil
	c.e.stats.Ticks++
	mode := c.Mode()
	c.inIRQ = true
	c.Steal(c.e.cfg.TickCost)
	for _, h := range c.e.hooks {
		h.Tick(c, mode)
	}
	if exp, ok := c.timers.earliest(); ok && exp <= c.e.Jiffies() {
		c.softirq |= 1 << SoftirqTimer
	}
	c.checkLockup()
	c.runSoftirqs()
	c.inIRQ = false
	if c.needResched && c.curr != nil && c.curr.Preemptible() {
		c.preempt()
	}
	c.ensureTick()
}

// checkLockup is the soft-lockup detector: a CPU that ran one task in
// kernel mode without a context switch (not even to its watchdog thread)
// for the threshold.
func (c *CPU) checkLockup() {
	t := c.curr
	if t == nil || t.mode != ModeKernel || c.e.cfg.Watchdog < 0 {
		return
	}
	if stuck := c.e.now - c.lastSwitch; stuck >= c.e.cfg.Watchdog {
		err := &LockupError{CPU: c.ID, Task: t.Name, Stuck: stuck, At: c.e.now}
		c.e.Printk("BUG: soft lockup - CPU#%d stuck for %ds! [%s:%d]", c.ID, int64(stuck/Second), t.Name, t.PID)
		c.e.Stop(err)
	}
}

// RegisterSoftirq installs the handler of softirq nr.
func (e *Engine) RegisterSoftirq(nr int, fn func(*CPU)) { e.softirqs[nr] = fn }

// RaiseSoftirq marks softirq nr pending on the CPU. Raised from interrupt
// context it runs at irq exit; otherwise at once on an idle CPU (ksoftirqd)
// or at the next interrupt exit on a busy one.
func (c *CPU) RaiseSoftirq(nr int) {
	c.softirq |= 1 << nr
	if !c.inIRQ && c.curr == nil {
		c.scheduleKsoftirqd()
	}
}

func (c *CPU) scheduleKsoftirqd() {
	if c.ksoftEv != nil && !c.ksoftEv.cancelled {
		return
	}
	c.ksoftEv = c.e.At(c.e.now, func() {
		c.ksoftEv = nil
		c.inIRQ = true
		c.runSoftirqs()
		c.inIRQ = false
		c.ensureTick()
	})
}

func (c *CPU) runSoftirqs() {
	for rounds := 0; c.softirq != 0 && rounds < 10; rounds++ {
		pending := c.softirq
		c.softirq = 0
		for nr := 0; nr < nrSoftirqs; nr++ {
			if pending&(1<<nr) == 0 {
				continue
			}
			if nr == SoftirqTimer {
				c.runTimers()
			} else if fn := c.e.softirqs[nr]; fn != nil {
				fn(c)
			}
		}
	}
}

// Timer is a pending timer; Cancel removes it.
type Timer struct {
	expire int64
	seq    uint64
	fn     func()
	index  int
	q      *timerQueue
}

// Cancel deletes the timer if it has not fired.
func (tm *Timer) Cancel() {
	if tm != nil && tm.index >= 0 {
		heap.Remove(tm.q, tm.index)
	}
}

// AddTimer arms a timer on the CPU that fires in the tick at which jiffies
// reaches expire (in the timer softirq), like add_timer.
func (c *CPU) AddTimer(expire int64, fn func()) *Timer { return c.addTimer(expire, fn) }

func (c *CPU) addTimer(expire int64, fn func()) *Timer {
	c.e.seq++
	tm := &Timer{expire: expire, seq: c.e.seq, fn: fn, q: c.timers}
	heap.Push(c.timers, tm)
	c.ensureTick()
	return tm
}

func (c *CPU) runTimers() {
	j := c.e.Jiffies()
	for {
		exp, ok := c.timers.earliest()
		if !ok || exp > j {
			return
		}
		tm := heap.Pop(c.timers).(*Timer)
		tm.fn()
	}
}

type timerQueue []*Timer

func newTimerQueue() *timerQueue { return &timerQueue{} }

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].expire != q[j].expire {
		return q[i].expire < q[j].expire
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i]; q[i].index = i; q[j].index = j }
func (q *timerQueue) Push(x any)   { tm := x.(*Timer); tm.index = len(*q); *q = append(*q, tm) }
func (q *timerQueue) Pop() any {
	old := *q
	n := len(old)
	tm := old[n-1]
	old[n-1] = nil
	tm.index = -1
	*q = old[:n-1]
	return tm
}

func (q *timerQueue) earliest() (int64, bool) {
	if len(*q) == 0 {
		return 0, false
	}
	return (*q)[0].expire, true
}
