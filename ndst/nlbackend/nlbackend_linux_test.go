package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var tmplDummy, _ = ndst.ParseTemplate("dummy%d")

// owned returns the names of ndst's devices in a listing, and the foreign ones.
func names(devs []ndst.Device) (owned, foreign []string) {
	for _, d := range devs {
		if d.Foreign {
			foreign = append(foreign, d.Name)
		} else {
			owned = append(owned, d.Name)
		}
	}
	return owned, foreign
}

func mustList(t *testing.T, b *Backend) []ndst.Device {
	t.Helper()
	devs, err := b.List(context.Background(), ndst.ListRequest{})
	if err != nil {
		t.Fatalf("List() = %v, want nil error", err)
	}
	return devs
}

func mustAdd(t *testing.T, b *Backend, req ndst.AddRequest) *ndst.Result {
	t.Helper()
	if req.Template == (ndst.Template{}) {
		req.Template = tmplDummy
	}
	r, err := b.Add(context.Background(), req)
	if err != nil || r.Count != req.Count || r.Result != ndst.ResultOK {
		t.Fatalf("Add(%+v) = %+v, %v; want %d created", req, r, err, req.Count)
	}
	return r
}

// ownedRange returns the lowest and highest ifindex of ndst's devices.
func ownedRange(devs []ndst.Device) (lo, hi int) {
	for _, d := range devs {
		if d.Foreign {
			continue
		}
		if lo == 0 || d.Ifindex < lo {
			lo = d.Ifindex
		}
		hi = max(hi, d.Ifindex)
	}
	return lo, hi
}

func TestRoundTrip(t *testing.T) {
	for _, kind := range []string{"ifb", "veth"} {
		t.Run(kind, func(t *testing.T) {
			b := openFresh(t, Options{Kind: kind, KindExplicit: true})
			ctx := context.Background()
			r := mustAdd(t, b, ndst.AddRequest{Count: 6})
			if r.Kind != kind || r.Op != "add" || r.Backend != "netlink" || r.VirtualNS != nil || r.WallNS <= 0 ||
				r.Batched || r.Latency != nil || r.Counters["batches"] != 1 || r.Counters["per_device_ns"] <= 0 {
				t.Errorf("Add(6) = %+v, want op add, backend netlink, kind %s, no virtual time, wall time, one batch and its time per device", r, kind)
			}
			devs := mustList(t, b)
			owned, foreign := names(devs)
			// No template chosen: the devices are named after their kind.
			var want []string
			for i := range 6 {
				want = append(want, fmt.Sprintf("%s%d", kind, i))
			}
			slices.Sort(owned)
			if !slices.Equal(owned, want) || !slices.Equal(foreign, []string{"lo"}) {
				t.Fatalf("List() owned %v foreign %v, want %v and [lo]", owned, foreign, want)
			}
			for _, d := range devs {
				if !d.Foreign && (d.Kind != kind || d.State != "down") {
					t.Errorf("List() device %+v, want kind %s, state down", d, kind)
				}
				if d.Name == "lo" && d.Kind != "loopback" {
					t.Errorf("List() lo = %+v, want kind loopback", d)
				}
			}
			if !slices.IsSortedFunc(devs, func(a, b ndst.Device) int { return a.Ifindex - b.Ifindex }) {
				t.Errorf("List() not ordered by ifindex: %+v", devs)
			}

			// Delete the lower half, then the rest (lo is in the range).
			lo, hi := ownedRange(devs)
			mid := lo + 2
			r, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: mid})
			wantDel := 3 // ifb: lo..mid; veth: pairs are whole, the range splits none or one
			if kind == "veth" {
				wantDel = 4 // lo..lo+2 touches two pairs
			}
			if err != nil || r.Count != wantDel || r.Skipped != 1 || !r.Batched || r.Latency != nil {
				t.Fatalf("Del(1, %d) = %+v, %v; want %d deleted, 1 skipped (lo), batched", mid, r, err, wantDel)
			}
			if got := len(mustList(t, b)); got != 1+6-wantDel {
				t.Errorf("List() after Del(1, %d) has %d devices, want %d", mid, got, 1+6-wantDel)
			}
			r, err = b.Del(ctx, ndst.DelRequest{Start: 1, Stop: hi})
			if err != nil || r.Count != 6-wantDel {
				t.Fatalf("Del(1, %d) = %+v, %v; want %d deleted", hi, r, err, 6-wantDel)
			}
			owned, foreign = names(mustList(t, b))
			if len(owned) != 0 || !slices.Equal(foreign, []string{"lo"}) {
				t.Errorf("List() after deleting all = %v + %v, want only lo", owned, foreign)
			}
			// Nothing left: ErrNoDevices, and lo is still skipped.
			r, err = b.Del(ctx, ndst.DelRequest{Start: 1, Stop: hi})
			if !errors.Is(err, ndst.ErrNoDevices) || r == nil || r.Result != ndst.ResultError || r.Skipped != 1 {
				t.Errorf("Del(1, %d) on an empty namespace = %+v, %v; want ErrNoDevices with lo skipped", hi, r, err)
			}
		})
	}
}

