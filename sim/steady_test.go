package sim

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// steadyHook is a hook whose tick counts, raises a softirq that counts, and
// from jiffy changeAt on also asks for a reschedule: it certifies the ticks
// before changeAt, and from it on only while need_resched is set already.
type steadyHook struct {
	ticks    []int64
	softirqs int64 // its softirq's runs
	changeAt int64
	refuse   bool // certify nothing
}

func (h *steadyHook) Tick(c *CPU, mode Mode) {
	h.ticks[c.ID]++
	c.RaiseSoftirq(SoftirqNetRx)
	if c.e.Jiffies() >= h.changeAt {
		c.SetNeedResched()
	}
}
func (h *steadyHook) ContextSwitch(*CPU)  {}
func (h *steadyHook) NeedsTick(*CPU) bool { return false }
func (h *steadyHook) SteadyTicks(c *CPU, mode Mode, first, most int64) int64 {
	switch {
	case h.refuse:
		return 0
	case first < h.changeAt:
		return min(most, h.changeAt-first)
	case c.NeedResched():
		return most
	}
	return 0
}
func (h *steadyHook) SkipTicks(c *CPU, mode Mode, first, n int64) {
	h.ticks[c.ID] += n
	h.softirqs += n
}

// steadyRun is everything a run leaves that the fast-forward could change.
type steadyRun struct {
	Err            string
	Now, Returned  Time
	Stats          Stats
	Busy           [][numModes]Time
	Switches, Idle []int64
	HookTicks      []int64
	Softirqs       int64
	Checks         int64
	Phases         []PhaseTime
	NextDraw       uint64
	Seq            uint64
}

