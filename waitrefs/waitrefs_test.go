package waitrefs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/waitrefs"
)

// delOne adds one device and deletes it, returning the del result.
func delOne(t *testing.T, c emu.Config) *ndst.Result {
	t.Helper()
	c.Ephemeral = true
	if c.HZ == 0 {
		c.HZ = 1000
	}
	if c.CPUs == 0 {
		c.CPUs = 1
	}
	c.Jitter = -1 // exact costs: the figures below are exact
	b, err := emu.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := ndst.ParseTemplate("dummy%d")
	if _, err := b.Add(context.Background(), ndst.AddRequest{Count: 1, Template: tmpl}); err != nil {
		t.Fatal(err)
	}
	r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1})
	if err != nil {
		t.Fatalf("Del with %+v = %v", c, err)
	}
	return r
}

func TestStrategiesWaitTheirOwnWay(t *testing.T) {
	ms := int64(time.Millisecond)
	tests := []struct {
		name      string
		cfg       emu.Config
		minNS     int64
		maxNS     int64
		sleeps    int64
		barriers  int64
		checkFunc func(r *ndst.Result) string
	}{
		// msleep(250) = 251 jiffies from the jiffy the 1.4 ms unregister
		// ends in; the command starts at a seeded phase of jiffy 0.
		{"msleep250", emu.Config{Strategy: "msleep250"}, 251 * ms, 253 * ms, 1, 0, nil},
		// One jiffy at a time. 2.6.31 Tree RCU: the arp_parms free queued
		// first starts GP 1 in call_rcu, so the in_device release queued
		// right after waits for GP 2: two sleeps, three jiffies.
		{"tick", emu.Config{Strategy: "tick"}, 2 * ms, 3 * ms, 2, 0, nil},
		// rcu_barrier's callback joins GP 2 with the in_device release.
		{"ben", emu.Config{Strategy: "ben"}, 2 * ms, 3 * ms, 0, 1, nil},
		{"barrier", emu.Config{Strategy: "barrier"}, 2 * ms, 3 * ms, 0, 1, nil},
		// 6.18: the run_todo barrier flushes everything; the backoff loop
		// finds the device ready before any sleep.
		{"backoff", emu.Config{Strategy: "backoff", Profile: "6.18", HZ: 250}, 0, 40 * ms, 0, 1, nil},
		{"wake", emu.Config{Strategy: "wake"}, 2 * ms, 3 * ms, 1, 0, func(r *ndst.Result) string {
			if r.Counters["release_checks"] == 0 {
				return "no release checks counted"
			}
			return ""
		}},
		// With two CPUs the expedited GP is real and the loop finishes.
		{"expedited SMP", emu.Config{Strategy: "expedited", Profile: "2.6.32", CPUs: 2}, 1 * ms, 20 * ms, 0, 0, nil},
	}
	for _, tc := range tests {
		r := delOne(t, tc.cfg)
		v := *r.VirtualNS
		if v < tc.minNS || v > tc.maxNS {
			t.Errorf("%s: del of one device took %v, want between %v and %v", tc.name, time.Duration(v), time.Duration(tc.minNS), time.Duration(tc.maxNS))
		}
		if r.Counters["sleeps"] != tc.sleeps || r.Counters["rcu_barriers"] != tc.barriers {
			t.Errorf("%s: sleeps=%d rcu_barriers=%d, want %d and %d", tc.name, r.Counters["sleeps"], r.Counters["rcu_barriers"], tc.sleeps, tc.barriers)
		}
		if tc.checkFunc != nil {
			if msg := tc.checkFunc(r); msg != "" {
				t.Errorf("%s: %s", tc.name, msg)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	for _, n := range waitrefs.Names {
		if s, err := waitrefs.Lookup(n); err != nil || s.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, s, err)
		}
	}
	if _, err := waitrefs.Lookup("yield"); err == nil || !strings.Contains(err.Error(), "msleep250") {
		t.Errorf("Lookup(yield) = %v, want an error listing the strategies", err)
	}
}