// TestNamesFollowKind: without a chosen template devices are named after
// their kind; a chosen one (even dummy%d) or any other template is kept.
func TestNamesFollowKind(t *testing.T) {
	custom, _ := ndst.ParseTemplate("x%d")
	for _, tt := range []struct {
		explicit bool
		tmpl     ndst.Template
		want     string
	}{
		{false, ndst.Template{}, "ifb0"},
		{false, tmplDummy, "ifb0"},
		{true, tmplDummy, "dummy0"},
		{false, custom, "x0"},
	} {
		b := openFresh(t, Options{Kind: "ifb", KindExplicit: true, NameExplicit: tt.explicit})
		r, err := b.Add(context.Background(), ndst.AddRequest{Count: 1, Template: tt.tmpl})
		if err != nil || r.Count != 1 {
			t.Fatalf("Add(1) = %+v, %v", r, err)
		}
		if owned, _ := names(mustList(t, b)); !slices.Equal(owned, []string{tt.want}) {
			t.Errorf("NameExplicit %v, template %v: created %v, want [%s]", tt.explicit, tt.tmpl, owned, tt.want)
		}
	}
}

// TestAddOneByOne: every create its own timed request, with per-device
// latency; the devices are the same as a batched add's.
func TestAddOneByOne(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	r := mustAdd(t, b, ndst.AddRequest{Count: 5, OneByOne: true})
	if r.Latency == nil || r.Latency.MinNS <= 0 || r.Latency.MaxNS > r.WallNS || r.Counters["netlink_requests"] != 5 {
		t.Errorf("Add(5, one by one) = %+v, want 5 timed requests with latency", r)
	}
	if _, has := r.Counters["batches"]; has {
		t.Errorf("Add(5, one by one) counters %v, want no batches", r.Counters)
	}
	owned, _ := names(mustList(t, b))
	slices.Sort(owned)
	if !slices.Equal(owned, []string{"ifb0", "ifb1", "ifb2", "ifb3", "ifb4"}) {
		t.Errorf("Add(5, one by one) created %v", owned)
	}
}

func TestVethOddCount(t *testing.T) {
	b := openFresh(t, Options{Kind: "veth", KindExplicit: true})
	r, err := b.Add(context.Background(), ndst.AddRequest{Count: 3, Template: tmplDummy})
	if !ndst.IsUsage(err) || r != nil {
		t.Errorf("Add(3, veth) = %+v, %v; want a usage error", r, err)
	}
	if owned, _ := names(mustList(t, b)); len(owned) != 0 {
		t.Errorf("Add(3, veth) created %v, want nothing", owned)
	}
}

