package sim

// Softirqs, as kernel/softirq.c runs them.
//
// A softirq raised in interrupt context runs when the interrupt returns
// (irq_exit -> __do_softirq), on whatever the CPU was doing. __do_softirq
// passes over the pending vector again while new work is raised, at most
// MaxRestart times (MAX_SOFTIRQ_RESTART, 10, in every line) and, in modern
// kernels, only while less than MaxTime has passed (MAX_SOFTIRQ_TIME, 2 ms,
// counted in jiffies) and no reschedule is pending; what is left then is
// handed to the CPU's ksoftirqd thread (wakeup_softirqd). A softirq raised
// outside interrupt context wakes ksoftirqd at once (raise_softirq with
// !in_interrupt()). ksoftirqd runs the vector with bottom halves disabled,
// so an interrupt that arrives meanwhile leaves new work pending for it
// rather than running it on top; it calls cond_resched() between passes. On
// an idle CPU it runs at once; on a busy one only when the running task lets
// it (a sleep, cond_resched(), or preemption where the model allows it).

// Softirq numbers, in the order the kernel runs them.
const (
	SoftirqTimer = iota
	SoftirqNetRx
	SoftirqRCU
	nrSoftirqs
)

// DefaultSoftirqRestart is MAX_SOFTIRQ_RESTART.
const DefaultSoftirqRestart = 10

// SoftirqLimits bound one __do_softirq run.
type SoftirqLimits struct {
	// MaxRestart is the number of passes over the pending vector (zero:
	// DefaultSoftirqRestart).
	MaxRestart int
	// MaxTime ends the restarts once this much time (rounded up to jiffies,
	// as msecs_to_jiffies does) has passed; zero: no time bound (2.6.3x).
	MaxTime Time
	// StopOnResched ends the restarts when a reschedule is pending
	// (modern kernels).
	StopOnResched bool
	// DeferToKsoftirqd: interrupt exit leaves pending softirqs to
	// ksoftirqd when it is already runnable (4cd13c21b207 "softirq: Let
	// ksoftirqd do its job", 4.9 to 6.4; reverted by d15121be7485).
	DeferToKsoftirqd bool
	// Threaded is PREEMPT_RT's invoke_softirq: interrupt exit runs no
	// softirq itself, it only wakes ksoftirqd (5.10-rt patches-rt/0149
	// "softirq: Make softirq control and processing RT aware"; 6.18
	// kernel/softirq.c l.333-342), so DeferToKsoftirqd has nothing left
	// to decide.
	Threaded bool
	// TimerThread: with Threaded, a TIMER softirq raised in the tick goes
	// to the per-CPU ktimers/N thread (SCHED_FIFO, lowest real-time
	// priority) instead of ksoftirqd (6.1-rt patches-rt/0012 "softirq:
	// Use a dedicated thread for timer wakeups"; mainline's ktimerd in
	// 6.18 softirq.c l.695-727). Without it (5.10-rt) timers expire in
	// ksoftirqd, an ordinary task.
	TimerThread bool
}

// softirqContext is where softirqs are running on a CPU.
type softirqContext int

const (
	softirqNone   softirqContext = iota
	softirqIRQ                   // at interrupt exit
	softirqThread                // in ksoftirqd, bottom halves disabled
)

// RegisterSoftirq installs the handler of softirq nr.
func (e *Engine) RegisterSoftirq(nr int, fn func(*CPU)) { e.softirqs[nr] = fn }

// RaiseSoftirq marks softirq nr pending on the CPU. In interrupt or softirq
// context it runs before that context ends; elsewhere it wakes ksoftirqd.
func (c *CPU) RaiseSoftirq(nr int) {
	c.softirq |= 1 << nr
	if !c.inIRQ && c.softCtx == softirqNone {
		c.wakeSoftirqd()
	}
}

// InSoftirq reports whether softirq handlers are running on the CPU.
func (c *CPU) InSoftirq() bool { return c.softCtx != softirqNone }

// SoftirqOnIdle reports whether the running softirq interrupted the idle
// task (is_idle_task(current) in a handler).
func (c *CPU) SoftirqOnIdle() bool { return c.softCtx == softirqIRQ && c.curr == nil }

