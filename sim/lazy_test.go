package sim

import "testing"

// lazyRun runs a kernel-mode spinner on one CPU at HZ=250 and wakes a
// waiter at 1 ms; it returns when the waiter ran. userAt > 0 makes the
// spinner return to user mode then.
func lazyRun(t *testing.T, cfg Config, rtWaiter bool, userAt Time) Time {
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
	if rtWaiter {
		w.SetRT()
	}
	e.Go("spinner", 0, true, func(tk *Task) {
		if userAt > 0 {
			tk.Charge(userAt)
			tk.SetMode(ModeUser)
		}
		tk.Charge(Second)
	})
	e.At(Millisecond, func() { woken = true; wq.WakeAll() })
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return ranAt
}

func TestLazyWakeupWaitsForTheNextTick(t *testing.T) {
	near := func(got, want Time) bool { return got >= want && got <= want+100*Microsecond }
	cases := []struct {
		name   string
		cfg    Config
		rt     bool
		userAt Time
		want   Time
	}{
		{"full: at once", Config{Preempt: PreemptFull}, false, 0, Millisecond},
		{"lazy: at the tick that upgrades the flag", Config{Preempt: PreemptLazy}, false, 0, 4 * Millisecond},
		{"lazy: a real-time wakeup at once", Config{Preempt: PreemptLazy}, true, 0, Millisecond},
		{"lazy: at the return to user mode", Config{Preempt: PreemptLazy}, false, 2 * Millisecond, 2 * Millisecond},
		{"rt in lazy mode: an ordinary wakeup at the tick", Config{Preempt: PreemptRT, RTLazy: true}, false, 0, 4 * Millisecond},
		{"rt in full mode: at once", Config{Preempt: PreemptRT}, false, 0, Millisecond},
		{"lazy with HRTICK: at the end of the spinner's slice", Config{Preempt: PreemptLazy, HRTick: true}, false, 0, tickSlice + Millisecond},
	}
	for _, c := range cases {
		if got := lazyRun(t, c.cfg, c.rt, c.userAt); !near(got, c.want) {
			t.Errorf("%s: the woken task ran at %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRTLazyNeedsPreemptRT(t *testing.T) {
	if _, err := New(Config{HZ: 250, CPUs: 1, Preempt: PreemptFull, RTLazy: true}); err == nil {
		t.Error("RTLazy on a kernel that is not PREEMPT_RT was accepted")
	}
	if p, err := ParsePreempt("lazy"); err != nil || p != PreemptLazy || !p.Preemptive() || p.String() != "lazy" {
		t.Errorf("ParsePreempt(lazy) = %v, %v", p, err)
	}
}
