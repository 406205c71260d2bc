package emu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/statefile"
)

// hostConfig is this host's line as calibrated (testdata/host-6.18-costs.json:
// 6.18, HZ 250, 2 CPUs).
func hostConfig(t testing.TB, state string) Config {
	t.Helper()
	ct, err := costs.Load(filepath.Join("testdata", "host-6.18-costs.json"))
	if err != nil {
		t.Fatal(err)
	}
	return Config{Profile: "6.18", HZ: 250, CPUs: 2, Costs: ct, StatePath: state, Ephemeral: state == ""}
}

func open(t testing.TB, c Config) *Backend {
	t.Helper()
	b, err := Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestNetnsStatePersists(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "state")
	c := hostConfig(t, state)
	b := open(t, c)
	res, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 3, Links: 1, Veth: true, LoUp: true})
	if err != nil || res.Count != 3 || res.Latency == nil {
		t.Fatalf("NetnsAdd(3) = %+v, %v", res, err)
	}
	b.Close()

	b = open(t, c)
	list, err := b.NetnsList(ctx, ndst.NetnsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ndst.Netns{
		{Name: "ndst1", Devices: 3, LoUp: true, Peers: []string{"veth0"}},
		{Name: "ndst2", Devices: 3, LoUp: true, Peers: []string{"veth1"}},
		{Name: "ndst3", Devices: 3, LoUp: true, Peers: []string{"veth2"}},
	}
	if !slices.EqualFunc(list, want, func(a, b ndst.Netns) bool {
		return a.Name == b.Name && a.Devices == b.Devices && a.LoUp == b.LoUp && slices.Equal(a.Peers, b.Peers)
	}) {
		t.Errorf("NetnsList() = %+v, want %+v", list, want)
	}
	host, err := b.List(ctx, ndst.ListRequest{})
	if err != nil || len(host) != 3 || host[0].Kind != "veth" {
		t.Errorf("List() of the initial namespace = %+v, %v; want the three host-side veth ends", host, err)
	}
	b.Close()

	c.Netns = "ndst2"
	in := open(t, c)
	devs, err := in.List(ctx, ndst.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range devs {
		kinds = append(kinds, d.Name+":"+d.Kind)
	}
	if !slices.Equal(kinds, []string{"lo:loopback", "dummy0:dummy", "eth0:veth"}) {
		t.Errorf("List() in ndst2 = %v", kinds)
	}
	// lo up: two more references than a down device (its routes).
	if devs[0].Refcount.Value != devs[1].Refcount.Value+2 {
		t.Errorf("lo refcount %v, dummy0 %v; an up lo's routes hold two more", devs[0].Refcount, devs[1].Refcount)
	}
	// Deleting the inner veth end takes the host end with it; lo is never
	// deleted by del.
	del, err := in.Del(ctx, ndst.DelRequest{Start: 1, Stop: 3})
	if err != nil || del.Count != 3 || del.Skipped != 1 {
		t.Fatalf("Del(1, 3) in ndst2 = %+v, %v; want dummy0, eth0 and its peer deleted, lo skipped", del, err)
	}
	in.Close()

	c.Netns = ""
	b = open(t, c)
	host, _ = b.List(ctx, ndst.ListRequest{})
	if len(host) != 2 {
		t.Errorf("List() of the initial namespace = %+v, want veth0 and veth2 left", host)
	}
	res, err = b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 3})
	if err != nil || res.Count != 3 || res.Netns == nil || res.Netns.DoneNS == nil {
		t.Fatalf("NetnsDel(1, 3) = %+v, %v", res, err)
	}
	b.Close()
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if raw[6] != 1 { // no namespaces left: format version 1 again
		t.Errorf("state file version %d after deleting every namespace, want 1", raw[6])
	}
	st, err := statefile.Load(state)
	if err != nil || len(st.Devices) != 0 || len(st.Namespaces) != 0 || len(st.Veths) != 0 {
		t.Errorf("state after NetnsDel = %+v, %v; want empty", st, err)
	}
}

