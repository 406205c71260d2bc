package rcu

import (
	"errors"
	"fmt"
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

// The configurations of the kernel lines, as the profiles set them.
var (
	classic31 = Config{Flavor: Classic, SyncUPShortcut: true, Expedited: ExpNone}
	tree31    = Config{Flavor: Tree, SyncUPShortcut: true, Expedited: ExpNone}
	tree32    = Config{Flavor: Tree, SyncUPShortcut: true, Expedited: ExpMigration}
	preempt32 = Config{Flavor: Tree, Preemptible: true, Expedited: ExpNormal}
	tiny33    = Config{Flavor: Tiny, Expedited: ExpCondResched}
	modern    = Config{Flavor: Tree, GPKthread: true, Preemptible: true, FQSFirst: 1, FQSNext: 1,
		Expedited: ExpIPI, Barrier: BarrierEntrain,
		Divisor: 7, ReschedTime: 3 * sim.Millisecond, BatchOnlyIfBusy: true}
	// modernNP is a modern kernel without PREEMPT_RCU (Debian 5.10):
	// cond_resched() calls rcu_all_qs.
	modernNP = Config{Flavor: Tree, GPKthread: true, FQSFirst: 1, FQSNext: 1,
		CondReschedQS: true, Expedited: ExpIPI, Barrier: BarrierEntrain, StallTimeout: 21 * sim.Second,
		Divisor: 7, ReschedTime: 3 * sim.Millisecond, BatchOnlyIfBusy: true, DivisorOfAll: true}
)

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

func TestCallbackTimingByImplementation(t *testing.T) {
	// One callback queued 300 µs into jiffy 0 by a task that then sleeps a
	// jiffy at a time, 1 CPU, HZ=1000.
	for _, tc := range []struct {
		name string
		cfg  Config
		want sim.Time
	}{
		// 2.6.31 Tree: call_rcu starts the GP; the sleep at 300 µs is the
		// QS; the tick at 1 ms reports it, ends the GP, advances the
		// callbacks of the reporting CPU and runs them.
		{"tree 2.6.3x", tree31, 1 * sim.Millisecond},
		// Classic: the batch starts at the 1 ms softirq, whose QS check
		// only notices it; the 2 ms softirq reports the QS (the idle tick)
		// and completes the batch; the 3 ms one moves the callback to the
		// done list and runs it.
		{"classic", classic31, 3 * sim.Millisecond},
		// Tiny: the sleep's context switch makes it ready and wakes
		// ksoftirqd, which runs it at once.
		{"tiny", tiny33, 300 * sim.Microsecond},
	} {
		m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Watchdog: -1}, tc.cfg)
		if got := callbackTime(t, m); got != tc.want {
			t.Errorf("%s: callback ran at %v, want %v", tc.name, got, tc.want)
		}
		if s := m.r.Stats(); s.CallbacksInvoked != 1 {
			t.Errorf("%s: Stats() = %+v, want 1 callback", tc.name, s)
		}
	}
}

func TestModernGPOnTwoCPUsWaitsForTheFQSTimer(t *testing.T) {
	// The SMP jiffy: at HZ=250 with the modern timer wheel, the tick's
	// softirq asks for the GP (J+1), the kthread starts it and sleeps
	// jiffies_till_first_fqs = 1, which fires at J+3; only that scan
	// reports the idle second CPU; the callback runs at the next tick of
	// its CPU (J+4). On one CPU the idle tick at J+2 ends the GP.
	for _, tc := range []struct {
		cpus int
		want sim.Time
	}{{1, 3 * 4 * sim.Millisecond}, {2, 4 * 4 * sim.Millisecond}} {
		m := newMachine(t, sim.Config{HZ: 250, CPUs: tc.cpus, Timers: sim.TimerLevels, Watchdog: -1}, modern)
		if got := callbackTime(t, m); got != tc.want {
			t.Errorf("%d CPUs: callback ran at %v, want %v", tc.cpus, got, tc.want)
		}
	}
}

