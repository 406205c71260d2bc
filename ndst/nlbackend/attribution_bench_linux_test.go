package nlbackend

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// BenchmarkAttribution measures, in one run, what --attribute costs and what
// it shows (see scripts/attribution.sh):
//
//	attribute_overhead  one-by-one Del with sampling / without   (want < 1.05)
//
// Each of NDST_BENCH_ROUNDS rounds (default 5) adds NDST_BENCH_N ifbs
// (default 100) and deletes them one by one, once with and once without
// sampling, in alternating order; the ratio is of the medians of the Del
// wall times. It then prints the phase split of one sampled one-by-one
// delete and one sampled batched delete of N devices.
func BenchmarkAttribution(b *testing.B) {
	skipUnlessRoot(b)
	n := envInt(b, "NDST_BENCH_N", 100)
	rounds := envInt(b, "NDST_BENCH_ROUNDS", 5)
	ctx := context.Background()
	be := openFresh(b, Options{Kind: "ifb", KindExplicit: true})
	tmpl, _ := ndst.ParseTemplate("ndst%d")
	del := func(req ndst.DelRequest) *ndst.Result {
		b.Helper()
		if r, err := be.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl}); err != nil || r.Count != n {
			b.Fatalf("Add(%d) = %+v, %v", n, r, err)
		}
		time.Sleep(100 * time.Millisecond) // the previous delete's RCU work settles
		req.Start, req.Stop = 1, 1<<31-1
		r, err := be.Del(ctx, req)
		if err != nil || r.Count != n {
			b.Fatalf("Del(%+v) = %+v, %v; want %d deleted", req, r, err, n)
		}
		if req.Attribute && len(r.Phases) == 0 {
			b.Fatalf("Del(%+v): no phases; notes %q", req, r.Notes)
		}
		return r
	}
	var with, without []time.Duration
	var last *ndst.Result
	for range b.N {
		for i := range rounds {
			order := []bool{true, false}
			if i%2 == 1 {
				order = []bool{false, true}
			}
			for _, a := range order {
				r := del(ndst.DelRequest{OneByOne: true, Attribute: a})
				if a {
					with = append(with, time.Duration(r.WallNS))
					last = r
				} else {
					without = append(without, time.Duration(r.WallNS))
				}
			}
		}
	}
	b.StopTimer()
	ratio := float64(median(with)) / float64(median(without))
	b.ReportMetric(ratio, "attribute_overhead")
	b.ReportMetric(0, "ns/op")
	verdict := "ok"
	if ratio >= 1.05 {
		verdict = "MISSED"
	}
	b.Logf("one-by-one delete of %d ifbs, median of %d rounds: with --attribute %.1f ms, without %.1f ms: ratio %.3f (want < 1.05) %s",
		n, rounds, ms(median(with)), ms(median(without)), ratio, verdict)
	b.Logf("rounds: with %v without %v; sampler CPU %.1f ms over %d samples in the last sampled run",
		ms4(with), ms4(without), ms(time.Duration(last.Counters["sampler_cpu_ns"])), last.Counters["stack_samples"])
	logPhases(b, "one-by-one delete, per device", last, int64(n))
	logPhases(b, fmt.Sprintf("batched delete of %d devices", n), del(ndst.DelRequest{Attribute: true}), 1)
}

// logPhases prints a result's phase table, each phase's time divided by per.
func logPhases(b *testing.B, title string, r *ndst.Result, per int64) {
	var total int64
	for _, p := range r.Phases {
		total += p.TotalNS()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s (wall %.2f ms per unit; %s):\n", title, ms(time.Duration(r.WallNS/per)), strings.Join(r.Notes, "; "))
	fmt.Fprintf(&sb, "    %-20s %10s %10s %10s %6s\n", "phase", "cpu", "wait", "total", "share")
	for _, p := range r.Phases {
		fmt.Fprintf(&sb, "    %-20s %8.3fms %8.3fms %8.3fms %5.1f%%  %s\n", p.Name, ms(time.Duration(p.CPUNS/per)), ms(time.Duration(p.WaitNS/per)),
			ms(time.Duration(p.TotalNS()/per)), 100*float64(p.TotalNS())/float64(total), phase.Describe(p.Name))
	}
	for _, e := range r.Explain {
		fmt.Fprintf(&sb, "    why: %s\n", e)
	}
	b.Log(sb.String())
}
