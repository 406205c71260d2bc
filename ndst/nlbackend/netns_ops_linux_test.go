package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

// netnsTemplate is a namespace template unique to one test, whose
// namespaces are deleted at cleanup whatever the test left.
func netnsTemplate(t *testing.T) ndst.NetnsTemplate {
	t.Helper()
	prefix := fmt.Sprintf("ndt%x-", rand.Uint32())
	tmpl := ndst.MustNetnsTemplate(prefix + "%d")
	t.Cleanup(func() {
		ents, _ := os.ReadDir(netnsDir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				_ = removeNetns(e.Name())
				_ = removeRecord(e.Name())
				t.Errorf("cleanup: %s was left under %s", e.Name(), netnsDir)
			}
		}
	})
	return tmpl
}

// TestNetnsRoundTrip: netns add with lo up, a link and a veth pair each,
// list, a namespace of someone else's in the range left alone, deletes all
// at once and one at a time with their three times, and a range that
// covers none.
func TestNetnsRoundTrip(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	add := func(n int) {
		t.Helper()
		r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, Template: tmpl, Links: 1, Veth: true, LoUp: true})
		if err != nil || r.Count != n || r.Result != ndst.ResultOK {
			t.Fatalf("NetnsAdd(%d) = %+v, %v", n, r, err)
		}
	}
	add(3)
	list, err := b.NetnsList(ctx, ndst.NetnsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mine := 0
	for _, n := range list {
		if tmpl.Number(n.Name) < 0 {
			continue
		}
		mine++
		if n.Foreign || n.Devices != 3 || !n.LoUp || len(n.Peers) != 1 {
			t.Errorf("NetnsList: %+v, want ndst's, with lo, a link and eth0, lo up, one host-side peer", n)
		}
	}
	if mine != 3 {
		t.Fatalf("NetnsList: %d of ours, want 3: %+v", mine, list)
	}
	// Someone else's namespace with a name in the range: never deleted.
	other := tmpl.Name(4)
	if out, err := exec.Command("ip", "netns", "add", other).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", other).Run()

	r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, Template: tmpl})
	if err != nil || r.Count != 3 || r.Skipped != 1 || r.Netns == nil {
		t.Fatalf("NetnsDel(all at once) = %+v, %v; want 3 deleted, 1 skipped", r, err)
	}
	n := r.Netns
	if n.GoneNS == nil || n.DoneNS == nil || n.ReturnedNS <= 0 || *n.GoneNS < n.ReturnedNS/2 || *n.DoneNS < *n.GoneNS || n.Style != ndst.StyleAllAtOnce {
		t.Errorf("times = %+v; want returned, gone and done in that order", n)
	}
	if _, err := os.Stat(nsPath(other)); err != nil {
		t.Errorf("someone else's %s was touched: %v", other, err)
	}
	noRecords := func(how string, k ...int) {
		t.Helper()
		for _, i := range k {
			if _, err := os.Lstat(ownerPath(tmpl.Name(i))); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: the ownership record of %s is left (%v)", how, tmpl.Name(i), err)
			}
		}
	}
	noRecords("deleted at once", 1, 2, 3)
	add(2)
	r, err = b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 3, Template: tmpl, OneByOne: true})
	if err != nil || r.Count != 2 || r.Netns == nil || r.Netns.DoneNS == nil || r.Netns.Style != ndst.StyleOneByOne {
		t.Fatalf("NetnsDel(one at a time) = %+v, %v", r, err)
	}
	if r.Netns.Batches != nil && *r.Netns.Batches != 2 {
		t.Errorf("one at a time: %d cleanup runs, want one each", *r.Netns.Batches)
	}
	noRecords("deleted one at a time", 1, 2)
	r, err = b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, Template: tmpl})
	if !errors.Is(err, ndst.ErrNoNetns) || r != nil {
		t.Errorf("NetnsDel(none of ours left) = %+v, %v; want ErrNoNetns", r, err)
	}
	links := mustList(t, b)
	if len(links) != 1 {
		t.Errorf("ndst's namespace after the deletes: %+v, want only lo (every veth end gone)", links)
	}
}

// TestNetnsInterrupted cancels netns add and netns del midway: what is left
// is whole namespaces (each with all its devices, and ndst's), and reruns
// finish the job.
func TestNetnsInterrupted(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 300, Template: tmpl, Links: 2, Veth: true, LoUp: true})
	if !errors.Is(err, context.Canceled) || r == nil || r.Count == 0 || r.Count >= 300 {
		t.Fatalf("NetnsAdd cancelled = %+v, %v; want some but not all created, and the interruption", r, err)
	}
	made := r.Count
	// A rerun of the same command would add 300 more: the hint names the
	// count that adds the rest.
	if hint := fmt.Sprintf("`ndst --backend netlink netns add %d` adds the rest", 300-made); !strings.Contains(err.Error(), hint) {
		t.Errorf("NetnsAdd cancelled: %v; want it to say %s", err, hint)
	}
	list, err := b.NetnsList(context.Background(), ndst.NetnsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, n := range list {
		if tmpl.Number(n.Name) < 0 {
			continue
		}
		seen++
		if n.Foreign || n.Devices != 4 || !n.LoUp || len(n.Peers) != 1 {
			t.Errorf("after the interruption: %+v, want a whole namespace of ndst's (lo up, 2 links, eth0, a peer)", n)
		}
	}
	if seen != made {
		t.Errorf("%d namespaces listed, %d reported created", seen, made)
	}
	if r, err := b.NetnsAdd(context.Background(), ndst.NetnsAddRequest{Count: 5, Template: tmpl, Links: 2, Veth: true, LoUp: true}); err != nil || r.Count != 5 {
		t.Fatalf("NetnsAdd after the interruption = %+v, %v", r, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	r, err = b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 1000, Template: tmpl, OneByOne: true})
	if err == nil || r == nil || r.Count >= made+5 {
		t.Fatalf("NetnsDel cancelled = %+v, %v; want an interruption before the end", r, err)
	}
	r, err = b.NetnsDel(context.Background(), ndst.NetnsDelRequest{Start: 1, Stop: 1000, Template: tmpl})
	if err != nil || r.Count == 0 {
		t.Fatalf("NetnsDel after the interruption = %+v, %v", r, err)
	}
	if links := mustList(t, b); len(links) != 1 {
		t.Errorf("ndst's namespace after the reruns: %d devices, want only lo", len(links))
	}
}
