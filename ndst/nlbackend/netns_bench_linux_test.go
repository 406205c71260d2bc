package nlbackend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

// BenchmarkNetnsRatios measures, in one run (see scripts/netns-bench.sh):
//
//	netns_create_ratio   ndst netns add N --veth --lo-up / the best iproute2 way   (want <= 0.5)
//	netns_del_speedup    one at a time, each waited for / all at once until done   (want >= 10)
//
// The iproute2 way is one `ip -batch` of N `netns add` and N `link add vK
// netns HOST type veth peer name eth0 netns NS`, then `ip -n NS link set lo up` for
// each namespace (ip has no batch across namespaces); its host-side ends go
// to a namespace of their own, as ndst's go to ndst's. N is NDST_BENCH_N
// (default 1000).
func BenchmarkNetnsRatios(b *testing.B) {
	skipUnlessRoot(b)
	if _, err := exec.LookPath("ip"); err != nil {
		b.Skip("iproute2 (ip) is not installed")
	}
	n := envInt(b, "NDST_BENCH_N", 1000)
	ctx := context.Background()
	be := openFresh(b, Options{Kind: "ifb", KindExplicit: true})
	prefix := fmt.Sprintf("ndb%x-", rand.Uint32())
	tmpl := ndst.MustNetnsTemplate(prefix + "%d")
	ipPrefix := fmt.Sprintf("ipb%x-", rand.Uint32())
	// The iproute2 way's host-side namespace is iproute2's, not ndst's:
	// ip deletes it (ndst's reset refuses a namespace it did not create).
	host := fmt.Sprintf("ipb%x-host", rand.Uint32())
	mustRun(b, "ip", "netns", "add", host)
	b.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", host).CombinedOutput(); err != nil {
			b.Errorf("cleanup: ip netns del %s: %v: %s", host, err, out)
		}
	})
	b.Cleanup(func() {
		ents, _ := os.ReadDir(netnsDir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ipPrefix) || strings.HasPrefix(e.Name(), prefix) {
				_ = exec.Command("ip", "netns", "del", e.Name()).Run()
				_ = removeRecord(e.Name())
			}
		}
	})
	var batch strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&batch, "netns add %s%d\n", ipPrefix, i)
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&batch, "link add v%d netns %s type veth peer name eth0 netns %s%d\n", i, host, ipPrefix, i)
	}
	file := filepath.Join(b.TempDir(), "batch")
	if err := os.WriteFile(file, []byte(batch.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	var ndAdd, ipAdd, ipBatch, allAtOnce, oneByOne time.Duration
	var rAll, rOne *ndst.Result
	for range b.N {
		t0 := time.Now()
		r, err := be.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, Template: tmpl, Veth: true, LoUp: true})
		ndAdd = time.Since(t0)
		if err != nil || r.Count != n {
			b.Fatalf("NetnsAdd(%d) = %+v, %v", n, r, err)
		}
		t0 = time.Now()
		mustRun(b, "ip", "-batch", file)
		ipBatch = time.Since(t0)
		for i := 1; i <= n; i++ {
			mustRun(b, "ip", "-n", fmt.Sprintf("%s%d", ipPrefix, i), "link", "set", "lo", "up")
		}
		ipAdd = time.Since(t0)

		time.Sleep(time.Second)
		t0 = time.Now()
		rAll, err = be.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: n, Template: tmpl})
		allAtOnce = time.Since(t0)
		if err != nil || rAll.Count != n || rAll.Netns.DoneNS == nil {
			b.Fatalf("NetnsDel(all at once) = %+v, %v", rAll, err)
		}
		if r, err := be.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, Template: tmpl, Veth: true, LoUp: true}); err != nil || r.Count != n {
			b.Fatalf("NetnsAdd(%d) = %+v, %v", n, r, err)
		}
		time.Sleep(time.Second)
		t0 = time.Now()
		rOne, err = be.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: n, Template: tmpl, OneByOne: true})
		oneByOne = time.Since(t0)
		if err != nil || rOne.Count != n || rOne.Netns.DoneNS == nil {
			b.Fatalf("NetnsDel(one at a time) = %+v, %v", rOne, err)
		}
	}
	b.StopTimer()
	create := float64(ndAdd) / float64(ipAdd)
	speedup := float64(*rOne.Netns.DoneNS) / float64(*rAll.Netns.DoneNS)
	b.ReportMetric(create, "netns_create_ratio")
	b.ReportMetric(speedup, "netns_del_speedup")
	b.ReportMetric(0, "ns/op")
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	b.Logf("create %d namespaces with lo up and a veth pair: ndst %.0f ms, iproute2 %.0f ms (ip -batch %.0f ms + %d x ip -n NS link set lo up %.0f ms): ratio %.2f (want <= 0.5) %s",
		n, ms(ndAdd), ms(ipAdd), ms(ipBatch), n, ms(ipAdd-ipBatch), create, verdict(create <= 0.5))
	describe := func(r *ndst.Result) string {
		t := r.Netns
		s := fmt.Sprintf("returned %.1f ms, gone %s, done %.1f ms", float64(t.ReturnedNS)/1e6, optMs(t.GoneNS), float64(*t.DoneNS)/1e6)
		if t.Batches != nil {
			s += fmt.Sprintf(", %d cleanup runs", *t.Batches)
		}
		return s
	}
	b.Logf("delete all at once, until the cleanup is done: %s (command %.0f ms)", describe(rAll), ms(allAtOnce))
	b.Logf("delete one at a time, each waited for:         %s (command %.0f ms)", describe(rOne), ms(oneByOne))
	b.Logf("all at once is %.1fx faster (want >= 10) %s", speedup, verdict(speedup >= 10))
}

func optMs(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(*p)/1e6)
}
