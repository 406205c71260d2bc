package emu

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// TestDelMatch: del --match deletes the devices named like the pattern
// within the range, and no other; a pattern that matches none is
// ErrNoDevices.
func TestDelMatch(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Profile: "6.18", Strategy: "backoff", HZ: 250, CPUs: 2, Preempt: "none", Seed: 1, StatePath: filepath.Join(t.TempDir(), "state")}
	b, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := ndst.ParseTemplate("dummy%d")
	if _, err := b.Add(ctx, ndst.AddRequest{Count: 30, Template: tmpl}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b, _ = Open(ctx, cfg)
	r, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1<<31 - 1, Match: "dummy1?"})
	if err != nil || r.Count != 10 {
		t.Fatalf("Del(--match dummy1?) = %+v, %v; want 10 deleted", r, err)
	}
	b.Close()
	b, _ = Open(ctx, cfg)
	defer b.Close()
	devs, err := b.List(ctx, ndst.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if len(d.Name) == 7 && d.Name[:6] == "dummy1" {
			t.Errorf("%s was not deleted", d.Name)
		}
	}
	if len(devs) != 20 {
		t.Errorf("%d devices left, want the 20 others", len(devs))
	}
	if _, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 30, Match: "zz*"}); !errors.Is(err, ndst.ErrNoDevices) {
		t.Errorf("Del(--match zz*) = %v, want ErrNoDevices", err)
	}
}
