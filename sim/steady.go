package sim

// Steady ticks: fast-forwarding a spin over ticks that change nothing.
//
// A task spinning in RelaxUntilSteady on a CPU where nothing else is due
// goes through the same cycle at every jiffy: the tick interrupts it (its
// jittered cost stretches the spin's step), the hooks' tick work and the
// softirqs it raises run, the next tick is armed, and at the end of the
// stretched step the spin's condition is asked again and is still false.
// When every hook certifies that its part of the coming ticks changes
// nothing but counters (SteadyHooks), the engine computes those cycles
// instead of running them as events, in their order: each tick's cost is
// drawn from the run's random source as the tick would draw it; the CPU's
// busy time, the task's charge and phase, the engine's counters (events,
// ticks, sequence numbers), the hooks' counters (SkipTicks) and the
// condition's (skipped) advance as the cycles would advance them; and the
// run's interrupt is polled after the same events, with the state as it
// would stand there. It stops before any cycle that would differ: another
// event due (another CPU's tick, a timer's hrtimer, a wake-up), a timer on
// this CPU's wheel, the soft-lockup detector's wake-up or report, the spin's
// own deadline, a tick whose cost would reach the next jiffy, a hook that
// cannot certify. What it leaves is the state the events would have left
// (TestSteadyTicksAreTheTicksRun, and in ndst/emu every counter of bench
// cells run both ways). Config.EveryTick turns it off.

// SteadyHooks is implemented by Hooks that can certify ticks in advance. A
// spin fast-forwards only when every hook does.
type SteadyHooks interface {
	// SteadyTicks returns how many of the coming ticks of cpu, the first
	// at jiffy first, the hook certifies (no more than most): each interrupting
	// mode while the CPU's task spins and nothing else runs in between,
	// the hook's Tick and the softirq work it raises there leave every
	// state of the model as they find it except counters (they charge no
	// time, wake nothing, arm nothing, raise nothing for a later pass, set
	// need_resched only where it is set already) and add the same counters
	// at each.
	SteadyTicks(cpu *CPU, mode Mode, first, most int64) int64
	// SkipTicks adds the counters of the n ticks from jiffy first that
	// SteadyTicks certified (they may come in several calls).
	SkipTicks(cpu *CPU, mode Mode, first, n int64)
}

