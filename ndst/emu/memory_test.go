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
