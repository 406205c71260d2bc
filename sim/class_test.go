package sim

import "testing"

// classRun runs a spinner (1 s of kernel work, real-time at spinPrio when
// spinPrio > 0) on one CPU at HZ=250 and wakes a waiter (real-time at
// waitPrio when > 0) at 1 ms; it returns when the waiter ran.
func classRun(t *testing.T, cfg Config, spinPrio, waitPrio int) Time {
	t.Helper()
	cfg.HZ, cfg.CPUs, cfg.Watchdog = 250, 1, -1
	e := newTestEngine(t, cfg)
	var wq WaitQueue
	woken := false
	var ranAt Time = -1
	w := e.Go("waiter", 0, false, func(tk *Task) {
		wq.Wait(tk, func() bool { return woken })
		ranAt = tk.Now()
	})
	if waitPrio > 0 {
		w.setRT(waitPrio)
	}
	s := e.Go("spinner", 0, true, func(tk *Task) { tk.Charge(Second) })
	if spinPrio > 0 {
		s.setRT(spinPrio)
	}
	e.At(Millisecond, func() { woken = true; wq.WakeAll() })
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return ranAt
}

func TestWakeupPreemptionFollowsTheClasses(t *testing.T) {
	near := func(got, want Time) bool { return got >= want && got <= want+100*Microsecond }
	models := []struct {
		name string
		cfg  Config
	}{
		{"full", Config{Preempt: PreemptFull}},
		{"rt", Config{Preempt: PreemptRT}},
		{"lazy", Config{Preempt: PreemptLazy}},
		{"rt in lazy mode", Config{Preempt: PreemptRT, RTLazy: true}},
	}
	cases := []struct {
		name               string
		spinPrio, waitPrio int
		want               Time
	}{
		{"a real-time wakeup preempts an ordinary task at once", 0, PrioFIFOLow, Millisecond},
		{"an ordinary wakeup waits for the real-time task", PrioFIFOLow, 0, Second},
		{"a real-time wakeup waits for its equal", PrioFIFOLow, PrioFIFOLow, Second},
		{"a higher real-time wakeup preempts at once", PrioFIFOLow, PrioWatchdog, Millisecond},
		{"a lower real-time wakeup waits", PrioWatchdog, PrioFIFOLow, Second},
	}
	for _, m := range models {
		for _, c := range cases {
			if got := classRun(t, m.cfg, c.spinPrio, c.waitPrio); !near(got, c.want) {
				t.Errorf("%s: %s: the woken task ran at %v, want %v", m.name, c.name, got, c.want)
			}
		}
	}
}

// A reschedule asked of a real-time task (a hook's resched_cpu, the slice
// timer) while only ordinary tasks wait picks it again: it keeps the CPU.
func TestReschedOfARealTimeTaskKeepsIt(t *testing.T) {
	cfg := Config{HZ: 250, CPUs: 1, Watchdog: -1, Preempt: PreemptRT}
	e := newTestEngine(t, cfg)
	var order []string
	s := e.Go("rt", 0, true, func(tk *Task) {
		tk.Charge(Millisecond)
		tk.CPU().SetNeedResched()
		tk.CondResched()
		tk.Charge(Millisecond)
		order = append(order, "rt")
	})
	s.setRT(PrioFIFOLow)
	e.Go("fair", 0, false, func(tk *Task) { order = append(order, "fair") })
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "rt" {
		t.Errorf("ran in order %v, want the real-time task first", order)
	}
}
