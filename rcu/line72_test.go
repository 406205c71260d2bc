package rcu

import (
	"fmt"
	"testing"

	"github.com/ndst-project/ndst/sim"
)

// rcu_gp_init's report of the GP kthread's own CPU (7.x): on one CPU the
// GP no longer waits for that CPU's next quiescent state, and the QS is
// counted as the GP init's.
func TestGPInitReportsTheKthreadsCPU(t *testing.T) {
	for _, cpus := range []int{1, 2} {
		scfg := sim.Config{HZ: 250, CPUs: cpus, Timers: sim.TimerLevels, Watchdog: -1}
		before := newMachine(t, scfg, modern)
		tb := callbackTime(t, before)
		cfg := modern
		cfg.GPInitSelfQS = true
		after := newMachine(t, scfg, cfg)
		ta := callbackTime(t, after)
		// One CPU: the GP ends as it starts (J+1) instead of at the idle
		// tick (J+2), a jiffy earlier. Two: the other CPU's report comes
		// later still, so the end of the GP is where it was.
		want := tb
		if cpus == 1 {
			want = tb - 4*sim.Millisecond
		}
		if ta != want {
			t.Errorf("%d CPUs: callback at %v with the GP init's QS, %v without; want %v", cpus, ta, tb, want)
		}
		if n := after.r.Stats().QSBy[QSGPInit]; n != 1 {
			t.Errorf("%d CPUs: %d QS reported by the GP init, want 1", cpus, n)
		}
		if n := before.r.Stats().QSBy[QSGPInit]; n != 0 {
			t.Errorf("%d CPUs: %d QS reported by the GP init without GPInitSelfQS", cpus, n)
		}
	}
}

// rcu_normal_wake_from_gp's latch (7.x): with n callers in flight at once,
// the first latch-1 are queued on the wake-from-GP list, the latch-th sets
// the latch, and the rest take the callback wait until all are woken.
func TestWakeFromGPLatch(t *testing.T) {
	for _, tc := range []struct{ callers, latch, latched int }{
		{100, 64, 36}, {64, 64, 0}, {100, 0, 0},
	} {
		t.Run(fmt.Sprintf("%d callers, latch %d", tc.callers, tc.latch), func(t *testing.T) {
			cfg := modern
			cfg.WakeFromGP, cfg.WakeFromGPLatch = true, tc.latch
			m := newMachine(t, sim.Config{HZ: 250, CPUs: 2, Timers: sim.TimerLevels, Watchdog: -1}, cfg)
			done := 0
			for i := range tc.callers {
				m.e.Go(fmt.Sprintf("sync%d", i), i%2, false, func(tk *sim.Task) {
					m.r.Synchronize(tk)
					done++
				})
			}
			if err := m.e.Run(); err != nil {
				t.Fatal(err)
			}
			if done != tc.callers {
				t.Fatalf("%d of %d callers returned", done, tc.callers)
			}
			if got := m.r.Stats().WakeFromGPLatched; got != int64(tc.latched) {
				t.Errorf("%d callers sent to the callback wait, want %d", got, tc.latched)
			}
			if m.r.srInFlight != 0 || m.r.srLatched {
				t.Errorf("after the run: %d in flight, latched %v; want 0, false", m.r.srInFlight, m.r.srLatched)
			}
		})
	}
}
