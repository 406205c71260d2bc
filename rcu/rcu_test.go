package rcu

import (
	"errors"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/sim"
)

type machine struct {
	e *sim.Engine
	r *RCU
}

func newMachine(t testing.TB, scfg sim.Config, rcfg Config) machine {
	t.Helper()
	e, err := sim.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(e, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	return machine{e, r}
}

// legacyUP is the 2009 machine: 1 CPU, no preemption, HZ=1000, tree RCU
// driven from the tick.
func legacyUP(t testing.TB) machine {
	return newMachine(t, sim.Config{HZ: 1000, CPUs: 1}, Config{FQSJiffies: 3})
}

// callbackTime queues a callback 300 µs into the first jiffy, sleeps a
// jiffy at a time until it has run, and returns when it ran.
func callbackTime(t *testing.T, m machine) sim.Time {
	t.Helper()
	var ran sim.Time = -1
	m.e.Go("ndst", 0, false, func(tk *sim.Task) {
		tk.Charge(300 * sim.Microsecond)
		m.r.CallRCU(tk, func() { ran = m.e.Now() })
		for ran < 0 {
			tk.ScheduleTimeout(1)
		}
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	return ran
}

func TestCallbackNeedsTwoTicksOnLegacyUP(t *testing.T) {
	// The callback is queued mid-jiffy; the GP starts at the next tick, the
	// task's next context switch is the QS, and the tick after that reports
	// it, ends the GP and runs the callback.
	m := legacyUP(t)
	ran := callbackTime(t, m)
	if want := 2 * sim.Millisecond; ran != want {
		t.Errorf("callback ran at %v, want %v", ran, want)
	}
	if s := m.r.Stats(); s.GPsCompleted != 1 || s.CallbacksInvoked != 1 {
		t.Errorf("Stats() = %+v, want 1 GP and 1 callback", s)
	}
}

func TestSynchronizeIsANoopOnUPWithoutPreemptibleRCU(t *testing.T) {
	for _, tc := range []struct {
		name string
		cpus int
		pre  bool
		noop bool
	}{
		{"UP", 1, false, true},
		{"UP preemptible RCU", 1, true, false},
		{"SMP", 2, false, false},
	} {
		m := newMachine(t, sim.Config{HZ: 1000, CPUs: tc.cpus}, Config{Preemptible: tc.pre})
		var waited bool
		var took sim.Time
		m.e.Go("t", 0, false, func(tk *sim.Task) {
			start := tk.Now()
			m.r.Synchronize(tk)
			waited = m.r.SynchronizeExpedited(tk)
			took = tk.Now() - start
		})
		if err := m.e.Run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if waited == tc.noop || (took == 0) != tc.noop {
			t.Errorf("%s: expedited waited=%v, synchronize+expedited took %v; want no-op=%v", tc.name, waited, took, tc.noop)
		}
	}
}

func TestSpinnerStallsGracePeriodsUntilTheWatchdog(t *testing.T) {
	// The expedited loop of 2009: no sleep, no QS, callbacks never run.
	m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Watchdog: 5 * sim.Second}, Config{StallTimeout: 2 * sim.Second})
	var logged []string
	m.e.SetLogger(func(_ sim.Time, f string, _ ...any) { logged = append(logged, f) })
	ran := false
	m.e.Go("ndst", 0, false, func(tk *sim.Task) {
		m.r.CallRCU(tk, func() { ran = true })
		for !ran {
			if !m.r.SynchronizeExpedited(tk) {
				tk.Relax(sim.Microsecond)
			}
		}
	})
	err := m.e.Run()
	var le *sim.LockupError
	if !errors.As(err, &le) {
		t.Fatalf("Run() = %v, want a soft lockup", err)
	}
	if ran {
		t.Errorf("callback ran during a stalled grace period")
	}
	if m.r.Stats().Stalls != 1 || len(logged) != 2 || !strings.HasPrefix(logged[0], "INFO: rcu detected stall") ||
		!strings.HasPrefix(logged[1], "BUG: soft lockup") {
		t.Errorf("stall warnings = %d, log %q; want the RCU stall warning, then the soft lockup", m.r.Stats().Stalls, logged)
	}
}

func TestPreemptibleRCUEndsTheSpinnersGracePeriod(t *testing.T) {
	m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Preempt: sim.PreemptFull}, Config{Preemptible: true})
	ran := false
	m.e.Go("ndst", 0, false, func(tk *sim.Task) {
		m.r.CallRCU(tk, func() { ran = true })
		for !ran {
			tk.Relax(sim.Microsecond)
		}
	})
	if err := m.e.Run(); err != nil {
		t.Fatalf("Run() = %v, want the spinner to finish", err)
	}
}

