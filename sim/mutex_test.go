package sim

import "testing"

// A task that takes the mutex again at once, while the waiter it woke is
// still on its way to the other CPU, passes the waiter over: every time
// without hand-off (2.6.3x), once with it (4.10 on), never under
// PREEMPT_RT's rt_mutex, where an equal cannot take it from a waiter.
func TestMutexPassOverAndHandoff(t *testing.T) {
	const hold, rounds = 100 * Microsecond, 20
	for _, c := range []struct {
		name string
		cfg  Config
		// wantAt is when the waiter gets the mutex: the unlock that wakes
		// it, then the remote wake-up's latency (10 µs); the hog's rounds
		// are 100 µs holds 1 µs apart.
		wantAt  Time
		wantHog int // the hog's rounds done by then
	}{
		{"no hand-off: passed over every time", Config{HZ: 1000, CPUs: 2, WakeLatency: 10 * Microsecond}, rounds*hold + 19*Microsecond + 10*Microsecond, rounds},
		{"hand-off: passed over once", Config{HZ: 1000, CPUs: 2, WakeLatency: 10 * Microsecond, MutexHandoff: true}, 2*hold + Microsecond + 10*Microsecond, 2},
		{"rt_mutex: never passed over by an equal", Config{HZ: 1000, CPUs: 2, WakeLatency: 10 * Microsecond, Preempt: PreemptRT}, hold + 10*Microsecond, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEngine(t, c.cfg)
			var m Mutex
			var gotAt Time
			done, hogAt := 0, 0
			e.Go("hog", 0, false, func(tk *Task) {
				for range rounds {
					m.Lock(tk)
					tk.Charge(hold)
					m.Unlock(tk)
					done++
					tk.Charge(Microsecond)
				}
			})
			e.Go("waiter", 1, false, func(tk *Task) {
				tk.Charge(hold / 2) // arrives while the hog holds it
				m.Lock(tk)
				gotAt, hogAt = tk.Now(), done
				tk.Charge(hold)
				m.Unlock(tk)
			})
			if err := e.Run(); err != nil {
				t.Fatalf("Run() = %v", err)
			}
			if gotAt != c.wantAt || hogAt != c.wantHog {
				t.Errorf("the waiter got the mutex at %v after %d of the hog's rounds, want %v after %d", gotAt, hogAt, c.wantAt, c.wantHog)
			}
			if m.Held() || m.Waiters() != 0 {
				t.Errorf("at the end the mutex is held %v with %d waiters, want free with none", m.Held(), m.Waiters())
			}
		})
	}
}
