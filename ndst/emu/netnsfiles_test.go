package emu

import (
	"context"
	"maps"
	"testing"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
)

// TestNamingIsPaidByNamedNamespacesOnly: a table's netns_files_ns is
// charged to every namespace netns add makes (its record, mount point and
// bind mount), in its own phase, and to no namespace that unshare makes,
// which names nothing.
func TestNamingIsPaidByNamedNamespacesOnly(t *testing.T) {
	ctx := context.Background()
	const files = 2_000_000
	run := func(withFiles bool) (add, unshare int64, phase bool) {
		c := hostConfig(t, "")
		ct := *c.Costs
		ct.Extra = maps.Clone(ct.Extra)
		if ct.Extra == nil {
			ct.Extra = map[string]int64{}
		}
		delete(ct.Extra, "netns_files_ns")
		if withFiles {
			ct.Extra["netns_files_ns"] = files
		}
		c.Costs = &ct
		a, err := open(t, c).NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 20, LoUp: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range a.Phases {
			phase = phase || p.Name == netdev.PhaseNetnsFiles
		}
		u, err := open(t, c).Unshare(ctx, ndst.UnshareRequest{Count: 20, Parallel: 1, LoUp: true})
		if err != nil {
			t.Fatal(err)
		}
		return *a.VirtualNS, u.Unshare.CreatedNS, phase
	}
	a0, u0, p0 := run(false)
	a1, u1, p1 := run(true)
	// netns add makes them on one worker per CPU (2 here) after the first.
	if d := a1 - a0; d < files+19*files/2*95/100 || d > 20*files*11/10 {
		t.Errorf("netns add of 20 on 2 CPUs took %d ns longer with netns_files_ns %d, want about 10 times that (two workers)", d, files)
	}
	if u1 != u0 {
		t.Errorf("unshare of 20 took %d ns with netns_files_ns and %d without, want the same", u1, u0)
	}
	if p0 || !p1 {
		t.Errorf("phase %s in netns add: %v without the cost, %v with it; want it only with it", netdev.PhaseNetnsFiles, p0, p1)
	}
}