func TestSynchronizeIsANoopOnUPWithoutPreemptibleRCU(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		cpus int
		noop bool
	}{
		{"UP 2.6.32", tree32, 1, true},
		{"UP preemptible 2.6.32", preempt32, 1, false},
		{"SMP 2.6.32", tree32, 2, false},
		{"UP modern", modern, 1, false},
	} {
		m := newMachine(t, sim.Config{HZ: 1000, CPUs: tc.cpus}, tc.cfg)
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
	cfg := tree32
	cfg.StallTimeout = 2 * sim.Second
	m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Watchdog: 5 * sim.Second}, cfg)
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
	if m.r.Stats().Stalls != 1 || len(logged) != 2 || !strings.HasPrefix(logged[0], "INFO: RCU detected CPU %d stall") ||
		!strings.HasPrefix(logged[1], "BUG: soft lockup") {
		t.Errorf("stall warnings = %d, log %q; want the RCU stall warning, then the soft lockup", m.r.Stats().Stalls, logged)
	}
}

func TestUPForceQuiescentStateAsksForAReschedule(t *testing.T) {
	// 2.6.3x Tree RCU on UP: once the GP is 3 jiffies old, every softirq's
	// force_quiescent_state sets need_resched; a spinner that reaches a
	// cond_resched() then passes through schedule(), which is the QS.
	m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Watchdog: -1}, tree32)
	var ranAt sim.Time = -1
	m.e.Go("ndst", 0, false, func(tk *sim.Task) {
		m.r.CallRCU(tk, func() { ranAt = m.e.Now() })
		for ranAt < 0 {
			tk.Charge(100 * sim.Microsecond)
			tk.CondResched()
		}
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if ranAt < 3*sim.Millisecond || ranAt > 6*sim.Millisecond || m.r.Stats().FQSResched == 0 {
		t.Errorf("callback ran at %v with %d FQS reschedules, want a few ms in, after FQS asked", ranAt, m.r.Stats().FQSResched)
	}
	// The spinner is the only task: its schedule() keeps the CPU, and that
	// pass is what the grace period is credited to.
	if by := m.r.Stats().QSBy; by[QSSchedule] == 0 || by[QSSwitch] != 0 || by[QSTickIdle] != 0 {
		t.Errorf("quiescent states by source = %v, want schedule() passes that kept the CPU only", by)
	}
}

func TestQuiescentStateSources(t *testing.T) {
	// A task that queues a callback and sleeps: its own switch to idle is
	// the QS of the GP the callback waits for. A spinner on a preemptible
	// kernel, with the GP kthread on the other CPU (so no switch on its
	// own), is credited to the tick outside a reader.
	for _, tc := range []struct {
		name  string
		cfg   Config
		cpus  int
		sleep bool
		want  QSSource
	}{
		{"tree 2.6.3x sleeper", tree31, 1, true, QSSwitch},
		{"classic sleeper", classic31, 1, true, QSSwitch},
		{"modern spinner, preemptible", modern, 2, false, QSTickPreempt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre := sim.PreemptNone
			if !tc.sleep {
				pre = sim.PreemptFull
			}
			m := newMachine(t, sim.Config{HZ: 1000, CPUs: tc.cpus, Preempt: pre, Watchdog: -1}, tc.cfg)
			ran := false
			m.e.Go("ndst", 0, false, func(tk *sim.Task) {
				m.r.CallRCU(tk, func() { ran = true })
				for !ran {
					if tc.sleep {
						tk.ScheduleTimeout(1)
					} else {
						tk.Relax(sim.Microsecond)
					}
				}
			})
			if err := m.e.Run(); err != nil {
				t.Fatal(err)
			}
			st := m.r.Stats()
			var sum int64
			for _, n := range st.QSBy {
				sum += n
			}
			if st.QSBy[tc.want] == 0 || sum != st.QSReports {
				t.Errorf("quiescent states by source = %v (reports %d), want %s among them and every report counted once", st.QSBy, st.QSReports, tc.want.Name())
			}
		})
	}
}

func TestPreemptibleRCUEndsTheSpinnersGracePeriod(t *testing.T) {
	for _, cfg := range []Config{preempt32, modern} {
		m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Preempt: sim.PreemptFull}, cfg)
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
}

func TestBarrierWaitsForEarlierCallbacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		cpus int
	}{
		{"classic UP", classic31, 1},
		{"classic SMP", classic31, 4},
		{"tree 2.6.3x UP", tree31, 1},
		{"tree 2.6.3x SMP", tree31, 4},
		{"modern SMP", modern, 4},
		{"tiny", tiny33, 1},
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
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2}, modern)
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
	m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1}, tree31)
	m.e.Go("t", 0, false, func(tk *sim.Task) {
		m.r.ReadLock(tk)
		m.r.Barrier(tk)
	})
	if err := m.e.Run(); err == nil {
		t.Fatal("Run() = nil, want the reader misuse reported")
	}
}

