package nlbackend

import (
	"context"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/osthread"
	"github.com/ndst-project/ndst/safefile"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The workloads on the real kernel, each in a namespace of its own.

func hasIPv6(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		t.Skip("this kernel has no IPv6")
	}
}

// TestAddrsRealAddAndDelete: devices up with addresses, forwarding giving
// the anycast routes, and a one-by-one delete that takes them all.
func TestAddrsRealAddAndDelete(t *testing.T) {
	hasIPv6(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	a := ndst.Addrs{V4: 2, V6: 2, Forwarding6: true}
	res, err := b.Add(ctx, ndst.AddRequest{Count: 3, Addrs: a})
	if err != nil || res.Count != 3 {
		t.Fatalf("Add(3 with addresses) = %+v, %v", res, err)
	}
	// The add's time is the whole add: its address part is within it.
	if an := res.Counters["addr_ns"]; an <= 0 || an > res.WallNS {
		t.Errorf("addr_ns = %d with wall %d: want 0 < addr_ns <= wall (the add's time covers setting the devices up)", an, res.WallNS)
	}
	h := testHandle(t, b)
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, l := range links {
		if !strings.HasPrefix(l.Attrs().Name, "ifb") {
			continue
		}
		seen++
		if l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s is not up", l.Attrs().Name)
		}
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			as, err := h.AddrList(l, fam)
			if err != nil {
				t.Fatal(err)
			}
			global := 0
			for _, x := range as {
				if x.IP.IsGlobalUnicast() || x.IP.IsPrivate() {
					global++
				}
			}
			if global != 2 {
				t.Errorf("%s has %d addresses of family %d, want 2: %v", l.Attrs().Name, global, fam, as)
			}
		}
		if n, err := anycastRoutes(h, l.Attrs().Index, 2, 5*time.Second); err != nil {
			t.Fatal(err)
		} else if n != 2 {
			t.Errorf("%s has %d anycast routes 5 s after its add, want 2 (fe80:: and its prefix, forwarding)", l.Attrs().Name, n)
		}
	}
	if seen != 3 {
		t.Fatalf("found %d of the 3 devices", seen)
	}
	d, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: true})
	if err != nil || d.Count != 3 {
		t.Fatalf("Del one by one = %+v, %v", d, err)
	}
}

// TestAddrsRealRefusesIPv6Off: with IPv6 disabled in the namespace,
// --addr6 is refused before anything is made.
func TestAddrsRealRefusesIPv6Off(t *testing.T) {
	hasIPv6(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	if err := b.setSysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"); err != nil {
		t.Skipf("cannot disable IPv6 in the test namespace: %v", err)
	}
	_, err := b.Add(context.Background(), ndst.AddRequest{Count: 2, Addrs: ndst.Addrs{V6: 1}})
	if !ndst.IsUsage(err) || !strings.Contains(err.Error(), "IPv6 is disabled") {
		t.Fatalf("Add(--addr6) with IPv6 disabled = %v, want a usage error", err)
	}
	if links, _ := b.dump(); countOwned(links) != 0 {
		t.Errorf("a refused add left %d links", countOwned(links))
	}
}