// kernelHasDummy probes a throwaway namespace.
func kernelHasDummy(t *testing.T) bool {
	t.Helper()
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	err := testHandle(t, b).LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}})
	if err == nil {
		return true
	}
	if !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("LinkAdd(dummy) = %v, want nil or EOPNOTSUPP", err)
	}
	return false
}

func TestDummyFallback(t *testing.T) {
	skipUnlessRoot(t)
	hasDummy := kernelHasDummy(t)
	t.Logf("kernel has dummy: %v", hasDummy)

	// Not explicit: dummy, or ifb with one notice.
	var notices []string
	var mu sync.Mutex
	b := openFresh(t, Options{Notef: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, fmt.Sprintf(f, a...))
	}})
	r := mustAdd(t, b, ndst.AddRequest{Count: 3})
	wantKind := "ifb"
	if hasDummy {
		wantKind = "dummy"
	}
	if r.Kind != wantKind {
		t.Errorf("Add(3) kind = %q, want %q", r.Kind, wantKind)
	}
	if !hasDummy && (len(notices) != 1 || !strings.Contains(notices[0], "no dummy") || !slices.Contains(r.Notes, notices[0])) {
		t.Errorf("Add(3) notices = %q, notes %q; want one notice about the dummy fallback, also in Notes", notices, r.Notes)
	}
	for _, d := range mustList(t, b) {
		if !d.Foreign && (d.Kind != wantKind || !strings.HasPrefix(d.Name, wantKind)) {
			t.Errorf("List() = %+v, want kind %s and a name after it", d, wantKind)
		}
	}
	// A second add remembers the fallback without a second notice.
	mustAdd(t, b, ndst.AddRequest{Count: 2})
	if !hasDummy && len(notices) != 1 {
		t.Errorf("second Add notices = %q, want still one", notices)
	}

	// Explicit dummy: fail when the kernel lacks it, creating nothing.
	e := openFresh(t, Options{Kind: "dummy", KindExplicit: true})
	r, err := e.Add(context.Background(), ndst.AddRequest{Count: 3, Template: tmplDummy})
	if hasDummy {
		if err != nil || r.Count != 3 {
			t.Errorf("Add(3, --kind dummy) = %+v, %v; want 3 created", r, err)
		}
		return
	}
	if err == nil || ndst.IsUsage(err) || r == nil || r.Count != 0 || r.Result != ndst.ResultError || !strings.Contains(err.Error(), "no dummy") {
		t.Errorf("Add(3, --kind dummy) = %+v, %v; want a failure saying the kernel has no dummy, 0 created", r, err)
	}
	if owned, _ := names(mustList(t, e)); len(owned) != 0 {
		t.Errorf("Add(3, --kind dummy) left %v, want nothing", owned)
	}
}

func TestForeignDevicesSkipped(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	// A device someone else made in ndst's namespace, between ndst's.
	mustAdd(t, b, ndst.AddRequest{Count: 2})
	if err := testHandle(t, b).LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "other0"}}); err != nil {
		t.Fatalf("LinkAdd(other0) = %v", err)
	}
	mustAdd(t, b, ndst.AddRequest{Count: 2})
	devs := mustList(t, b)
	owned, foreign := names(devs)
	slices.Sort(foreign)
	if len(owned) != 4 || !slices.Equal(foreign, []string{"lo", "other0"}) {
		t.Fatalf("List() = %v + foreign %v, want 4 owned and foreign [lo other0]", owned, foreign)
	}
	r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1<<31 - 1})
	if err != nil || r.Count != 4 || r.Skipped != 2 {
		t.Fatalf("Del(1, max) = %+v, %v; want 4 deleted, 2 skipped", r, err)
	}
	owned, foreign = names(mustList(t, b))
	slices.Sort(foreign)
	if len(owned) != 0 || !slices.Equal(foreign, []string{"lo", "other0"}) {
		t.Errorf("List() after Del = %v + foreign %v, want only lo and other0", owned, foreign)
	}
	// A range with only foreign devices: ErrNoDevices, nothing deleted.
	r, err = b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1})
	if !errors.Is(err, ndst.ErrNoDevices) || r.Skipped != 1 {
		t.Errorf("Del(1, 1) = %+v, %v; want ErrNoDevices, lo skipped", r, err)
	}
}

