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
// cannot certify; and a machine whose ticks come late (ticklate.go) never
// fast-forwards, as each tick draws its lateness. What it leaves is the
// state the events would have left (TestSteadyTicksAreTheTicksRun, and in
// ndst/emu every counter of bench cells run both ways). Config.EveryTick
// turns it off.

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
	if e.trace != nil || e.stopErr != nil || e.interrupt != nil && e.stats.Events%interruptEvery == 0 || len(e.cfg.TickLateness) > 0 {
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
	if c.lazyResched {
		return false // the tick upgrades it (lazy.go)
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
	// A tick may come no later than the spin's deadline, and before the
	// other event and, with 2.6.3x's detector, before the unit in which it
	// would wake the watchdog thread (unless woken already) or report; the
	// end of its step before the deadline and the other event.
	tickBound, endBound := t.relaxUntil+1, t.relaxUntil
	if other >= 0 {
		tickBound, endBound = min(tickBound, other), min(endBound, other)
	}
	if e.cfg.Watchdog > 0 && e.cfg.Lockup == LockupTick {
		thresh := e.watchdogThresh()
		last := c.touchedUnits + thresh // the last unit without a report
		if !c.watchdogKicked {
			last = c.touchedUnits + thresh/2
		}
		tickBound = min(tickBound, Time(last+1)<<lockupShift)
	}

	// The cycles run on local copies of what they change, written back
	// (sync) before each poll and at the end.
	var (
		now, tickAt, period = e.now, c.tickAt, e.period
		seq, events         = e.seq, e.stats.Events
		pcg                 = *e.pcg
		busyMode, busyIRQ   Time // added since the last sync
		ticks, checks       int64
		syncedT, syncedC    int64 // of those, the ones written back
		aSeq, rSeq, bSeq          = uint64(0), uint64(0), c.tickEvt.seq
		lastJ, lastD        Time  = -1, 0
		pollRelax           bool  // the last step's event is due a poll, after the next arm
		jit, cost, least    = e.cfg.Jitter, e.cfg.TickCost, t.relaxMin
		draw                = jit != 0 && cost > 0
		polled              = e.interrupt != nil
	)
	sync := func() {
		e.now, e.seq, e.stats.Events, *e.pcg = now, seq, events, pcg
		c.Busy[t.mode] += busyMode
		t.chargedInPhase(busyMode)
		c.Busy[ModeIRQ] += busyIRQ
		busyMode, busyIRQ = 0, 0
		c.tickAt = tickAt
		if n := ticks - syncedT; n > 0 {
			e.stats.Ticks += n
			e.skipped += n
			e.curCPU = c
			c.irqBase, c.irqSpent = lastJ, max(lastD, 0)
			if lastD > 0 {
				c.irqBusyUntil = lastJ + lastD
			}
			for _, h := range e.hooks {
				h.(SteadyHooks).SkipTicks(c, mode, first+syncedT, n)
			}
			syncedT = ticks
		}
		if n := checks - syncedC; n > 0 {
			t.relaxSkipped(n)
			syncedC = checks
		}
		if ticks > 0 {
			c.tickEvt.at, c.tickEvt.seq = tickAt, bSeq
			e.queue.fix(c.tickEvt.index)
		}
	}
	// stopped arms the spin's step as it stood when the poll stopped the
	// run: due at end with sequence number seq.
	stopped := func(err error, end Time, seq uint64) bool {
		e.Stop(err)
		t.chargeEnd = end
		t.chargeEvt.fn = t.endFn
		t.chargeEv = &t.chargeEvt
		t.chargeEvt.at, t.chargeEvt.seq, t.chargeEvt.cancelled = end, seq, false
		e.queue.add(&t.chargeEvt)
		return true
	}
	for ticks < most {
		j := tickAt
		if j >= tickBound || j <= now || j < now+least {
			break
		}
		saved := pcg
		d := cost
		if draw {
			d = jittered(cost, jit, pcg.Uint64())
		}
		end := j
		if d > 0 {
			end = j + d
		}
		if end >= endBound || end > j+period {
			pcg = saved // that tick runs as an event and draws its own cost
			break
		}
		// The spin's step up to the tick (relaxArm).
		busyMode += j - now
		seq++
		aSeq = seq
		if pollRelax {
			pollRelax = false
			cur := pcg
			pcg = saved // the tick's cost is drawn by the tick, not reached yet
			sync()
			if err := e.interrupt(); err != nil {
				return stopped(err, j, aSeq)
			}
			pcg = cur
		}
		// The tick (tick, Steal, stretch, ensureTick).
		now = j
		events++
		if d > 0 {
			busyIRQ += d
			seq++
			rSeq = seq
		} else {
			rSeq = aSeq
		}
		seq++
		bSeq = seq
		tickAt = j + period
		lastJ, lastD = j, d
		ticks++
		if polled && events%interruptEvery == 0 {
			sync()
			if err := e.interrupt(); err != nil {
				return stopped(err, end, rSeq)
			}
		}
		// The end of the stretched step: the condition is still false.
		now = end
		events++
		checks++
		pollRelax = polled && events%interruptEvery == 0
	}
	sync()
	if ticks > 0 {
		t.chargeEnd = now
	}
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