// TestSteadyTicksAreTheTicksRun: whatever the machine, the spin's bounds,
// what else is due and when the run is interrupted, a spin that may skip
// its steady ticks ends exactly as one that runs them all, and skips some
// where nothing else is due.
func TestSteadyTicksAreTheTicksRun(t *testing.T) {
	var runs, skipping, stoppedWhileSkipping int
	// Most machines drawn leave a spin nothing to skip or end it early:
	// eight rounds of checks reach a few hundred that skip.
	for range 8 {
		rapid.Check(t, func(rt *rapid.T) {
			hz := rapid.SampledFrom([]int{100, 250, 1000}).Draw(rt, "hz")
			period := Second / Time(hz)
			cfg := Config{
				HZ:      hz,
				CPUs:    rapid.SampledFrom([]int{1, 1, 1, 2}).Draw(rt, "cpus"),
				Preempt: rapid.SampledFrom([]Preempt{PreemptNone, PreemptFull, PreemptLazy}).Draw(rt, "preempt"),
				HRTick:  rapid.Bool().Draw(rt, "hrtick"),
				Seed:    rapid.Uint64().Draw(rt, "seed"),
				Jitter:  rapid.SampledFrom([]float64{0, 0.05, 0.3}).Draw(rt, "jitter"),
				TickCost: rapid.SampledFrom([]Time{0, Microsecond, Microsecond, 50 * Microsecond, 50 * Microsecond,
					period * 6 / 10, period + Microsecond}).Draw(rt, "tickcost"),
				ContextSwitch: 2 * Microsecond,
				Watchdog:      rapid.SampledFrom([]Time{-1, 0, 5 * Second}).Draw(rt, "watchdog"),
				Lockup:        rapid.SampledFrom([]LockupDesign{LockupSampled, LockupTick}).Draw(rt, "lockup"),
			}
			relaxMin := rapid.SampledFrom([]Time{0, 100, 100, 10 * Microsecond, 10 * Microsecond, period / 2, 2 * period}).Draw(rt, "min")
			spinFor := Time(rapid.IntRange(1, 40_000).Draw(rt, "spinfor")) * Millisecond / 4
			readyAt := Time(rapid.IntRange(1, 40_000).Draw(rt, "ready")) * Millisecond / 4
			timerJiffy := int64(rapid.IntRange(-1, 4000).Draw(rt, "timer"))
			wakeAt := Time(rapid.IntRange(-3000, 10_000).Draw(rt, "wake")) * Millisecond
			user := rapid.Bool().Draw(rt, "user")
			// A tick that costs more than a jiffy leaves the task nothing: only
			// the interrupt ends such a run.
			stopAt := int64(rapid.IntRange(0, 30_000).Draw(rt, "stop"))
			if stopAt == 0 && cfg.TickCost > period/2 {
				stopAt = 100_000
			}
			hook := steadyHook{changeAt: int64(rapid.IntRange(0, 5000).Draw(rt, "change")), refuse: rapid.IntRange(0, 7).Draw(rt, "refuse") == 0}

			run := func(every bool) steadyRun {
				c := cfg
				c.EveryTick = every
				e, err := New(c)
				if err != nil {
					rt.Fatal(err)
				}
				h := hook
				h.ticks = make([]int64, c.CPUs)
				e.AddHooks(&h)
				var out steadyRun
				e.RegisterSoftirq(SoftirqNetRx, func(*CPU) { h.softirqs++ })
				ready := false
				e.At(readyAt, func() { ready = true })
				if timerJiffy >= 0 {
					e.CPU(0).AddTimer(timerJiffy, func() {})
				}
				if stopAt > 0 {
					e.SetInterrupt(func() error {
						if e.Stats().Events >= stopAt {
							return fmt.Errorf("stopped at %d events, %v", e.Stats().Events, e.Now())
						}
						return nil
					})
				}
				e.Go("spinner", 0, false, func(tk *Task) {
					if user {
						tk.SetMode(ModeUser)
					}
					tk.SetPhase("spin")
					tk.Charge(Millisecond)
					tk.RelaxUntilSteady(relaxMin, tk.Now()+spinFor, func() bool { out.Checks++; return ready },
						func(n int64) { out.Checks += n })
					out.Returned = tk.Now()
					tk.Charge(Millisecond)
					out.Phases = tk.Phases()
				})
				if wakeAt >= 0 {
					e.Go("waker", 0, false, func(tk *Task) {
						tk.SetMode(ModeUser)
						tk.Nanosleep(wakeAt)
						tk.Charge(Millisecond)
					})
				}
				if c.CPUs > 1 {
					e.Go("other", 1, false, func(tk *Task) {
						for range 20 {
							tk.Charge(3 * Millisecond)
							tk.ScheduleTimeout(7)
						}
					})
				}
				if err := e.Run(); err != nil {
					var le *LockupError
					if errors.As(err, &le) {
						out.Err = fmt.Sprintf("%+v", *le)
					} else {
						out.Err = err.Error()
					}
				}
				out.Now, out.Stats, out.HookTicks, out.Softirqs, out.Seq = e.Now(), e.Stats(), h.ticks, h.softirqs, e.seq
				for _, cpu := range e.CPUs() {
					out.Busy = append(out.Busy, cpu.Busy)
					out.Switches = append(out.Switches, cpu.Switches)
					out.Idle = append(out.Idle, cpu.IdleEntries)
				}
				out.NextDraw = e.Rand().Uint64()
				if !every && e.SkippedTicks() > 0 {
					skipping++
					if out.Err != "" && out.Returned == 0 {
						stoppedWhileSkipping++
					}
				}
				if !every {
					runs++
				}
				return out
			}
			fast, every := run(false), run(true)
			if !reflect.DeepEqual(fast, every) {
				rt.Fatalf("fast-forwarded:\n%+v\nevery tick:\n%+v", fast, every)
			}
		})
	}
	t.Logf("%d runs: %d skipped ticks, %d of them stopped inside the spin", runs, skipping, stoppedWhileSkipping)
	if skipping == 0 {
		t.Error("no run skipped a tick: the fast-forward was never exercised")
	}
}

// TestSteadySpinSkipsItsTicks: one CPU, a spin with nothing else due, a hook
// that certifies every tick: all but a few of its ticks are skipped.
func TestSteadySpinSkipsItsTicks(t *testing.T) {
	e := newTestEngine(t, Config{HZ: 1000, CPUs: 1, Jitter: 0.05, TickCost: 2 * Microsecond, Watchdog: -1})
	h := &steadyHook{ticks: make([]int64, 1), changeAt: 1 << 40}
	e.AddHooks(h)
	e.RegisterSoftirq(SoftirqNetRx, func(*CPU) {})
	e.Go("spinner", 0, false, func(tk *Task) {
		tk.RelaxUntilSteady(Microsecond, 10*Second, func() bool { return false }, func(int64) {})
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if s := e.SkippedTicks(); s < h.ticks[0]-10 || h.ticks[0] < 9990 {
		t.Errorf("SkippedTicks() = %d of %d ticks, want all but a few of the 10000", s, h.ticks[0])
	}
}