func TestBatchedVsOneByOne(t *testing.T) {
	tests := []struct {
		kind     string
		requests int64 // one-by-one requests for 12 devices
	}{
		{"ifb", 12},
		{"veth", 6}, // one RTM_DELLINK per pair
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			b := openFresh(t, Options{Kind: tt.kind, KindExplicit: true})
			ctx := context.Background()
			const n = 12
			mustAdd(t, b, ndst.AddRequest{Count: n})
			one, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1<<31 - 1, OneByOne: true})
			if err != nil || one.Count != n || one.Batched || one.Latency == nil || one.Counters["batches"] != tt.requests {
				t.Fatalf("Del(one by one) = %+v, %v; want %d deleted in %d requests with latency", one, err, n, tt.requests)
			}
			mustAdd(t, b, ndst.AddRequest{Count: n})
			bat, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1<<31 - 1})
			if err != nil || bat.Count != n || !bat.Batched || bat.Counters["batches"] != 1 || bat.Counters["netlink_requests"] != 1 {
				t.Fatalf("Del(batched) = %+v, %v; want %d deleted by one request", bat, err, n)
			}
			if owned, _ := names(mustList(t, b)); len(owned) != 0 {
				t.Errorf("after Del(batched): %v left, want none", owned)
			}
			t.Logf("%d %s devices: one by one %v (median %v per request), batched %v",
				n, tt.kind, time.Duration(one.WallNS), time.Duration(one.Latency.MedianNS), time.Duration(bat.WallNS))
			// Not a speed assertion (those are in BenchmarkRatios): only
			// that both measured something consistent.
			if one.Latency.MinNS <= 0 || one.Latency.MaxNS > one.WallNS || bat.WallNS <= 0 {
				t.Errorf("Del(one by one) latency %+v with wall %d, batched wall %d: want 0 < min, max <= wall", one.Latency, one.WallNS, bat.WallNS)
			}
		})
	}
}

func TestPartialRangeMovesToPrivateGroup(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 10})
	lo, hi := ownedRange(mustList(t, b))
	r, err := b.Del(context.Background(), ndst.DelRequest{Start: lo + 3, Stop: lo + 6})
	if err != nil || r.Count != 4 || r.Counters["moved"] != 4 || r.Counters["netlink_requests"] != 5 {
		t.Fatalf("Del(%d, %d) = %+v, %v; want 4 moved and deleted with 5 requests", lo+3, lo+6, r, err)
	}
	devs := mustList(t, b)
	var left []int
	for _, d := range devs {
		if !d.Foreign {
			left = append(left, d.Ifindex)
		}
	}
	want := []int{lo, lo + 1, lo + 2, lo + 7, lo + 8, hi}
	if !slices.Equal(left, want) {
		t.Errorf("List() after Del(%d, %d) = %v, want %v", lo+3, lo+6, left, want)
	}
	// The rest, now a whole group, goes in one request.
	r, err = b.Del(context.Background(), ndst.DelRequest{Start: lo, Stop: hi})
	if err != nil || r.Count != 6 || r.Counters["netlink_requests"] != 1 {
		t.Errorf("Del(%d, %d) = %+v, %v; want 6 deleted by one request", lo, hi, r, err)
	}
}

