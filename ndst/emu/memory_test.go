package emu

import (
	"context"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

func TestAddRefusesWhatCannotFit(t *testing.T) {
	saved := memAvailable
	t.Cleanup(func() { memAvailable = saved })
	memAvailable = func() (uint64, bool) { return 64 << 20, true } // 64 MiB

	b, err := Open(context.Background(), Config{HZ: 1000, CPUs: 1, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(context.Background(), ndst.AddRequest{Count: 1000, Template: dummyTemplate}); err != nil {
		t.Fatalf("Add(1000) with 64 MiB = %v, want it to fit", err)
	}
	_, err = b.Add(context.Background(), ndst.AddRequest{Count: 1000000, Template: dummyTemplate})
	if err == nil || !strings.Contains(err.Error(), "need about 488.8 MiB") || !strings.Contains(err.Error(), "64.0 MiB") {
		t.Fatalf("Add(1000000) with 64 MiB = %v, want a refusal with the estimate", err)
	}
	if b.Devices() != 1000 {
		t.Errorf("after the refusal the registry has %d devices, want 1000", b.Devices())
	}
}

// TestNamespacesCountInTheMemoryGuard: the namespaces a state already holds
// count with their own tables, not as their one lo each: on a state of
// 4000 namespaces (about 67 MB of emulated kernel), adding one more, or a
// device, is refused when 64 MiB is available.
func TestNamespacesCountInTheMemoryGuard(t *testing.T) {
	saved := memAvailable
	t.Cleanup(func() { memAvailable = saved })
	ctx := context.Background()
	b, err := Open(ctx, Config{HZ: 1000, CPUs: 1, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := ndst.MustNetnsTemplate(ndst.DefaultNetnsTemplate)
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 4000, Template: tmpl}); err != nil || r.Count != 4000 {
		t.Fatalf("NetnsAdd(4000) = %+v, %v", r, err)
	}
	memAvailable = func() (uint64, bool) { return 64 << 20, true }
	if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Template: tmpl}); err == nil || !strings.Contains(err.Error(), "need about 64.5 MiB") {
		t.Errorf("NetnsAdd(1) on 4000 namespaces with 64 MiB = %v, want a refusal counting the namespaces", err)
	}
	if _, err := b.Add(ctx, ndst.AddRequest{Count: 1, Template: dummyTemplate}); err == nil || !strings.Contains(err.Error(), "namespaces count 33 each") {
		t.Errorf("Add(1) on 4000 namespaces with 64 MiB = %v, want a refusal counting the namespaces", err)
	}
}
