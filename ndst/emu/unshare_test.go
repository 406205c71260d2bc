package emu

import (
	"context"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// TestUnshareDrains: every namespace made is freed, the backlog ends at
// zero, and its peak is at most the count.
func TestUnshareDrains(t *testing.T) {
	for _, line := range []string{"2.6.32", "5.10", "6.18"} {
		c := hostConfig(t, "")
		c.Profile = line
		b := open(t, c)
		res, err := b.Unshare(context.Background(), ndst.UnshareRequest{Count: 300, Parallel: 8, LoUp: true, Veth: true})
		if err != nil {
			t.Fatalf("%s: Unshare = %v", line, err)
		}
		u := res.Unshare
		if res.Count != 300 || u.DrainedNS == nil || *u.DrainedNS < u.ExitedNS || u.ExitedNS < u.CreatedNS {
			t.Fatalf("%s: Unshare = count %d, %+v; want 300 made, created <= exited <= drained", line, res.Count, u)
		}
		last := u.Backlog[len(u.Backlog)-1]
		if last.Waiting != 0 || last.Live != 0 || u.PeakWaiting < 1 || u.PeakWaiting > 300 {
			t.Errorf("%s: backlog ends at %+v, peak %d; want 0 waiting, 0 live, a peak in 1..300", line, last, u.PeakWaiting)
		}
		sum := 0
		for _, n := range u.BatchSizes {
			sum += n
		}
		if sum != 300 {
			t.Errorf("%s: cleanup runs took %d namespaces, want 300", line, sum)
		}
		if waited := *u.CreatesWaited; (line == "2.6.32") != (waited > 0) {
			t.Errorf("%s: %d creations waited for the cleanup; want some only where net_mutex is shared (2.6.32)", line, waited)
		}
		if b.Devices() != 0 {
			t.Errorf("%s: %d devices left in the initial namespace after the veth pairs' cleanup", line, b.Devices())
		}
	}
}

// BenchmarkUnshare10kParallel40: 10,000 namespaces by 40 workers on the
// emulated 6.18 host (target: under 2 s of wall time).
func BenchmarkUnshare10kParallel40(b *testing.B) {
	for b.Loop() {
		be := open(b, hostConfig(b, ""))
		res, err := be.Unshare(context.Background(), ndst.UnshareRequest{Count: 10000, Parallel: 40})
		if err != nil || res.Count != 10000 {
			b.Fatalf("Unshare = %+v, %v", res, err)
		}
		b.ReportMetric(float64(res.WallNS)/1e9, "wall-s")
		b.ReportMetric(float64(*res.Unshare.DrainedNS)/1e9, "virtual-s")
	}
}