func TestBadInput(t *testing.T) {
	skipUnlessRoot(t)
	before, _ := os.ReadDir(netnsDir)
	ctx := context.Background()
	for _, name := range []string{"../x", "a/b", "..", ".", "x y", strings.Repeat("n", 65)} {
		if b, err := Open(ctx, Options{Netns: name}); !ndst.IsUsage(err) {
			if b != nil {
				b.Close()
			}
			t.Errorf("Open(Netns %q) = %v, want a usage error", name, err)
		}
		if err := Reset(ctx, Options{Netns: name}); !ndst.IsUsage(err) {
			t.Errorf("Reset(Netns %q) = %v, want a usage error", name, err)
		}
	}
	if _, err := Open(ctx, Options{Kind: "bridge"}); !ndst.IsUsage(err) {
		t.Errorf("Open(Kind bridge) = %v, want a usage error", err)
	}
	after, _ := os.ReadDir(netnsDir)
	if len(after) != len(before) {
		t.Errorf("bad names changed %s: %d entries before, %d after", netnsDir, len(before), len(after))
	}

	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	for _, req := range []ndst.DelRequest{{Start: 0, Stop: 5}, {Start: 5, Stop: 4}} {
		if r, err := b.Del(ctx, req); !ndst.IsUsage(err) || r != nil {
			t.Errorf("Del(%+v) = %+v, %v; want a usage error", req, r, err)
		}
	}
	for _, n := range []int{0, -1, ndst.MaxCount + 1} {
		if r, err := b.Add(ctx, ndst.AddRequest{Count: n, Template: tmplDummy}); !ndst.IsUsage(err) || r != nil {
			t.Errorf("Add(%d) = %+v, %v; want a usage error", n, r, err)
		}
	}
	small, _ := ndst.ParseTemplate("abcdefghijklmn%d")
	if r, err := b.Add(ctx, ndst.AddRequest{Count: 11, Template: small}); !ndst.IsUsage(err) || r != nil {
		t.Errorf("Add(11, abcdefghijklmn%%d) = %+v, %v; want a usage error (only 10 names fit)", r, err)
	}
	if owned, _ := names(mustList(t, b)); len(owned) != 0 {
		t.Errorf("bad requests created %v, want nothing", owned)
	}
}

func TestNameTakenMidRun(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true, NameExplicit: true})
	// Between choosing names and creating them, someone takes dummy1.
	testHook = func(event string, n int) {
		if event == "add-names" {
			if err := testHandle(t, b).LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "dummy1"}}); err != nil {
				t.Errorf("LinkAdd(dummy1) = %v", err)
			}
		}
	}
	t.Cleanup(func() { testHook = nil })
	r, err := b.Add(context.Background(), ndst.AddRequest{Count: 3, Template: tmplDummy})
	testHook = nil
	if !errors.Is(err, unix.EEXIST) || r == nil || r.Count != 2 || r.Result != ndst.ResultError ||
		!strings.Contains(err.Error(), "dummy1") || !strings.Contains(err.Error(), "created 2 of 3") {
		t.Fatalf("Add(3) with dummy1 taken = %+v, %v; want EEXIST naming dummy1, 2 of 3 created", r, err)
	}
	// A rerun succeeds and skips the taken name.
	mustAdd(t, b, ndst.AddRequest{Count: 1})
	owned, _ := names(mustList(t, b))
	slices.Sort(owned)
	if !slices.Equal(owned, []string{"dummy0", "dummy2", "dummy3"}) {
		t.Errorf("owned after rerun = %v, want [dummy0 dummy2 dummy3]", owned)
	}
}