// TestNetnsDelTimes checks the shape of the three times and the batching on
// this host's line: all at once, the first namespaces are a cleanup of their
// own (the worker starts on the idle CPU at once) and the rest, queued while
// it runs, share the next;
// one at a time, every namespace is a cleanup of its own and the whole takes
// longer.
func TestNetnsDelTimes(t *testing.T) {
	ctx := context.Background()
	run := func(one bool) *ndst.Result {
		b := open(t, hostConfig(t, ""))
		if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 10, Veth: true, LoUp: true}); err != nil {
			t.Fatal(err)
		}
		res, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, OneByOne: one})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	all, one := run(false), run(true)
	for _, r := range []*ndst.Result{all, one} {
		n := r.Netns
		if n.GoneNS == nil || n.DoneNS == nil || !(n.ReturnedNS < *n.GoneNS && *n.GoneNS < *n.DoneNS) {
			t.Errorf("%s: returned %d, gone %d, done %d; want them in that order", n.Style, n.ReturnedNS, *n.GoneNS, *n.DoneNS)
		}
		if v := *r.VirtualNS; *n.DoneNS > v || v-*n.DoneNS > 1e5 {
			t.Errorf("%s: done %d, virtual %d; the command waits until the cleanup is done, and no longer", n.Style, *n.DoneNS, v)
		}
		if r.Counters["devices_freed"] != 10*3 || r.Counters["namespaces_freed"] != 10 {
			t.Errorf("%s: counters %v; want 30 devices (lo and two veth ends each) and 10 namespaces freed", n.Style, r.Counters)
		}
	}
	if got := all.Netns.BatchSizes; len(got) != 2 || got[0] > 3 || got[0]+got[1] != 10 {
		t.Errorf("all at once: batch sizes %v, want a small first run and the rest in a second", got)
	}
	if got := one.Netns.BatchSizes; len(got) != 10 || slices.Max(got) != 1 {
		t.Errorf("one at a time: batch sizes %v, want ten of 1", got)
	}
	if !(*one.Netns.DoneNS > 3**all.Netns.DoneNS) {
		t.Errorf("one at a time done at %d, all at once at %d; waiting for each cleanup should cost several times more", *one.Netns.DoneNS, *all.Netns.DoneNS)
	}
	if all.Netns.ReturnedNS > 1e6 {
		t.Errorf("all at once returned at %d ns; dropping ten references takes microseconds", all.Netns.ReturnedNS)
	}
}

// TestNetnsFailureLeavesStateUnchanged: a namespace whose lo keeps a
// reference forever ends as stuck, and the state file is byte for byte as
// before.
func TestNetnsFailureLeavesStateUnchanged(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "state")
	c := hostConfig(t, state)
	b := open(t, c)
	if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 2, Links: 1}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	before, _ := os.ReadFile(state)
	c.Holds = []netdev.Hold{{Holder: netdev.HolderDst, Device: "lo", Forever: true}}
	c.GiveUp = 20 * time.Second
	b = open(t, c)
	res, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 2})
	if !errors.Is(err, ndst.ErrStuck) || res == nil || res.Result != ndst.ResultStuck || res.Count != 0 {
		t.Fatalf("NetnsDel with lo held forever = %+v, %v; want a stuck result", res, err)
	}
	if len(res.Stuck) == 0 || res.Stuck[0].Name != "lo" {
		t.Errorf("stuck devices = %+v, want lo", res.Stuck)
	}
	b.Close()
	after, _ := os.ReadFile(state)
	if !bytes.Equal(before, after) {
		t.Error("a stuck netns del changed the state file")
	}
}