func TestGPKthreadRunsOnAnIdleCPU(t *testing.T) {
	// The GP kthread is unbound: while CPU 0 is busy in non-preemptible
	// kernel code, the GP its tick asks for is started on idle CPU 1. No
	// GP starts before that tick: call_rcu does not start one.
	cfg := modern
	cfg.Preemptible = false
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2}, cfg)
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

func TestCallRCUStartsAGPIn2_6Tree(t *testing.T) {
	m := newMachine(t, sim.Config{HZ: 1000, CPUs: 2}, tree31)
	var started bool
	m.e.Go("t", 0, false, func(tk *sim.Task) {
		m.r.CallRCU(tk, func() {})
		started = m.r.GPInProgress()
		m.r.Barrier(tk)
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if !started {
		t.Error("2.6.3x call_rcu did not start a grace period")
	}
}

func TestPreemptRTCoreInKthreadsAndNoExpedited(t *testing.T) {
	// PREEMPT_RT: rcu_normal turns synchronize_rcu_expedited into a normal
	// grace period, and rcu_core runs in rcuc/N: on one CPU at HZ=250 a
	// synchronize_rcu_expedited takes three ticks, as a normal GP does.
	cfg := modern
	cfg.CoreKthread, cfg.NormalOnly = true, true
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 1, Preempt: sim.PreemptRT, Timers: sim.TimerLevels, Watchdog: -1}, cfg)
	var took sim.Time
	m.e.Go("t", 0, false, func(tk *sim.Task) {
		start := tk.Now()
		m.r.SynchronizeExpedited(tk)
		took = tk.Now() - start
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if s := m.r.Stats(); s.GPsCompleted != 1 || took < 2*4*sim.Millisecond || took > 3*4*sim.Millisecond {
		t.Errorf("expedited on RT took %v with %d normal GPs; want one normal GP of 2-3 ticks", took, s.GPsCompleted)
	}
}

func TestCondReschedReportsOnlyWhenUrgent(t *testing.T) {
	// Modern Tree RCU, 2 CPUs, HZ=250: a kernel loop on CPU0 that calls
	// cond_resched() every 100 µs while CPU1 is idle. Without PREEMPT_RCU
	// the loop's ticks are no QS, and rcu_all_qs reports only once FQS has
	// flagged the CPU as urgent, past jiffies_to_sched_qs (25 jiffies) into the
	// GP; with PREEMPT_RCU cond_resched() reports nothing, and the tick
	// outside a reader does at once.
	for _, tc := range []struct {
		name            string
		cfg             Config
		minGP, maxGP    sim.Time
		urgent          bool
		want, wantNever QSSource
	}{
		{"!PREEMPT_RCU", modernNP, 100 * sim.Millisecond, 120 * sim.Millisecond, true, QSCondResched, QSTickPreempt},
		{"PREEMPT_RCU", modern, 0, 20 * sim.Millisecond, false, QSTickPreempt, QSCondResched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, sim.Config{HZ: 250, CPUs: 2, Watchdog: -1}, tc.cfg)
			var queued, ranAt sim.Time = 0, -1
			m.e.Go("loop", 0, false, func(tk *sim.Task) {
				tk.Charge(sim.Millisecond)
				queued = tk.Now()
				m.r.CallRCU(tk, func() { ranAt = m.e.Now() })
				for ranAt < 0 {
					tk.Charge(100 * sim.Microsecond)
					tk.CondResched()
				}
			})
			if err := m.e.Run(); err != nil {
				t.Fatal(err)
			}
			st := m.r.Stats()
			if d := ranAt - queued; d < tc.minGP || d > tc.maxGP {
				t.Errorf("callback ran %v after call_rcu, want %v..%v", d, tc.minGP, tc.maxGP)
			}
			if (st.UrgentQS > 0) != tc.urgent || st.QSBy[tc.want] == 0 || st.QSBy[tc.wantNever] != 0 {
				t.Errorf("urgent flags %d, QS by source %v; want urgent=%v, %s and no %s", st.UrgentQS, st.QSBy, tc.urgent, tc.want.Name(), tc.wantNever.Name())
			}
		})
	}
}