// skipSteadyTicks fast-forwards t's spin from a step that found its
// condition false (relaxStep, before it arms the next step) over the cycles
// the hooks certify. It reports true when the run's interrupt stopped the
// run within them: the spin's step is then armed as it stood at that event.
func (t *Task) skipSteadyTicks() bool {
	e, c := t.e, t.cpu
	if e.trace != nil || e.stopErr != nil || e.interrupt != nil && e.stats.Events%interruptEvery == 0 {
		return false // the poll after this step must see it unskipped
	}
	if c.tickEv == nil || c.tickAt <= e.now || c.irqBusyUntil > c.tickAt || c.curr != t || c.deferred != nil ||
		c.inIRQ || c.softirq != 0 || c.softCtx != softirqNone || c.irqResume != nil {
		return false
	}
	// With a task waiting, the tick's slice check and the reschedule at
	// interrupt exit must have nothing to change.
	if len(c.runq) > 0 && (t.Preemptible() || !c.needResched) {
		return false
	}
	lim := e.cfg.Softirq
	if k := c.ksoftirqd; lim.Threaded || lim.DeferToKsoftirqd && k != nil && (k.state == taskRunnable || k.state == taskRunning) {
		return false // the tick's softirqs would go to a thread
	}
	first := e.JiffiesAt(c.tickAt)
	if e.JiffyStart(first) != c.tickAt {
		return false
	}
	other := e.earliestBut(c.tickEv)
	if other >= 0 && other <= c.tickAt {
		return false // something else comes first (another CPU's tick)
	}
	most := int64(1) << 40
	if fire, ok := c.timers.earliest(); ok {
		most = min(most, fire-first) // that tick raises the timer softirq
	}
	mode := t.mode
	for _, h := range e.hooks {
		sh, ok := h.(SteadyHooks)
		if !ok {
			return false
		}
		if most = min(most, sh.SteadyTicks(c, mode, first, most)); most <= 0 {
			return false
		}
	}
	if most <= 0 {
		return false
	}
	watch := e.cfg.Watchdog > 0 && e.cfg.Lockup == LockupTick
	thresh := e.watchdogThresh()

	var (
		ticks, checks    int64 // ticks skipped, and the condition's evaluations
		flushT, flushC   int64 // how many of them have their counters added
		aSeq, rSeq, bSeq uint64
		pollRelax        bool // the last step's event is due a poll, after the next arm
	)
	bSeq = c.tickEvt.seq
	flush := func() {
		if n := ticks - flushT; n > 0 {
			for _, h := range e.hooks {
				h.(SteadyHooks).SkipTicks(c, mode, first+flushT, n)
			}
			flushT = ticks
		}
		if n := checks - flushC; n > 0 {
			t.relaxSkipped(n)
			flushC = checks
		}
	}
	// settle puts the tick event where the cycles left it.
	settle := func() {
		if ticks > 0 {
			c.tickEvt.at, c.tickEvt.seq = c.tickAt, bSeq
			e.queue.fix(c.tickEvt.index)
		}
	}
	// stopped arms the spin's step as it stood when the poll stopped the
	// run: due at end with sequence number seq.
	stopped := func(end Time, seq uint64) bool {
		flush()
		settle()
		t.chargeEnd = end
		t.chargeEvt.fn = t.endFn
		t.chargeEv = &t.chargeEvt
		t.chargeEvt.at, t.chargeEvt.seq, t.chargeEvt.cancelled = end, seq, false
		e.queue.add(&t.chargeEvt)
		return true
	}
	poll := func() error {
		if e.interrupt == nil || e.stats.Events%interruptEvery != 0 {
			return nil
		}
		flush()
		return e.interrupt()
	}
	for ticks < most {
		j := c.tickAt
		if j <= e.now || j < e.now+t.relaxMin || j > t.relaxUntil || other >= 0 && j >= other {
			break
		}
		if watch {
			if u := lockupUnits(j); u > c.touchedUnits+thresh || !c.watchdogKicked && u > c.touchedUnits+thresh/2 {
				break
			}
		}
		saved := *e.pcg
		d := e.Jitter(e.cfg.TickCost)
		end := j
		if d > 0 {
			end = j + d
		}
		if end >= t.relaxUntil || other >= 0 && end >= other || end > j+e.period {
			*e.pcg = saved // that tick runs as an event and draws its own cost
			break
		}
		// The spin's step up to the tick (relaxArm).
		step := j - e.now
		c.Busy[t.mode] += step
		t.chargedInPhase(step)
		e.seq++
		aSeq = e.seq
		if pollRelax {
			pollRelax = false
			if err := e.interrupt(); err != nil {
				e.Stop(err)
				*e.pcg = saved // the tick's cost is drawn by the tick, which the run does not reach
				return stopped(j, aSeq)
			}
		}
		// The tick (tick, Steal, stretch, ensureTick).
		e.now = j
		e.stats.Events++
		e.stats.Ticks++
		e.curCPU = c
		c.irqBase, c.irqSpent = j, 0
		if d > 0 {
			c.Busy[ModeIRQ] += d
			c.irqSpent = d
			c.irqBusyUntil = end
			e.seq++
			rSeq = e.seq
		} else {
			rSeq = aSeq
		}
		e.seq++
		bSeq = e.seq
		c.tickAt = j + e.period
		ticks++
		e.skipped++
		if err := poll(); err != nil {
			e.Stop(err)
			return stopped(end, rSeq)
		}
		// The end of the stretched step: the condition is still false.
		e.now = end
		t.chargeEnd = end
		e.stats.Events++
		checks++
		pollRelax = e.interrupt != nil && e.stats.Events%interruptEvery == 0
		if pollRelax {
			flush()
		}
	}
	flush()
	settle()
	return false
}

// SkippedTicks returns how many ticks the run computed instead of running
// them as events (their events are counted in Stats all the same).
func (e *Engine) SkippedTicks() int64 { return e.skipped }

// earliestBut returns the time of the earliest pending event other than ev,
// or -1 (cancelled events count: the bound is only ever earlier).
func (e *Engine) earliestBut(ev *Event) Time {
	q := e.queue
	if len(q) == 0 {
		return -1
	}
	if q[0] != ev {
		return q[0].at
	}
	best := Time(-1)
	for i := 1; i <= 2 && i < len(q); i++ {
		if best < 0 || q[i].at < best {
			best = q[i].at
		}
	}
	return best
}