func TestInterrupted(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	t.Cleanup(func() { testHook = nil })

	// Cancelled after the first window of creates.
	ctx, cancel := context.WithCancel(context.Background())
	testHook = func(event string, n int) {
		if event == "add-window" {
			cancel()
		}
	}
	r, err := b.Add(ctx, ndst.AddRequest{Count: window + 10, Template: tmplDummy})
	testHook = nil
	if !errors.Is(err, context.Canceled) || r == nil || r.Count != window || !strings.Contains(err.Error(), fmt.Sprintf("created %d of %d", window, window+10)) {
		t.Fatalf("Add(%d) cancelled after one window = %+v, %v; want Canceled, %d created", window+10, r, err, window)
	}
	if owned, _ := names(mustList(t, b)); len(owned) != window {
		t.Fatalf("after cancelled Add: %d owned devices, want %d", len(owned), window)
	}
	mustAdd(t, b, ndst.AddRequest{Count: 10}) // a rerun succeeds

	// One-by-one delete cancelled after 3 devices.
	ctx, cancel = context.WithCancel(context.Background())
	testHook = func(event string, n int) {
		if event == "del-one" && n == 3 {
			cancel()
		}
	}
	r, err = b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1<<31 - 1, OneByOne: true})
	testHook = nil
	if !errors.Is(err, context.Canceled) || r == nil || r.Count != 3 {
		t.Fatalf("Del(one by one) cancelled after 3 = %+v, %v; want Canceled, 3 deleted", r, err)
	}
	// A batched delete whose move is cancelled deletes nothing; rerun works.
	lo, _ := ownedRange(mustList(t, b))
	ctx, cancel = context.WithCancel(context.Background())
	testHook = func(event string, n int) {
		if event == "move-window" {
			cancel()
		}
	}
	r, err = b.Del(ctx, ndst.DelRequest{Start: lo + 1, Stop: 1<<31 - 1})
	testHook = nil
	cancel()
	if !errors.Is(err, context.Canceled) || r == nil || r.Count != 0 {
		t.Fatalf("Del(batched) cancelled while moving = %+v, %v; want Canceled, 0 deleted", r, err)
	}
	total := window + 10 - 3
	if owned, _ := names(mustList(t, b)); len(owned) != total {
		t.Fatalf("after cancelled Del: %d owned devices, want %d", len(owned), total)
	}
	r, err = b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1<<31 - 1})
	if err != nil || r.Count != total {
		t.Fatalf("rerun Del = %+v, %v; want %d deleted", r, err, total)
	}
}

func TestNamespaceVanished(t *testing.T) {
	name := freshNS(t)
	b := openFresh(t, Options{Netns: name, Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 2})
	// Someone runs `ip netns del` mid-add.
	testHook = func(event string, n int) {
		if event == "add-window" {
			removeNetns(name)
		}
	}
	t.Cleanup(func() { testHook = nil })
	r, err := b.Add(context.Background(), ndst.AddRequest{Count: 5, Template: tmplDummy})
	testHook = nil
	if err == nil || !strings.Contains(err.Error(), "deleted or replaced") || r == nil || r.Count != 5 {
		t.Fatalf("Add(5) with the namespace deleted meanwhile = %+v, %v; want an error saying so, with 5 created", r, err)
	}
	if _, err := b.List(context.Background(), ndst.ListRequest{}); err == nil {
		t.Errorf("List() after the namespace vanished = nil error, want one")
	}
	b.Close()
	// A rerun starts afresh in a new namespace of the same name.
	b2 := openFresh(t, Options{Netns: name, Kind: "ifb", KindExplicit: true})
	if !b2.Created() {
		t.Errorf("Open after the namespace vanished: Created() = false, want true")
	}
	mustAdd(t, b2, ndst.AddRequest{Count: 2})
}