func TestNetnsBadInput(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "state")
	c := hostConfig(t, state)
	b := open(t, c)
	if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 2}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	before, _ := os.ReadFile(state)
	b = open(t, c)
	for _, tc := range []struct {
		name  string
		err   error
		usage bool
	}{
		{"range that covers none", func() error { _, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 3, Stop: 9}); return err }(), false},
		{"reversed range", func() error { _, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 2, Stop: 1}); return err }(), true},
		{"no links template room", func() error {
			tm, _ := ndst.ParseTemplate("abcdefghijklmn%d")
			_, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Links: 11, LinkTemplate: tm})
			return err
		}(), true},
		{"zero namespaces", func() error { _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 0}); return err }(), true},
		{"veth end named like a link", func() error {
			_, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Veth: true, VethInner: "dummy3"})
			return err
		}(), true},
	} {
		if tc.err == nil || ndst.IsUsage(tc.err) != tc.usage {
			t.Errorf("%s: error %v, want an error (usage %v)", tc.name, tc.err, tc.usage)
		}
	}
	if _, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 3, Stop: 9}); !errors.Is(err, ndst.ErrNoNetns) {
		t.Errorf("NetnsDel(3, 9) = %v, want ErrNoNetns", err)
	}
	b.Close()
	for _, name := range []string{"nope", "ndst9"} {
		c.Netns = name
		in := open(t, c)
		if _, err := in.Add(ctx, ndst.AddRequest{Count: 1, Template: dummyTemplate}); !errors.Is(err, ndst.ErrNoNetns) {
			t.Errorf("Add in %s = %v, want ErrNoNetns", name, err)
		}
		if _, err := in.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1}); !ndst.IsUsage(err) {
			t.Errorf("NetnsAdd with Netns %s = %v, want a usage error", name, err)
		}
		in.Close()
	}
	c.Netns = "a/b"
	if _, err := Open(ctx, c); !ndst.IsUsage(err) {
		t.Errorf("Open with Netns a/b = %v, want a usage error", err)
	}
	after, _ := os.ReadFile(state)
	if !bytes.Equal(before, after) {
		t.Error("bad input changed the state file")
	}
}

func TestNetnsDeterministic(t *testing.T) {
	ctx := context.Background()
	run := func() (*ndst.Result, *ndst.Result) {
		b := open(t, Config{Profile: "6.18", HZ: 250, CPUs: 2, Seed: 7, Ephemeral: true})
		add, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 20, Links: 2, Veth: true, LoUp: true})
		if err != nil {
			t.Fatal(err)
		}
		del, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 20})
		if err != nil {
			t.Fatal(err)
		}
		add.WallNS, del.WallNS = 0, 0
		return add, del
	}
	a1, d1 := run()
	a2, d2 := run()
	if *a1.VirtualNS != *a2.VirtualNS || *d1.VirtualNS != *d2.VirtualNS || *d1.Netns.GoneNS != *d2.Netns.GoneNS ||
		d1.Netns.ReturnedNS != d2.Netns.ReturnedNS || !slices.Equal(d1.Netns.BatchSizes, d2.Netns.BatchSizes) {
		t.Errorf("two runs differ: add %d/%d, del %d/%d", *a1.VirtualNS, *a2.VirtualNS, *d1.VirtualNS, *d2.VirtualNS)
	}
}

// BenchmarkNetnsAddDel10k adds 10,000 namespaces with 2 links each and
// deletes them all at once, through a state file, on this host's line.
// Target (issue "How fast"): under 2 s of wall time for both.
func BenchmarkNetnsAddDel10k(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		state := filepath.Join(b.TempDir(), "state")
		be := open(b, hostConfig(b, state))
		add, err := be.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 10000, Links: 2})
		if err != nil {
			b.Fatal(err)
		}
		be.Close()
		be = open(b, hostConfig(b, state))
		del, err := be.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10000})
		if err != nil || del.Count != 10000 {
			b.Fatalf("NetnsDel = %+v, %v", del, err)
		}
		be.Close()
		b.ReportMetric(float64(add.WallNS+del.WallNS)/1e9, "wall-s")
		b.ReportMetric(float64(*del.VirtualNS)/1e9, "del-virtual-s")
	}
}
