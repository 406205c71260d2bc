package nlbackend

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

// BenchmarkRatios compares ndst with iproute2 on the same machine in one
// run (see scripts/bench-netlink.sh). It reports:
//
//	create_ratio        ndst Add(N) / `ip -batch` creating N        (want <= 1.0)
//	del_batch_ratio     ndst Del(batched) / `ip link del group`     (want <= 1.2)
//	one_by_one_speedup  ndst Del(one by one) / ndst Del(batched)    (want >= 50)
//
// ndst times are the whole Add/Del call (including its listing of the
// namespace); ip times are the ip process's wall time minus the median cost
// of starting ip and entering the namespace (`ip -n NS link show lo`), so
// neither side is charged for process start-up. The *_raw ratios charge ip
// for its start-up. Medians over NDST_BENCH_ROUNDS rounds (default 5) of
// NDST_BENCH_N devices (default 1000); one-by-one runs once.
func BenchmarkRatios(b *testing.B) {
	skipUnlessRoot(b)
	if _, err := exec.LookPath("ip"); err != nil {
		b.Skip("iproute2 (ip) is not installed")
	}
	n := envInt(b, "NDST_BENCH_N", 1000)
	rounds := envInt(b, "NDST_BENCH_ROUNDS", 5)
	ctx := context.Background()
	be := openFresh(b, Options{Kind: "ifb", KindExplicit: true})
	ipns := freshNS(b) // Reset removes it like any other namespace
	mustRun(b, "ip", "netns", "add", ipns)
	tmp := b.TempDir()
	kind := "ifb"
	var add strings.Builder
	for i := range n {
		fmt.Fprintf(&add, "link add name b%d group 4242 type %s\n", i, kind)
	}
	addFile := filepath.Join(tmp, "add")
	if err := os.WriteFile(addFile, []byte(add.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	tmpl, _ := ndst.ParseTemplate("ndst%d")

	var ov []time.Duration
	for range 7 {
		ov = append(ov, timeRun(b, "ip", "-n", ipns, "link", "show", "lo"))
	}
	overhead := median(ov)

	var ndAdd, ipAdd, ndDel, ipDel []time.Duration
	for range b.N {
		for range rounds {
			t0 := time.Now()
			r, err := be.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl})
			ndAdd = append(ndAdd, time.Since(t0))
			if err != nil || r.Count != n {
				b.Fatalf("Add(%d) = %+v, %v; want %d created", n, r, err, n)
			}
			ipAdd = append(ipAdd, timeRun(b, "ip", "-n", ipns, "-batch", addFile))

			t0 = time.Now()
			r, err = be.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1<<31 - 1})
			ndDel = append(ndDel, time.Since(t0))
			if err != nil || r.Count != n {
				b.Fatalf("Del(batched) = %+v, %v; want %d deleted", r, err, n)
			}
			ipDel = append(ipDel, timeRun(b, "ip", "-n", ipns, "link", "del", "group", "4242"))
		}
	}
	b.StopTimer()
	if _, err := be.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	r, err := be.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1<<31 - 1, OneByOne: true})
	one := time.Since(t0)
	if err != nil || r.Count != n {
		b.Fatalf("Del(one by one) = %+v, %v; want %d deleted", r, err, n)
	}

	cAdd, cDel := median(ipAdd)-overhead, median(ipDel)-overhead
	createRatio := float64(median(ndAdd)) / float64(cAdd)
	delRatio := float64(median(ndDel)) / float64(cDel)
	speedup := float64(one) / float64(median(ndDel))
	b.ReportMetric(createRatio, "create_ratio")
	b.ReportMetric(delRatio, "del_batch_ratio")
	b.ReportMetric(speedup, "one_by_one_speedup")
	b.ReportMetric(float64(median(ndAdd))/float64(median(ipAdd)), "create_ratio_raw")
	b.ReportMetric(float64(median(ndDel))/float64(median(ipDel)), "del_batch_ratio_raw")
	b.ReportMetric(0, "ns/op")
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	b.Logf("%d %s devices, median of %d rounds; ip start-up + namespace entry %v (subtracted from ip)", n, kind, rounds, overhead)
	b.Logf("create:       ndst %8.1f ms   ip -batch          %8.1f ms (raw %8.1f)   ratio %.2f (want <= 1.0) %s",
		ms(median(ndAdd)), ms(cAdd), ms(median(ipAdd)), createRatio, verdict(createRatio <= 1.0))
	b.Logf("batched del:  ndst %8.1f ms   ip link del group  %8.1f ms (raw %8.1f)   ratio %.2f (want <= 1.2) %s",
		ms(median(ndDel)), ms(cDel), ms(median(ipDel)), delRatio, verdict(delRatio <= 1.2))
	b.Logf("one-by-one:   ndst %8.1f ms   (%.2f ms/device)   batched is %.0fx faster (want >= 50) %s",
		ms(one), ms(one)/float64(n), speedup, verdict(speedup >= 50))
	b.Logf("rounds: ndst add %v ip add %v ndst del %v ip del %v", ms4(ndAdd), ms4(ipAdd), ms4(ndDel), ms4(ipDel))
}

func envInt(b testing.TB, key string, def int) int {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive integer", key, s)
	}
	return v
}

func mustRun(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v = %v: %s", name, args, err, out)
	}
}

func timeRun(t testing.TB, name string, args ...string) time.Duration {
	t.Helper()
	cmd := exec.Command(name, args...)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(t0)
	if err != nil {
		t.Fatalf("%s %v = %v: %s", name, args, err, out)
	}
	return d
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func ms4(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%.0f", ms(d)))
	}
	return "[" + strings.Join(parts, " ") + "] ms"
}