func TestReset(t *testing.T) {
	name := freshNS(t)
	b := openFresh(t, Options{Netns: name, Kind: "veth", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 4})
	mustAdd(t, b, ndst.AddRequest{Count: 2}) // a second group
	if err := testHandle(t, b).LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "other0"}}); err != nil {
		t.Fatalf("LinkAdd(other0) = %v", err)
	}
	h := testHandle(t, b)
	b.Close()
	// A device of someone else's keeps the namespace: ndst's are deleted,
	// other0 is named with what to do.
	rep, err := ResetNamespace(context.Background(), Options{Netns: name})
	if err == nil || !rep.Existed || !rep.NamespaceKept || rep.Deleted != 6 || !slices.Equal(rep.Kept, []string{"other0"}) ||
		!strings.Contains(err.Error(), "ip -n "+name+" link del DEVICE") {
		t.Fatalf("ResetNamespace(%s) = %+v, %v; want 6 of ndst's deleted, the namespace kept for other0, and what to do", name, rep, err)
	}
	text := strings.Join(rep.Lines(), "\n")
	if !strings.Contains(text, "kept: 6 devices of ndst's deleted") || !strings.Contains(text, "not created by ndst left: other0") {
		t.Errorf("report text %q, want it to count ndst's devices and name other0", text)
	}
	if l, err := h.LinkByName("other0"); err != nil || l == nil {
		t.Fatalf("other0 after reset: %v; want it kept", err)
	}
	if err := h.LinkDel(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "other0"}}); err != nil {
		t.Fatal(err)
	}
	rep, err = ResetNamespace(context.Background(), Options{Netns: name})
	if err != nil || !rep.Existed || rep.NamespaceKept || rep.Deleted != 0 {
		t.Fatalf("ResetNamespace(%s) once other0 is gone = %+v, %v; want the namespace deleted", name, rep, err)
	}
	if text := strings.Join(rep.Lines(), "\n"); !strings.Contains(text, "deleted, with 0 devices of ndst's") {
		t.Errorf("report text %q", text)
	}
	if _, err := os.Stat(nsPath(name)); !os.IsNotExist(err) {
		t.Errorf("after Reset, stat %s = %v; want not exist", nsPath(name), err)
	}
	// A namespace that does not exist: nothing done, and the text says so
	// (never "deleted").
	rep, err = ResetNamespace(context.Background(), Options{Netns: name})
	if err != nil || rep.Existed || rep.Deleted != 0 {
		t.Errorf("ResetNamespace(%s) of a missing namespace = %+v, %v; want nil error, not existed", name, rep, err)
	}
	if text := strings.Join(rep.Lines(), "\n"); !strings.Contains(text, "does not exist; nothing to do") || strings.Contains(text, "deleted") {
		t.Errorf("report text for a missing namespace = %q, want \"does not exist; nothing to do\"", text)
	}
	// An empty file without ndst's record is someone else's (an `ip netns
	// add` in progress): refused.
	if err := os.WriteFile(nsPath(name), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if rep, err := ResetNamespace(context.Background(), Options{Netns: name}); err == nil || !strings.Contains(err.Error(), "ndst has no record of it") {
		t.Errorf("Reset over an empty file without a record = %+v, %v; want a refusal", rep, err)
	}
	// With a record: a creation interrupted before its mount, ndst's.
	if err := writeRecord(name, nsIdentity{Kind: identityKind(), ID: 1, Ino: nsID{1, 1}}); err != nil {
		t.Fatal(err)
	}
	if b, err := Open(context.Background(), Options{Netns: name}); err == nil || !strings.Contains(err.Error(), "not a network namespace") {
		if b != nil {
			b.Close()
		}
		t.Errorf("Open over a stale file = %v, want an error saying it is not a namespace", err)
	}
	if rep, err := ResetNamespace(context.Background(), Options{Netns: name}); err != nil || !rep.Stale {
		t.Errorf("Reset over a stale file = %+v, %v; want it removed as stale", rep, err)
	}
	if _, err := os.Stat(nsPath(name)); !os.IsNotExist(err) {
		t.Errorf("after Reset of a stale file, stat = %v; want not exist", err)
	}
	// A file with content is not ndst's to remove; nor is a FIFO (which
	// must not hang the open either).
	if err := os.WriteFile(nsPath(name), []byte("a user's notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := ResetNamespace(context.Background(), Options{Netns: name}); err == nil || !strings.Contains(err.Error(), "not removing it") {
		t.Errorf("Reset over a file with content = %+v, %v; want a refusal", rep, err)
	}
	os.Remove(nsPath(name))
	if err := unix.Mkfifo(nsPath(name), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ResetNamespace(context.Background(), Options{Netns: name}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not removing it") {
			t.Errorf("Reset over a FIFO = %v; want a refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Reset over a FIFO still blocked after 10 s")
	}
	done2 := make(chan error, 1)
	go func() {
		b, err := Open(context.Background(), Options{Netns: name, NoCreate: true})
		if b != nil {
			b.Close()
		}
		done2 <- err
	}()
	select {
	case err := <-done2:
		if err == nil {
			t.Errorf("Open over a FIFO = nil error, want one")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Open over a FIFO still blocked after 10 s")
	}
	os.Remove(nsPath(name))
}

// TestListUnderChurn lists while another socket adds and deletes devices:
// every listing must hold all the devices that exist throughout.
func TestListUnderChurn(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 300})
	stable, _ := names(mustList(t, b))
	h, err := netlink.NewHandleAt(b.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l := &netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("churn%d", i%4)}}
			if h.LinkAdd(l) == nil {
				h.LinkDel(l)
			}
		}
	}()
	for i := range 30 {
		devs, err := b.List(context.Background(), ndst.ListRequest{})
		if err != nil {
			if errors.Is(err, errDumpKeptChanging) {
				continue // bounded retries ran out: an error, never a partial list
			}
			t.Fatalf("List() #%d = %v", i, err)
		}
		owned, _ := names(devs)
		if !slices.Equal(owned, stable) {
			t.Fatalf("List() #%d under churn has %d owned devices, want the %d stable ones", i, len(owned), len(stable))
		}
	}
	close(stop)
	wg.Wait()
}

