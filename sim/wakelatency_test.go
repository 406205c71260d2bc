package sim

import "testing"

// A task woken onto another, idle CPU starts Config.WakeLatency (and a
// context switch) after the wake-up; one woken by its own CPU's tick pays
// no latency.
func TestWakeLatencyOfARemoteWakeUp(t *testing.T) {
	for _, lat := range []Time{0, 65 * Microsecond} {
		e := newTestEngine(t, Config{HZ: 1000, CPUs: 2, WakeLatency: lat})
		var q WaitQueue
		ready := false
		var woken, ranAt, localAt Time
		e.Go("sleeper", 0, false, func(tk *Task) {
			q.Wait(tk, func() bool { return ready })
			ranAt = tk.Now()
			tk.ScheduleTimeout(1) // woken by CPU 0's own timer
			localAt = tk.Now()
		})
		e.Go("waker", 1, false, func(tk *Task) {
			tk.Charge(300 * Microsecond)
			ready, woken = true, tk.Now()
			q.WakeAll()
		})
		if err := e.Run(); err != nil {
			t.Fatalf("Run() = %v", err)
		}
		if got := ranAt - woken; got != lat {
			t.Errorf("WakeLatency %v: the remote wake-up ran %v after it, want %v", lat, got, lat)
		}
		// The local wake-up comes from CPU 0's own tick at 1 ms (one
		// jiffy from 0.3 ms plus the latency) and runs at once.
		if want := 1 * Millisecond; localAt != want {
			t.Errorf("WakeLatency %v: the local wake-up ran at %v, want %v (no latency)", lat, localAt, want)
		}
	}
}
