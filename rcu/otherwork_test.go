package rcu

import (
	"testing"

	"github.com/ndst-project/ndst/sim"
)

// otherWorkRun runs ten rcu_barrier() calls, each after a sleep of d/10,
// on a 2-CPU machine whose other work queues rate callbacks a CPU a
// second, and returns the stats and the barriers' total time.
func otherWorkRun(t *testing.T, rate float64, d sim.Time) (Stats, sim.Time) {
	cfg := modern
	cfg.OtherWork = rate
	m := newMachine(t, sim.Config{HZ: 250, CPUs: 2, Seed: 7}, cfg)
	var barrier sim.Time
	m.e.Go("caller", 0, false, func(tk *sim.Task) {
		for range 10 {
			tk.Nanosleep(d / 10)
			s := tk.Now()
			m.r.Barrier(tk)
			barrier += tk.Now() - s
		}
	})
	if err := m.e.Run(); err != nil {
		t.Fatalf("rate %g: %v", rate, err)
	}
	return m.r.Stats(), barrier
}

// The other work's callbacks arrive at their rate on every CPU, the same
// ones for the same seed, keep no run going, and an rcu_barrier() waits
// for them as for any: without them it finds nothing and returns at once.
func TestOtherWorkCallbacks(t *testing.T) {
	st, b := otherWorkRun(t, 0, 2*sim.Second)
	if st.CallbacksQueued != 0 || st.BarrierNoops != 10 || b != 0 {
		t.Errorf("no other work: %d callbacks queued, %d no-op barriers, barriers %v; want 0, 10, 0", st.CallbacksQueued, st.BarrierNoops, b)
	}
	st, b = otherWorkRun(t, 50, 2*sim.Second)
	if n := st.CallbacksQueued; n < 150 || n > 250 {
		t.Errorf("50 a CPU a second on 2 CPUs for 2 s: %d callbacks queued, want about 200", n)
	}
	if st.GPsCompleted == 0 || st.BarrierNoops > 5 || b < 10*sim.Millisecond {
		t.Errorf("with other work: %d GPs, %d of 10 barriers found nothing, together %v; want GPs and barriers that wait", st.GPsCompleted, st.BarrierNoops, b)
	}
	st2, b2 := otherWorkRun(t, 50, 2*sim.Second)
	if st2 != st || b2 != b {
		t.Errorf("the same seed gave %+v, %v and %+v, %v", st, b, st2, b2)
	}
}

// A rate outside 0..MaxOtherWork is refused.
func TestOtherWorkBounds(t *testing.T) {
	for _, r := range []float64{-1, MaxOtherWork + 1} {
		e, err := sim.New(sim.Config{HZ: 250, CPUs: 2})
		if err != nil {
			t.Fatal(err)
		}
		cfg := modern
		cfg.OtherWork = r
		if _, err := New(e, cfg); err == nil {
			t.Errorf("OtherWork %g accepted", r)
		}
	}
}
