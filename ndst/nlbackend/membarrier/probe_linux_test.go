package membarrier

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestProbe: n calls, each ending after it starts, on the monotonic clock;
// GOMAXPROCS restored; a cancelled context stops it before the next call.
func TestProbe(t *testing.T) {
	if _, err := Global(); err != nil {
		t.Skipf("membarrier(GLOBAL) is not usable here: %v", err)
	}
	procs := runtime.GOMAXPROCS(0)
	before := rawMonotonic()
	starts, ends, err := Probe(context.Background(), 5, func() time.Duration { return time.Millisecond })
	if err != nil || len(starts) != 5 || len(ends) != 5 {
		t.Fatalf("Probe(5) = %d starts, %d ends, %v", len(starts), len(ends), err)
	}
	for i := range starts {
		if starts[i] < before || ends[i] <= starts[i] || (i > 0 && starts[i] < ends[i-1]+int64(time.Millisecond)) {
			t.Errorf("call %d: %d..%d (probe began at %d, the call before ended at %d, then a 1 ms pause)", i, starts[i], ends[i], before, ends[max(i-1, 0)])
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS after Probe = %d, was %d", got, procs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	starts, _, err = Probe(ctx, 100, func() time.Duration {
		if calls++; calls == 3 {
			cancel()
		}
		return 0
	})
	if err != context.Canceled || len(starts) != 3 {
		t.Errorf("Probe cancelled before its 4th call = %d calls, %v; want 3, context.Canceled", len(starts), err)
	}
}

// BenchmarkProbeAgainstNaive times grace periods with Probe and with a
// naive loop (time.Sleep and ordinary system calls) interleaved, and reports
// both medians: the naive loop's are the Go runtime's observer effect
// (Probe's doc).
func BenchmarkProbeAgainstNaive(b *testing.B) {
	call, err := Global()
	if err != nil {
		b.Skipf("membarrier(GLOBAL) is not usable here: %v", err)
	}
	pause := func() time.Duration { return time.Duration(rand.Int64N(int64(8 * time.Millisecond))) }
	var quiet, naive []int64
	for b.Loop() {
		starts, ends, err := Probe(context.Background(), 50, pause)
		if err != nil {
			b.Fatal(err)
		}
		for i := range starts {
			quiet = append(quiet, ends[i]-starts[i])
		}
		for range 50 {
			time.Sleep(pause())
			t0 := time.Now()
			if err := call(); err != nil {
				b.Fatal(err)
			}
			naive = append(naive, int64(time.Since(t0)))
		}
	}
	p50 := func(s []int64) float64 { slices.Sort(s); return float64(s[len(s)/2]) / 1e6 }
	b.ReportMetric(p50(quiet), "probe-p50-ms")
	b.ReportMetric(p50(naive), "naive-p50-ms")
}