// anycastRoutes counts the IPv6 anycast routes through ifindex, polling
// until there are want of them or timeout has passed. The kernel joins an
// address's subnet-router anycast after the RTM_NEWADDR has been answered:
// addrconf_dad_start queues the address's dad_work, and it is that work
// (addrconf_dad_begin, which completes at once on an IFF_NOARP device such
// as ifb, then addrconf_dad_completed and __ipv6_ifa_notify) that calls
// addrconf_join_anycast, under RTNL (net/ipv6/addrconf.c, 6.18). On a busy
// machine the work can run well after the add returns.
func anycastRoutes(h *netlink.Handle, ifindex, want int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		routes, err := h.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{LinkIndex: ifindex, Table: unix.RT_TABLE_UNSPEC},
			netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, r := range routes {
			if r.Type == unix.RTN_ANYCAST {
				n++
			}
		}
		if n >= want || time.Now().After(deadline) {
			return n, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countOwned(links []link) int {
	n := 0
	for _, l := range links {
		if Owned(l.Group) {
			n++
		}
	}
	return n
}

// TestChildrenReal: macvlans (and VLANs where the kernel has 8021q) on an
// ifb; a foreign parent refused; a stream and the parent's delete.
func TestChildrenReal(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	h := testHandle(t, b)
	if err := h.LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "foreign0"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(ctx, ndst.AddRequest{Count: 2, Kind: ndst.KindMacvlan, Parent: "foreign0"}); !ndst.IsUsage(err) || !strings.Contains(err.Error(), "is not ndst's") {
		t.Fatalf("Add on a foreign parent = %v, want usage error 'is not ndst's'", err)
	}
	for _, kind := range []string{ndst.KindMacvlan, ndst.KindVLAN} {
		if _, err := b.Add(ctx, ndst.AddRequest{Count: 1, Kind: "ifb"}); err != nil {
			t.Fatal(err)
		}
		r, err := b.Add(ctx, ndst.AddRequest{Count: 5, Kind: kind, Parent: "ifb0"})
		if ndst.IsUsage(err) && strings.Contains(err.Error(), "no "+kind+" link type") {
			t.Logf("%s: %v", kind, err)
			if _, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || r.Count != 5 {
			t.Fatalf("Add 5 %ss = %+v, %v", kind, r, err)
		}
		list, _ := b.List(ctx, ndst.ListRequest{})
		var parent, lo, hi = 0, math.MaxInt32, 0
		for _, d := range list {
			if d.Name == "ifb0" {
				parent = d.Ifindex
			} else if d.Kind == kind {
				lo, hi = min(lo, d.Ifindex), max(hi, d.Ifindex)
			}
		}
		st, err := b.Del(ctx, ndst.DelRequest{Start: lo, Stop: lo + 1, Stream: true})
		if err != nil || st.Count != 2 || !st.Stream {
			t.Fatalf("Del stream of 2 %ss = %+v, %v", kind, st, err)
		}
		pd, err := b.Del(ctx, ndst.DelRequest{Start: parent, Stop: parent})
		if err != nil || pd.Count != 1 {
			t.Fatalf("Del of the lower device = %+v, %v", pd, err)
		}
		links, _ := b.dump()
		if n := countOwned(links); n != 0 {
			t.Errorf("%d of ndst's links left after the lower device went (want its %d %ss gone with it)", n, hi-lo-1, kind)
		}
	}
}

// TestUnshareReal: namespaces that die with their threads; every one is
// freed, none is left mounted.
func TestUnshareReal(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	res, err := b.Unshare(ctx, ndst.UnshareRequest{Count: 40, Parallel: 4, LoUp: true, Veth: true})
	if err != nil {
		t.Fatalf("Unshare = %v (%+v)", err, res)
	}
	u := res.Unshare
	if res.Count != 40 || u.CreatedNS <= 0 || u.ExitedNS < u.CreatedNS {
		t.Fatalf("Unshare = %+v", u)
	}
	if u.DrainedNS != nil && *u.DrainedNS < u.ExitedNS-int64(time.Millisecond) {
		t.Errorf("drained %v before the last worker exited %v", *u.DrainedNS, u.ExitedNS)
	}
	links, _ := b.dump()
	deadline := time.Now().Add(10 * time.Second)
	for countOwned(links) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		links, _ = b.dump()
	}
	if n := countOwned(links); n != 0 {
		t.Errorf("%d veth ends left in ndst's namespace after the namespaces died", n)
	}
	if _, err := b.Unshare(ctx, ndst.UnshareRequest{Count: 1 << 20, Parallel: 8}); !ndst.IsUsage(err) || !strings.Contains(err.Error(), "kernel memory") {
		t.Errorf("Unshare(2^20) = %v, want the memory bound's usage error", err)
	}
}

// TestNetnsDelCNIReal: each pod's veth deleted from inside first, timed.
func TestNetnsDelCNIReal(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	tmpl := ndst.MustNetnsTemplate("ndst-cni-test%d")
	t.Cleanup(func() { _, _ = b.DropNamespaces(tmpl) })
	if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 3, Template: tmpl, LoUp: true, Veth: true}); err != nil {
		t.Fatal(err)
	}
	res, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 3, Template: tmpl, CNI: true})
	if err != nil || res.Count != 3 {
		t.Fatalf("NetnsDel --cni = %+v, %v", res, err)
	}
	n := res.Netns
	if n.Style != ndst.StyleCNI || n.CNIDelete == nil || n.CNIDelete.MinNS <= 0 {
		t.Errorf("NetnsDel --cni times = %+v, want style cni and each veth delete timed", n)
	}
}

