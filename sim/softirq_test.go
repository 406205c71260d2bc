package sim

import "testing"

// storm installs a softirq handler that does one unit of work per pass and
// raises itself again until n units are done, and returns the handler's log.
type storm struct {
	left   int
	passes []bool // per pass: was it in ksoftirqd?
	done   Time
}

func (s *storm) install(e *Engine, cost Time) {
	e.RegisterSoftirq(SoftirqNetRx, func(c *CPU) {
		s.passes = append(s.passes, c.softCtx == softirqThread)
		c.Spend(cost)
		s.left--
		if s.left > 0 {
			c.RaiseSoftirq(SoftirqNetRx)
		} else {
			s.done = c.Clock()
		}
	})
}

func TestSoftirqRestartsThenHandsOverToKsoftirqd(t *testing.T) {
	// Raised from a timer (interrupt context) on an idle CPU: ten passes
	// at interrupt exit, the rest in ksoftirqd at once.
	e := newTestEngine(t, Config{HZ: 1000, CPUs: 1, Watchdog: -1})
	s := &storm{left: 25}
	s.install(e, 10*Microsecond)
	e.Go("t", 0, false, func(tk *Task) {
		tk.CPU().AddTimer(1, func() { tk.CPU().RaiseSoftirq(SoftirqNetRx) })
		tk.ScheduleTimeout(5)
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	inIRQ := 0
	for _, k := range s.passes {
		if !k {
			inIRQ++
		}
	}
	// The timer softirq's own pass is the first of the ten.
	if len(s.passes) != 25 || inIRQ != DefaultSoftirqRestart-1 {
		t.Fatalf("passes = %d, %d at interrupt exit; want 25 and %d", len(s.passes), inIRQ, DefaultSoftirqRestart-1)
	}
	// All 25 units run back to back from the tick at 1 ms, plus one switch
	// into ksoftirqd.
	if want := Millisecond + 250*Microsecond; s.done != want {
		t.Errorf("storm done at %v, want %v", s.done, want)
	}
}

func TestSoftirqsOnABusyCPURunAtEveryInterruptExit(t *testing.T) {
	// The same storm raised while a task computes in kernel mode under no
	// preemption: ksoftirqd cannot run before the task sleeps at 10 ms,
	// but every tick's interrupt exit runs ten more passes (9 at 1 ms,
	// then 10 at 2 ms and the last 6 at 3 ms).
	e := newTestEngine(t, Config{HZ: 1000, CPUs: 1, Watchdog: -1})
	s := &storm{left: 25}
	s.install(e, 10*Microsecond)
	e.Go("t", 0, false, func(tk *Task) {
		tk.CPU().AddTimer(1, func() { tk.CPU().RaiseSoftirq(SoftirqNetRx) })
		tk.Charge(10 * Millisecond)
		tk.ScheduleTimeout(5)
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if want := 3*Millisecond + 60*Microsecond; s.done != want {
		t.Errorf("storm done at %v, want %v", s.done, want)
	}
}

func TestSoftirqTimeLimit(t *testing.T) {
	// Modern kernels also stop restarting after MAX_SOFTIRQ_TIME: with 1 ms
	// a pass at HZ=1000, the second pass already runs past the jiffy.
	e := newTestEngine(t, Config{HZ: 1000, CPUs: 1, Watchdog: -1, Softirq: SoftirqLimits{MaxTime: 2 * Millisecond}})
	s := &storm{left: 5}
	s.install(e, Millisecond)
	e.Go("t", 0, false, func(tk *Task) {
		tk.CPU().AddTimer(1, func() { tk.CPU().RaiseSoftirq(SoftirqNetRx) })
		tk.ScheduleTimeout(20)
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	// The timer pass and two storm passes fit before jiffies reaches
	// start+2; ksoftirqd does the other three.
	inIRQ := 0
	for _, k := range s.passes {
		if k {
			break
		}
		inIRQ++
	}
	if inIRQ != 2 || len(s.passes) != 5 {
		t.Errorf("passes = %v, want 2 at interrupt exit, then ksoftirqd", s.passes)
	}
}

func TestBusyTimeNeverExceedsElapsed(t *testing.T) {
	// A task woken by a timer in the same interrupt that then does long
	// softirq work must start after that work, not overlap it.
	e := newTestEngine(t, Config{HZ: 1000, CPUs: 1, Watchdog: -1, ContextSwitch: Microsecond, TickCost: Microsecond})
	s := &storm{left: 8}
	s.install(e, 100*Microsecond)
	var end Time
	e.Go("t", 0, false, func(tk *Task) {
		for range 50 {
			tk.CPU().AddTimer(tk.Engine().Jiffies()+1, func() { tk.CPU().RaiseSoftirq(SoftirqNetRx) })
			s.left = 8
			tk.ScheduleTimeout(1)
			tk.Charge(200 * Microsecond)
		}
		end = tk.Now()
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	c := e.CPU(0)
	busy := c.Busy[ModeUser] + c.Busy[ModeKernel] + c.Busy[ModeIRQ]
	if busy > end {
		t.Errorf("busy %v > elapsed %v: interrupt work and task work overlap", busy, end)
	}
}
