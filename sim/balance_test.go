package sim

import "testing"

// A CPU going idle takes an unbound ordinary task queued behind a
// non-preemptible one on the other CPU; a task bound to that CPU, or a
// real-time one, stays and waits for it.
func TestNewidleBalancePullsOnlyUnboundOrdinary(t *testing.T) {
	for _, c := range []struct {
		name     string
		unbound  bool
		rt       bool
		wantAt   Time
		wantPull int64
	}{
		{"unbound: pulled when CPU 1 goes idle", true, false, 2 * Millisecond, 1},
		{"bound: waits for CPU 0", false, false, 10 * Millisecond, 0},
		{"unbound real-time: waits for CPU 0", true, true, 10 * Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEngine(t, Config{HZ: 1000, CPUs: 2, Watchdog: -1})
			var q WaitQueue
			ready := false
			var ranAt Time
			var ranOn int
			w := e.Go("waiting", 0, false, func(tk *Task) {
				q.Wait(tk, func() bool { return ready })
				ranAt, ranOn = tk.Now(), tk.CPU().ID
			})
			if c.unbound {
				w.SetUnbound()
			}
			if c.rt {
				w.SetRT()
			}
			e.Go("long", 0, false, func(tk *Task) {
				tk.Charge(Millisecond) // the waiting task has slept by now
				ready = true
				q.WakeAll() // both CPUs busy: it goes to CPU 0's queue
				tk.Charge(9 * Millisecond)
			})
			e.Go("short", 1, false, func(tk *Task) { tk.Charge(2 * Millisecond) })
			if err := e.Run(); err != nil {
				t.Fatalf("Run() = %v", err)
			}
			if ranAt != c.wantAt || e.Stats().NewidlePulls != c.wantPull {
				t.Errorf("the woken task ran at %v on CPU %d with %d pulls, want at %v with %d", ranAt, ranOn, e.Stats().NewidlePulls, c.wantAt, c.wantPull)
			}
		})
	}
}