// TestNetnsAddrsReal: each namespace's links up with their addresses, and
// forwarding's anycast address, seen from inside the namespace.
func TestNetnsAddrsReal(t *testing.T) {
	hasIPv6(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	tmpl := ndst.MustNetnsTemplate("ndst-addr-test%d")
	t.Cleanup(func() { _, _ = b.DropNamespaces(tmpl) })
	res, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 2, Template: tmpl, Links: 2, LoUp: true,
		Addrs: ndst.Addrs{V4: 1, V6: 1, Forwarding6: true}})
	if err != nil || res.Count != 2 {
		t.Fatalf("NetnsAdd with addresses = %+v, %v", res, err)
	}
	ns, err := netns.GetFromPath(nsPath(tmpl.Name(1)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		t.Fatal(err)
	}
	// The socket and the namespace file held here keep the namespace alive:
	// they are let go of before its delete waits for its cleanup.
	var once sync.Once
	release := func() { once.Do(func() { h.Close(); ns.Close() }) }
	t.Cleanup(release)
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	up := 0
	for _, l := range links {
		if l.Attrs().Name == "lo" {
			continue
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s is not up", l.Attrs().Name)
			continue
		}
		up++
		for fam, want := range map[int]string{netlink.FAMILY_V4: ndst.Addr4(l.Attrs().Index, 0).String(), netlink.FAMILY_V6: ndst.Addr6(l.Attrs().Index, 0).String()} {
			addrs, err := h.AddrList(l, fam)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, a := range addrs {
				found = found || a.IPNet.String() == want
			}
			if !found {
				t.Errorf("%s lacks %s (has %v)", l.Attrs().Name, want, addrs)
			}
		}
	}
	if up != 2 {
		t.Errorf("%d links up in %s, want 2", up, tmpl.Name(1))
	}
	release()
	if _, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 2, Template: tmpl}); err != nil {
		t.Fatal(err)
	}
}

// TestPodChurnReal: a short churn keeps up and leaves no pod behind.
func TestPodChurnReal(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	res, err := b.PodChurn(ctx, ndst.PodChurnRequest{Rate: 20, For: 2 * time.Second, Lifetime: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("PodChurn = %v (%+v)", err, res)
	}
	c := res.Churn
	if c.Created != 40 || c.Deleted != 40 {
		t.Errorf("PodChurn made %d and deleted %d pods, want 40 and 40", c.Created, c.Deleted)
	}
	existing, err := scanNetns()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range existing {
		if strings.HasPrefix(n.Name, "ndstpod") {
			t.Errorf("pod namespace %s left behind", n.Name)
		}
	}
	if _, err := b.PodChurn(ctx, ndst.PodChurnRequest{Rate: 100_000, For: time.Hour, Lifetime: time.Hour}); !ndst.IsUsage(err) {
		t.Errorf("PodChurn beyond memory = %v, want a usage error", err)
	}
}

// setSysctl writes a /proc/sys file from a thread inside b's namespace.
func (b *Backend) setSysctl(path, v string) error {
	return osthread.Throwaway(func() error {
		if err := unix.Setns(int(b.ns), unix.CLONE_NEWNET); err != nil {
			return err
		}
		return safefile.WriteKernelFile(path, []byte(v+"\n"))
	})
}

// TestPodChurnInterruptedLeavesNoPod: a churn cancelled partway deletes
// every pod it made before it returns (it once left the pods of the makers
// still waiting for their time, and said every pod was deleted), and its
// error counts them truly.
func TestPodChurnInterruptedLeavesNoPod(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	for _, after := range []time.Duration{300 * time.Millisecond, 1100 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		res, err := b.PodChurn(ctx, ndst.PodChurnRequest{Rate: 20, For: 10 * time.Second, Lifetime: time.Second, Parallel: 4})
		cancel()
		if err == nil || res == nil || res.Churn == nil {
			t.Fatalf("PodChurn cancelled after %v = %+v, %v; want an error with its figures", after, res, err)
		}
		c := res.Churn
		if c.Created == 0 || c.Deleted != c.Created || !strings.Contains(err.Error(), "every pod made was deleted") {
			t.Errorf("cancelled after %v: made %d, deleted %d: %v", after, c.Created, c.Deleted, err)
		}
		existing, err := scanNetns()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range existing {
			if strings.HasPrefix(n.Name, "ndstpod") {
				t.Errorf("cancelled after %v: pod namespace %s left behind", after, n.Name)
			}
		}
	}
}
