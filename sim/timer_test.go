package sim

import "testing"

func TestTimerWheelFiresWhereTheKernelLineDoes(t *testing.T) {
	tests := []struct {
		name   string
		wheel  TimerWheel
		hz     int
		sleep  int64 // jiffies, armed 1 ms into jiffy 0
		wantAt Time  // when the task runs again
	}{
		// Cascading wheel: the tick at which jiffies reaches the expiry.
		{"cascade 1", TimerCascade, 250, 1, 4 * Millisecond},
		{"cascade 63", TimerCascade, 250, 63, 63 * 4 * Millisecond},
		// Levels: level 0 rounds up by one jiffy.
		{"levels 1", TimerLevels, 250, 1, 2 * 4 * Millisecond},
		{"levels 62", TimerLevels, 250, 62, 63 * 4 * Millisecond},
		// A distance of 63 is level 1 (granularity 8): 63 -> 64.
		{"levels 63", TimerLevels, 250, 63, 64 * 4 * Millisecond},
		// 250 jiffies at HZ=1000 (msleep(250) without the extra jiffy):
		// level 1, the next multiple of 8 above 250.
		{"levels 250 at HZ=1000", TimerLevels, 1000, 250, 256 * Millisecond},
		// 504 jiffies is level 2 (granularity 64): 504 -> 512.
		{"levels 504", TimerLevels, 1000, 504, 512 * Millisecond},
	}
	for _, tc := range tests {
		e := newTestEngine(t, Config{HZ: tc.hz, CPUs: 1, Timers: tc.wheel, Watchdog: -1})
		var woke Time
		e.Go("t", 0, false, func(tk *Task) {
			tk.Charge(Millisecond)
			tk.ScheduleTimeout(tc.sleep)
			woke = tk.Now()
		})
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if woke != tc.wantAt {
			t.Errorf("%s: ScheduleTimeout(%d) woke at %v, want %v", tc.name, tc.sleep, woke, tc.wantAt)
		}
	}
}

func TestMsleepJiffiesByKernelLine(t *testing.T) {
	for _, tc := range []struct {
		exact bool
		want  Time
	}{{false, 72 * 4 * Millisecond}, {true, 64 * 4 * Millisecond}} {
		// HZ=250: msleep(250) is 63 jiffies (64 before 6.13), both on
		// level 1 of the wheel (granularity 8): buckets end at 64 and 72.
		e := newTestEngine(t, Config{HZ: 250, CPUs: 1, Timers: TimerLevels, MsleepExact: tc.exact, Watchdog: -1})
		var woke Time
		e.Go("t", 0, false, func(tk *Task) {
			tk.Charge(Millisecond)
			tk.Msleep(250)
			woke = tk.Now()
		})
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if woke != tc.want {
			t.Errorf("MsleepExact=%v: Msleep(250) woke at %v, want %v", tc.exact, woke, tc.want)
		}
	}
}
