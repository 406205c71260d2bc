package sim

import "testing"

// tickLog records every tick and whether its CPU was stalled then.
type tickLog struct {
	at        []Time
	inStall   int
	keepTicks bool
}

func (l *tickLog) Tick(c *CPU, _ Mode) {
	l.at = append(l.at, c.e.now)
	if c.stalled() {
		l.inStall++
	}
}
func (l *tickLog) ContextSwitch(*CPU)  {}
func (l *tickLog) NeedsTick(*CPU) bool { return l.keepTicks }
func stallCfg(seed uint64, s Stalls) Config {
	return Config{HZ: 250, CPUs: 1, Seed: seed, Watchdog: -1, Stalls: s}
}

func TestStallsStretchWorkAndDelayTicks(t *testing.T) {
	s := Stalls{StallSet: StallSet{PerSecond: 200, Durations: []Time{100 * Microsecond, 1 * Millisecond, 6 * Millisecond}}}
	e := newTestEngine(t, stallCfg(7, s))
	log := &tickLog{}
	e.AddHooks(log)
	var end Time
	e.Go("t", 0, false, func(tk *Task) {
		tk.Charge(2 * Second)
		end = tk.Now()
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	c := e.CPU(0)
	if c.StallCount == 0 {
		t.Fatal("no stall in 2 s at 200 per second")
	}
	// The work takes its charge plus every stall that fell in it.
	if want := 2*Second + c.Stalled; end != want {
		t.Errorf("2 s of work ended at %v, want %v (%d stalls, %v stalled)", end, want, c.StallCount, c.Stalled)
	}
	if rate := float64(c.StallCount) / (end - c.Stalled).Seconds(); rate < 180 || rate > 220 {
		t.Errorf("%d stalls in %v of running time: %.0f per second, want about 200", c.StallCount, end-c.Stalled, rate)
	}
	if mean := c.Stalled / Time(c.StallCount); mean < 2*Millisecond || mean > 2700*Microsecond {
		t.Errorf("mean stall %v, want about 2.37 ms (the three lengths alike)", mean)
	}
	if log.inStall != 0 {
		t.Errorf("%d ticks ran inside a stall", log.inStall)
	}
	// A tick is on the jiffy grid unless a stall delayed it; a delayed
	// tick runs once for all the periods it missed: no jiffy has two.
	late := 0
	for i, at := range log.at {
		if at%e.Period() != 0 {
			late++
		}
		if i > 0 && e.JiffiesAt(at) == e.JiffiesAt(log.at[i-1]) {
			t.Errorf("two ticks in jiffy %d: at %v and %v", e.JiffiesAt(at), log.at[i-1], at)
		}
	}
	if late == 0 || len(log.at) >= int(end/e.Period()) {
		t.Errorf("%d ticks in %v, %d late: want some late and some lost", len(log.at), end, late)
	}

	// The same seed gives the same stalls; another seed others.
	again := newTestEngine(t, stallCfg(7, s))
	other := newTestEngine(t, stallCfg(8, s))
	for _, x := range []*Engine{again, other} {
		x.Go("t", 0, false, func(tk *Task) { tk.Charge(2 * Second) })
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if again.Now() != e.Now() || again.CPU(0).StallCount != c.StallCount {
		t.Errorf("seed 7 twice: ended at %v and %v", e.Now(), again.Now())
	}
	if other.Now() == e.Now() {
		t.Errorf("seeds 7 and 8 both end at %v", e.Now())
	}
}

func TestStallDelaysATimeoutWakeup(t *testing.T) {
	// One stall of 3 ms; a task sleeping one jiffy from 1 ms on a CPU
	// that stalls over the tick that would wake it (at 4 ms) runs when
	// the stall ends, not at 4 ms.
	for _, tc := range []struct {
		seed uint64
	}{{1}, {2}, {3}, {4}, {5}} {
		s := Stalls{StallSet: StallSet{PerSecond: 50, Durations: []Time{3 * Millisecond}}}
		e := newTestEngine(t, stallCfg(tc.seed, s))
		var woke []Time
		e.Go("t", 0, false, func(tk *Task) {
			tk.Charge(Millisecond)
			for range 200 {
				tk.ScheduleTimeout(1)
				woke = append(woke, tk.Now())
			}
		})
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		late := 0
		for _, w := range woke {
			if w%e.Period() != 0 {
				late++
			}
		}
		if c := e.CPU(0); c.StallCount > 0 && late == 0 {
			t.Errorf("seed %d: %d stalls, but every wake-up came on a tick", tc.seed, c.StallCount)
		}
	}
}

func TestStallsValidate(t *testing.T) {
	bad := []Stalls{
		{StallSet: StallSet{PerSecond: -1, Durations: []Time{Millisecond}}},
		{StallSet: StallSet{PerSecond: 1e6, Durations: []Time{Millisecond}}},
		{StallSet: StallSet{PerSecond: 10}},
		{StallSet: StallSet{PerSecond: 10, Durations: []Time{0}}},
		{StallSet: StallSet{PerSecond: 10, Durations: []Time{2 * Second}}},
		{StallSet: StallSet{PerSecond: 10, Durations: []Time{2 * Millisecond, Millisecond}}},
		{OneBusy: StallSet{PerSecond: 10}},
	}
	for _, s := range bad {
		if _, err := New(stallCfg(1, s)); err == nil {
			t.Errorf("New with stalls %+v: no error", s)
		}
	}
	if _, err := New(stallCfg(1, Stalls{})); err != nil {
		t.Errorf("no stalls: %v", err)
	}
}

func TestStallRateFollowsTheBusyCPUs(t *testing.T) {
	// Every CPU busy: 500 stalls per second; one at most: 20.
	s := Stalls{StallSet: StallSet{PerSecond: 500, Durations: []Time{100 * Microsecond}},
		OneBusy: StallSet{PerSecond: 20, Durations: []Time{100 * Microsecond}}}
	for _, tc := range []struct {
		busy     int
		lo, hi   int64 // stalls of CPU 0 in 2 s of its running time
		otherMax int64 // stalls of CPU 1
	}{{1, 20, 70, 70}, {2, 900, 1100, 1100}} {
		cfg := stallCfg(11, s)
		cfg.CPUs = 2
		e := newTestEngine(t, cfg)
		for i := range tc.busy {
			e.Go("t", i, false, func(tk *Task) { tk.Charge(2 * Second) })
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if n := e.CPU(0).StallCount; n < tc.lo || n > tc.hi || e.CPU(1).StallCount > tc.otherMax {
			t.Errorf("%d busy CPU(s): CPU 0 stalled %d times, CPU 1 %d; want %d to %d, and CPU 1 at most %d",
				tc.busy, n, e.CPU(1).StallCount, tc.lo, tc.hi, tc.otherMax)
		}
	}
}