func TestFQSDoesNotCreditAContextSwitch(t *testing.T) {
	// The FQS scan credits a CPU only if it is idle or passed through idle
	// since the snapshot (the dynticks counter), not one whose tasks
	// merely switched: CPU1 switches between two tasks all the time and
	// never idles, so its QS must come from its own tick's rcu_core.
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2, Watchdog: -1}, modernNP)
	done := false
	for i := range 2 {
		m.e.Go(fmt.Sprintf("pingpong%d", i), 1, false, func(tk *sim.Task) {
			for !done {
				tk.Charge(300 * sim.Microsecond)
				tk.Schedule()
			}
		})
	}
	m.e.Go("ndst", 0, false, func(tk *sim.Task) {
		m.r.CallRCU(tk, func() { done = true })
		for !done {
			tk.ScheduleTimeout(1)
		}
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if st := m.r.Stats(); st.QSBy[QSFQSIdle] != 0 || st.QSBy[QSSwitch] == 0 {
		t.Errorf("QS by source %v: want CPU1 credited for its switches by itself, never by FQS", st.QSBy)
	}
}

func TestModernFloodStartsAGPOrForcesAScan(t *testing.T) {
	// call_rcu_core: more than qhimark (here 100) callbacks queued since the
	// last check start a GP at once when none runs (no waiting for the
	// tick), and during a GP raise the batch limit to 10000 and force an
	// FQS scan.
	cfg := modernNP
	cfg.QHiMark, cfg.QLowMark = 100, 10
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2, Watchdog: -1}, cfg)
	var startedAt sim.Time = -1
	var maxBlimit int
	m.e.Go("flood", 0, false, func(tk *sim.Task) {
		tk.Charge(sim.Millisecond)
		for range 101 {
			m.r.CallRCU(tk, func() {})
		}
		tk.Nanosleep(100 * sim.Microsecond) // the GP kthread runs on the idle CPU
		if m.r.GPInProgress() {
			startedAt = tk.Now()
			for range 101 {
				m.r.CallRCU(tk, func() {})
			}
			maxBlimit = m.r.cpus[0].blimit
		}
		for m.r.Pending() > 0 {
			tk.ScheduleTimeout(1)
		}
	})
	if err := m.e.Run(); err != nil {
		t.Fatal(err)
	}
	if startedAt < 0 || startedAt >= 4*sim.Millisecond || m.r.Stats().FQSScans == 0 {
		t.Errorf("a flood with no GP running started one at %v, want at once (before the 4 ms tick)", startedAt)
	}
	if maxBlimit != 10000 {
		t.Errorf("batch limit of the flooded CPU during a GP = %d, want 10000 (DEFAULT_MAX_RCU_BLIMIT)", maxBlimit)
	}
	if m.r.Pending() != 0 {
		t.Errorf("%d callbacks left", m.r.Pending())
	}
}

func TestTree2633StartsAnExtraGPAfterEachGPEnd(t *testing.T) {
	// 2.6.33's rcu_report_qs_rsp asks cpu_needs_another_gp before the
	// ending CPU's callbacks are advanced, so the callback that waited for
	// the GP still counts and one more GP starts; 2.6.32 advances first.
	for _, tc := range []struct {
		name string
		cfg  Config
		gps  int64
	}{
		{"2.6.32", tree32, 1},
		{"2.6.33", func() Config { c := tree32; c.GPEndBeforeAdvance = true; return c }(), 2},
	} {
		m := newMachine(t, sim.Config{HZ: 1000, CPUs: 1, Watchdog: -1}, tc.cfg)
		ran := false
		m.e.Go("ndst", 0, false, func(tk *sim.Task) {
			m.r.CallRCU(tk, func() { ran = true })
			for !ran {
				tk.ScheduleTimeout(1)
			}
			tk.ScheduleTimeout(5) // idle ticks end whatever GP is left
		})
		if err := m.e.Run(); err != nil {
			t.Fatal(err)
		}
		if st := m.r.Stats(); st.GPsStarted != tc.gps || st.GPsCompleted != tc.gps {
			t.Errorf("%s: GPs started %d, completed %d; want %d", tc.name, st.GPsStarted, st.GPsCompleted, tc.gps)
		}
	}
}
