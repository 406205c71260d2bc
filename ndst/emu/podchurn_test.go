package emu

import (
	"context"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

// BenchmarkPodChurn100For600s: pods at 100 a second for 600 s of virtual
// time on the emulated 6.18 host (target: under 5 s of wall time).
func BenchmarkPodChurn100For600s(b *testing.B) {
	for b.Loop() {
		be := open(b, hostConfig(b, ""))
		res, err := be.PodChurn(context.Background(), ndst.PodChurnRequest{Rate: 100, For: 600 * time.Second})
		if err != nil || res.Churn.Created != 60000 {
			b.Fatalf("PodChurn = %+v, %v", res, err)
		}
		b.ReportMetric(float64(res.WallNS)/1e9, "wall-s")
	}
}