// Spend charges d of softirq work to the CPU: in ksoftirqd the thread runs
// for d; at interrupt exit the work delays whatever the CPU was doing.
// Softirq handlers must spend through here (in ksoftirqd this is called
// from the thread's own goroutine, which may yield meanwhile).
func (c *CPU) Spend(d Time) {
	if c.softCtx == softirqThread {
		c.ksoftirqd.Charge(d)
		return
	}
	c.Steal(d)
}

// doSoftirq is __do_softirq: run the pending vector, restarting within the
// limits, and leave the rest to ksoftirqd.
func (c *CPU) doSoftirq() {
	lim := c.e.cfg.Softirq
	end := int64(-1)
	if lim.MaxTime > 0 {
		end = c.e.JiffiesAt(c.Clock()) + c.e.MsecsToJiffies(int64((lim.MaxTime+Millisecond-1)/Millisecond))
	}
	for restart := lim.MaxRestart; ; {
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
		if c.softirq == 0 || c.e.stopErr != nil {
			return
		}
		restart--
		if restart > 0 && (end < 0 || c.e.JiffiesAt(c.Clock()) < end) && !(lim.StopOnResched && c.needResched) {
			continue
		}
		c.wakeSoftirqd()
		return
	}
}

// runSoftirqsAtIRQExit is invoke_softirq: pending softirqs run as the
// interrupt returns, unless ksoftirqd is in the middle of running them; on
// PREEMPT_RT they go to their threads.
func (c *CPU) runSoftirqsAtIRQExit() {
	if c.softirq == 0 || c.softCtx != softirqNone {
		return
	}
	if lim := c.e.cfg.Softirq; lim.Threaded {
		if lim.TimerThread && c.softirq&(1<<SoftirqTimer) != 0 {
			c.softirq &^= 1 << SoftirqTimer
			c.wakeKtimers()
		}
		if c.softirq != 0 {
			c.wakeSoftirqd()
		}
		return
	}
	if k := c.ksoftirqd; c.e.cfg.Softirq.DeferToKsoftirqd && k != nil && (k.state == taskRunnable || k.state == taskRunning) {
		return
	}
	c.softCtx = softirqIRQ
	start := c.Clock()
	c.doSoftirq()
	c.softCtx = softirqNone
	if c.e.trace != nil && c.Clock() > start {
		c.e.emit(TraceEvent{Name: "softirq", Cat: "irq", Ph: "X", Ts: us(start), Dur: us(c.Clock() - start), Pid: tracePidCPUs, Tid: c.ID})
	}
}

// wakeSoftirqd wakes (creating it the first time) the CPU's ksoftirqd.
func (c *CPU) wakeSoftirqd() {
	if c.ksoftirqd == nil {
		c.ksoftirqd = c.e.Go("ksoftirqd", c.ID, true, ksoftirqdThread)
		c.ksoftirqd.Name = "ksoftirqd/" + itoa(c.ID)
		return
	}
	c.ksoftWQ.WakeAll()
}

// wakeKtimers wakes (creating it the first time) the CPU's ktimers/N
// thread, real-time, with expired timers to run.
func (c *CPU) wakeKtimers() {
	c.ktimersWork = true
	if c.ktimers == nil {
		c.ktimers = c.e.Go("ktimers/"+itoa(c.ID), c.ID, true, ktimersThread)
		c.ktimers.setRT(PrioFIFOLow)
		return
	}
	c.ktimersWQ.WakeAll()
}

// ktimersThread is run_timersd: the expired timers of its CPU, with bottom
// halves disabled.
func ktimersThread(t *Task) {
	c := t.cpu
	for {
		c.ktimersWQ.Wait(t, func() bool { return c.ktimersWork })
		c.ktimersWork = false
		t.PreemptDisable()
		c.runTimers()
		t.PreemptEnable()
	}
}

// ksoftirqdThread is run_ksoftirqd in its smpboot loop.
func ksoftirqdThread(t *Task) {
	c := t.cpu
	for {
		c.ksoftWQ.Wait(t, func() bool { return c.softirq != 0 })
		t.PreemptDisable() // local_bh_disable
		c.softCtx = softirqThread
		c.doSoftirq()
		c.softCtx = softirqNone
		t.PreemptEnable()
		t.CondResched()
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
