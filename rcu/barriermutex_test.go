package rcu

import (
	"testing"

	"github.com/ndst-project/ndst/sim"
)

// Three rcu_barrier() calls: one that runs, and two made while it runs.
// On modern lines the two queue on the mutex and share the next barrier
// (one runs it, the other finds it done); on 2.6.3x each runs its own.
func TestConcurrentBarriersAreSerialised(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cfg          Config
		barriers     int64
		shared       int64
		lateTogether bool
	}{
		{"modern", modern, 2, 1, true},
		{"tree 2.6.3x", tree31, 3, 0, false},
	} {
		m := newMachine(t, sim.Config{HZ: 250, CPUs: 4}, tc.cfg)
		var firstDone sim.Time
		var lateDone [2]sim.Time
		m.e.Go("first", 0, false, func(tk *sim.Task) {
			m.r.CallRCU(tk, func() {})
			m.r.Barrier(tk)
			firstDone = tk.Now()
		})
		for i := range 2 {
			m.e.Go("late", 1+i, false, func(tk *sim.Task) {
				tk.ScheduleTimeout(1) // while the first one runs
				m.r.CallRCU(tk, func() {})
				m.r.Barrier(tk)
				lateDone[i] = tk.Now()
			})
		}
		if err := m.e.Run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		st := m.r.Stats()
		if st.Barriers != tc.barriers || st.BarrierShared != tc.shared {
			t.Errorf("%s: %d barriers run, %d shared; want %d, %d", tc.name, st.Barriers, st.BarrierShared, tc.barriers, tc.shared)
		}
		for i, d := range lateDone {
			if d <= firstDone {
				t.Errorf("%s: late barrier %d returned at %v, before the running one ended (%v)", tc.name, i, d, firstDone)
			}
		}
		if together := lateDone[0] == lateDone[1]; together != tc.lateTogether {
			t.Errorf("%s: the late barriers returned at %v and %v; together = %v, want %v", tc.name, lateDone[0], lateDone[1], together, tc.lateTogether)
		}
	}
}
