package sim

import "testing"

func lateCfg(seed uint64, l []Time) Config {
	return Config{HZ: 250, CPUs: 1, Seed: seed, Watchdog: -1, TickLateness: l}
}

// ticksOf runs a task busy for d on a machine with cfg and returns the ticks.
func ticksOf(t *testing.T, cfg Config, d Time) []Time {
	t.Helper()
	e := newTestEngine(t, cfg)
	log := &tickLog{}
	e.AddHooks(log)
	e.Go("t", 0, false, func(tk *Task) { tk.Charge(d) })
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return log.at
}

func TestLateTicksComeLateAndMissedOnesMerge(t *testing.T) {
	period := 4 * Millisecond
	l := []Time{0, 0, 500 * Microsecond, 1500 * Microsecond, 5 * Millisecond}
	at := ticksOf(t, lateCfg(3, l), 2*Second)
	onGrid, late, merged := 0, 0, 0
	for i, x := range at {
		switch off := x % period; {
		case off == 0:
			onGrid++
		case off == 500*Microsecond || off == 1500*Microsecond || off == 1*Millisecond:
			late++ // 5 ms late is the next period's jiffy plus 1 ms
		default:
			t.Errorf("tick %d at %v: %v after its jiffy, not one of the lateness draws", i, x, off)
		}
		if i > 0 {
			if x-at[i-1] > period+5*Millisecond {
				t.Errorf("ticks %d and %d are %v apart: more than a period and the largest lateness", i-1, i, x-at[i-1])
			}
			if x/period == at[i-1]/period {
				t.Errorf("ticks %d and %d fall in one jiffy (%v, %v): a tick later than the next period must be one tick", i-1, i, at[i-1], x)
			}
			if x/period-at[i-1]/period > 1 {
				merged++
			}
		}
	}
	if onGrid == 0 || late == 0 || merged == 0 {
		t.Errorf("%d ticks: %d on the grid, %d late, %d gaps over a period: want some of each", len(at), onGrid, late, merged)
	}
	// About 2/5 on time: 500 periods, about 200 of them (the 5 ms draws
	// take two periods each, so fewer ticks than periods).
	if onGrid < 120 || onGrid > 260 {
		t.Errorf("%d of %d ticks on time, want about 2 in 5", onGrid, len(at))
	}
}

func TestLateTicksAreSeeded(t *testing.T) {
	l := []Time{0, 300 * Microsecond, 2 * Millisecond}
	a := ticksOf(t, lateCfg(9, l), Second)
	b := ticksOf(t, lateCfg(9, l), Second)
	c := ticksOf(t, lateCfg(10, l), Second)
	if len(a) != len(b) {
		t.Fatalf("same seed, %d and %d ticks", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, tick %d at %v and %v", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Error("seeds 9 and 10 gave the same ticks")
	}
}

func TestNoTickLatenessIsTheGrid(t *testing.T) {
	for _, l := range [][]Time{nil, {0}, {0, 0, 0}} {
		at := ticksOf(t, lateCfg(1, l), Second)
		for i, x := range at {
			if x%(4*Millisecond) != 0 {
				t.Fatalf("lateness %v: tick %d at %v, off the grid", l, i, x)
			}
		}
		if len(at) < 249 || len(at) > 251 {
			t.Errorf("lateness %v: %d ticks in a second at HZ=250", l, len(at))
		}
	}
}

func TestTickLatenessValidate(t *testing.T) {
	for _, l := range [][]Time{{-1}, {2 * Second}, {2 * Millisecond, Millisecond}} {
		if err := lateCfg(1, l).Validate(); err == nil {
			t.Errorf("lateness %v accepted", l)
		}
	}
	if err := lateCfg(1, []Time{0, Millisecond, Second}).Validate(); err != nil {
		t.Errorf("a valid lateness refused: %v", err)
	}
}