func TestIdleSecondCPUWaitsForFQS(t *testing.T) {
	// With 2 CPUs the idle one can only be reported by an FQS scan, so the
	// GP lasts FQSJiffies longer than on one CPU.
	run := func(cpus int) sim.Time {
		return callbackTime(t, newMachine(t, sim.Config{HZ: 1000, CPUs: cpus}, Config{FQSJiffies: 3}))
	}
	up, smp := run(1), run(2)
	if smp <= up {
		t.Errorf("callback on 2 CPUs at %v, on 1 CPU at %v: want 2 CPUs slower", smp, up)
	}
	if want := 4 * sim.Millisecond; smp != want {
		t.Errorf("callback on 2 CPUs at %v, want %v (GP at 1ms, FQS at 4ms)", smp, want)
	}
}

func TestBarrierWaitsForEarlierCallbacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		cpus int
	}{
		{"legacy UP", Config{}, 1},
		{"legacy SMP", Config{}, 4},
		{"modern SMP", Config{GPKthread: true, BarrierSkipsIdle: true, CondReschedQS: true}, 4},
		{"tiny", Config{Flavor: Tiny}, 1},
	} {
		m := newMachine(t, sim.Config{HZ: 250, CPUs: tc.cpus}, tc.cfg)
		count := 0
		var seen int
		m.e.Go("t", 0, false, func(tk *sim.Task) {
			for range 5 {
				m.r.CallRCU(tk, func() { count++ })
			}
			m.r.Barrier(tk)
			seen = count
		})
		if err := m.e.Run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if seen != 5 {
			t.Errorf("%s: after Barrier %d callbacks had run, want 5", tc.name, seen)
		}
	}
}

func TestModernBarrierWithNothingQueuedReturnsAtOnce(t *testing.T) {
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2}, Config{GPKthread: true, BarrierSkipsIdle: true})
	var took sim.Time
	m.e.Go("t", 0, false, func(tk *sim.Task) {
		s := tk.Now()
		m.r.Barrier(tk)
		took = tk.Now() - s
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if took != 0 || m.r.Stats().BarrierNoops != 1 {
		t.Errorf("Barrier() with no callbacks took %v (noops %d), want 0 and 1", took, m.r.Stats().BarrierNoops)
	}
}

func TestBarrierInsideReaderPanics(t *testing.T) {
	m := legacyUP(t)
	m.e.Go("t", 0, false, func(tk *sim.Task) {
		m.r.ReadLock(tk)
		m.r.Barrier(tk)
	})
	err := m.e.Run()
	if err == nil {
		t.Fatal("Run() = nil, want the reader misuse reported")
	}
}

func TestGPKthreadRunsOnAnIdleCPU(t *testing.T) {
	// The GP kthread is unbound: while CPU 0 is busy in non-preemptible
	// kernel code, the GP its tick asks for is started on idle CPU 1. No
	// GP starts before that tick: call_rcu does not start one.
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2}, Config{GPKthread: true})
	var startedBeforeTick, startedWhileBusy bool
	m.e.Go("busy", 0, false, func(tk *sim.Task) {
		m.r.CallRCU(tk, func() {})
		tk.Charge(3 * sim.Millisecond)
		startedBeforeTick = m.r.Stats().GPsStarted > 0
		tk.Charge(2 * sim.Millisecond) // the tick at 4 ms
		startedWhileBusy = m.r.Stats().GPsStarted > 0
		m.r.Barrier(tk)
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if startedBeforeTick || !startedWhileBusy {
		t.Errorf("GP started before the tick: %v, after it while CPU 0 was busy: %v; want false, true", startedBeforeTick, startedWhileBusy)
	}
}
