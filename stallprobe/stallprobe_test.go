package stallprobe

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestResultFigures(t *testing.T) {
	r := &Result{CPUs: []CPU{
		{CPU: 0, SpunNS: 1_000_000_000, Stalls: 2, StalledNS: 300_000, Durations: []int64{100_000, 200_000}},
		{CPU: 1, SpunNS: 1_000_000_000, Stalls: 1, StalledNS: 700_000, Durations: []int64{700_000}},
	}}
	// 3 stalls in 2 s less 1 ms of stalls.
	if got, want := r.PerSecond(), 3/1.999; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("PerSecond = %g, want %g", got, want)
	}
	if got := r.StalledFraction(); got != 0.0005 {
		t.Errorf("StalledFraction = %g, want 0.0005", got)
	}
	if got, want := r.Groups(2), []int64{100_000, 450_000}; !slices.Equal(got, want) {
		t.Errorf("Groups(2) = %v, want %v", got, want)
	}
	if got, want := r.Groups(5), []int64{100_000, 200_000, 700_000}; !slices.Equal(got, want) {
		t.Errorf("Groups(5) of 3 stalls = %v, want %v", got, want)
	}
	if q := (&Result{CPUs: []CPU{{SpunNS: 1e9}}}).Groups(4); q != nil || (&Result{}).PerSecond() != 0 {
		t.Errorf("no stalls: groups %v", q)
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{{Windows: -1}, {Window: time.Second}, {Threshold: time.Nanosecond}, {Pause: -time.Millisecond}} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v): no error", o)
		}
	}
}

// TestProbeRuns probes this machine briefly: every CPU spins its windows,
// and what it counts adds up.
func TestProbeRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe is Linux only")
	}
	r, err := Run(context.Background(), Options{Windows: 2, Window: 10 * time.Millisecond, Pause: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	each, err := RunEach(context.Background(), Options{Windows: 2, Window: 10 * time.Millisecond, Pause: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(each.CPUs) != len(r.CPUs) {
		t.Errorf("RunEach probed %d CPUs, Run %d", len(each.CPUs), len(r.CPUs))
	}
	r.CPUs = append(r.CPUs, each.CPUs...)
	if len(r.CPUs) == 0 || r.Policy == "" {
		t.Fatalf("result %+v", r)
	}
	for _, c := range r.CPUs {
		if c.SpunNS < int64(20*time.Millisecond) || c.Stalls != len(c.Durations) || c.StalledNS > c.SpunNS {
			t.Errorf("CPU %d: spun %d ns, %d stalls (%d durations), %d ns stalled", c.CPU, c.SpunNS, c.Stalls, len(c.Durations), c.StalledNS)
		}
		for _, d := range c.Durations {
			if d <= r.ThresholdNS || d > c.MaxNS {
				t.Errorf("CPU %d: stall of %d ns, threshold %d, max %d", c.CPU, d, r.ThresholdNS, c.MaxNS)
			}
		}
	}
}

// TestWakeupsRun times a few wake-ups between this machine's CPUs.
func TestWakeupsRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe is Linux only")
	}
	if _, err := Wakeups(context.Background(), 0); err == nil {
		t.Errorf("Wakeups(0): no error")
	}
	ws, err := Wakeups(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.From == w.To || len(w.LatenciesNS) != 5 {
			t.Errorf("wake-ups %d -> %d: %d samples, want 5", w.From, w.To, len(w.LatenciesNS))
		}
		for _, l := range w.LatenciesNS {
			if l <= 0 || l > int64(time.Second) {
				t.Errorf("wake-up %d -> %d took %d ns", w.From, w.To, l)
			}
		}
		t.Logf("%d -> %d: %v ns", w.From, w.To, w.LatenciesNS)
	}
}

func TestTimerLatenessRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe is Linux only")
	}
	for _, n := range []int{0, MaxTimerSamples + 1} {
		if _, err := TimerLateness(context.Background(), n); err == nil {
			t.Errorf("TimerLateness(%d): no error", n)
		}
	}
	ts, err := TimerLateness(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) == 0 {
		t.Fatalf("%d CPUs probed", len(ts))
	}
	seen := map[int]bool{}
	for _, tm := range ts {
		if seen[tm.CPU] || len(tm.LatenessNS) != 20 {
			t.Errorf("CPU %d: probed twice, or %d samples, want 20", tm.CPU, len(tm.LatenessNS))
		}
		seen[tm.CPU] = true
		for _, l := range tm.LatenessNS {
			if l < 0 || l > int64(time.Second) {
				t.Errorf("CPU %d: a timer %d ns late", tm.CPU, l)
			}
		}
		s := slices.Sorted(slices.Values(tm.LatenessNS))
		t.Logf("CPU %d: lateness p50 %v, max %v", tm.CPU, time.Duration(s[len(s)/2]), time.Duration(s[len(s)-1]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := TimerLateness(ctx, 5); err == nil {
		t.Error("a cancelled context: no error")
	}
}

func TestGroupMeans(t *testing.T) {
	if g := GroupMeans(nil, 5); g != nil {
		t.Errorf("no samples: %v", g)
	}
	if g := GroupMeans([]int64{1, 2, 3, 4, 10, 20}, 3); !slices.Equal(g, []int64{1, 3, 15}) {
		t.Errorf("GroupMeans = %v, want [1 3 15]", g)
	}
}