// TestNotRoot runs Open as an unprivileged user in a child process.
func TestNotRoot(t *testing.T) {
	if os.Getenv("NDST_NLBACKEND_CHILD") == "1" {
		name := os.Getenv("NDST_NLBACKEND_NS")
		_, err := Open(context.Background(), Options{Netns: name})
		fmt.Printf("OPEN-ERROR: %v\n", err)
		return
	}
	skipUnlessRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ndst-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "nlbackend.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("ndst-test-nonroot-%d", os.Getpid())
	cmd := exec.Command(bin, "-test.run=^TestNotRoot$")
	cmd.Env = append(os.Environ(), "NDST_NLBACKEND_CHILD=1", "NDST_NLBACKEND_NS="+name)
	cmd.SysProcAttr = &syscallCred
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "OPEN-ERROR: netlink backend needs CAP_NET_ADMIN and CAP_SYS_ADMIN") || !strings.Contains(s, "uid 65534") {
		t.Errorf("Open as uid 65534 printed %q, want one line naming CAP_NET_ADMIN, CAP_SYS_ADMIN and uid 65534", s)
	}
	if _, err := os.Stat(nsPath(name)); !os.IsNotExist(err) {
		t.Errorf("unprivileged Open created %s (stat %v)", nsPath(name), err)
		removeNetns(name)
	}
}

// TestUnusedNamespaceRemoved: a namespace that Open created for an add
// that then created nothing (refused input) is removed at Close; one that
// got devices stays.
func TestUnusedNamespaceRemoved(t *testing.T) {
	skipUnlessRoot(t)
	name := freshNS(t)
	b, err := Open(context.Background(), Options{Netns: name, Kind: "veth", KindExplicit: true})
	if err != nil || !b.Created() {
		t.Fatalf("Open(%s) = %v, created %v; want it created", name, err, b != nil && b.Created())
	}
	if _, err := b.Add(context.Background(), ndst.AddRequest{Count: 3}); !ndst.IsUsage(err) {
		t.Errorf("Add(3 veth) = %v, want a usage error", err)
	}
	b.Close()
	if _, err := os.Stat(nsPath(name)); !os.IsNotExist(err) {
		t.Errorf("after a refused add, %s exists (stat %v); want the namespace Open made removed", nsPath(name), err)
	}
	b = openFresh(t, Options{Netns: name, Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 1})
	b.Close()
	if _, err := os.Stat(nsPath(name)); err != nil {
		t.Errorf("after an add that created a device, stat %s = %v; want it kept", nsPath(name), err)
	}
}
