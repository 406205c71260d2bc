package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/heldref"
	"github.com/ndst-project/ndst/ndst/nlbackend/kmsg"
	"github.com/ndst-project/ndst/phase"
)

// holdFirst adds n ifbs and holds a genuine reference on the first one
// (package heldref) for d, released at cleanup.
func holdFirst(t *testing.T, n int, d time.Duration) (*Backend, *heldref.Hold, ndst.Device) {
	t.Helper()
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: n})
	var first ndst.Device
	for _, dv := range mustList(t, b) {
		if !dv.Foreign && (first.Ifindex == 0 || dv.Ifindex < first.Ifindex) {
			first = dv
		}
	}
	h, err := heldref.Start(b.ns, first.Ifindex, d)
	if err != nil {
		t.Skipf("cannot hold a reference here: %v", err)
	}
	t.Cleanup(h.Release)
	return b, h, first
}

// TestStuckHeldReference deletes a device whose reference a blocked packet
// send holds: the delete gives up after --give-up, reports stuck with the
// verdict leak (the sender waits in netdev_wait_allrefs, far longer than a
// grace period), and the request finishes by itself once the hold goes.
func TestStuckHeldReference(t *testing.T) {
	for _, oneByOne := range []bool{true, false} {
		b, h, dev := holdFirst(t, 3, time.Minute)
		t0 := time.Now()
		r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1 << 30, OneByOne: oneByOne, GiveUp: 3 * time.Second, Attribute: true})
		if !errors.Is(err, ndst.ErrStuck) || r == nil || r.Result != ndst.ResultStuck || time.Since(t0) > 20*time.Second {
			t.Fatalf("Del(one by one %v) with %s held = %+v, %v after %v; want stuck after the 3 s give-up", oneByOne, dev.Name, r, err, time.Since(t0))
		}
		v := r.Verdict
		if v == nil || v.Kind != ndst.VerdictLeak || v.KernelState != phase.WaitLoop || v.WaitedNS < int64(3*time.Second) ||
			v.GracePeriodNS == nil || v.Ratio < LeakRatio || !strings.Contains(v.Why, "leak") {
			t.Errorf("verdict = %+v, want leak from the wait loop, 3 s waited, a grace period and a ratio of at least %d", v, LeakRatio)
		}
		if !strings.Contains(r.Error, dev.Name) || !slices.Contains(r.Explain, v.Why) {
			t.Errorf("error %q, explain %q: want the held device named and the verdict explained", r.Error, r.Explain)
		}
		var wait int64
		for _, p := range r.Phases {
			if p.Name == phase.WaitLoop {
				wait = p.TotalNS()
			}
		}
		if wait < int64(time.Second) {
			t.Errorf("phases %+v: want over a second in %s", r.Phases, phase.WaitLoop)
		}
		if oneByOne && r.Count != 0 {
			t.Errorf("one by one: count %d, want 0 (the held device is the first)", r.Count)
		}
		// The kernel finishes the request once the reference goes: the
		// sender it was left with replies and waits for the next one.
		snd := b.snd
		h.Release()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stack", snd.PID, snd.TID))
			if err != nil || !strings.Contains(string(st), "netdev_run_todo") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sender is still in the kernel 10 s after the hold was released:\n%s", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for {
			n := 0
			for _, d := range mustList(t, b) {
				if d.Name == dev.Name {
					n++
				}
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still listed 10 s after the hold was released", dev.Name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !oneByOne {
			continue // the batch took every device
		}
		// A new delete works (a new sender), and takes the rest.
		r, err = b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1 << 30, OneByOne: oneByOne})
		if err != nil || r.Result != ndst.ResultOK || r.Count != 2 {
			t.Errorf("Del after the release = %+v, %v; want the other 2 deleted", r, err)
		}
	}
}

// TestStuckKernelLines waits long enough (11 s) for the kernel's own
// warning, which it prints after net.core.netdev_unregister_timeout_secs
// (10 s by default), and checks that the result carries it.
func TestStuckKernelLines(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 11 s for the kernel's warning: skipped with -short")
	}
	if r, err := kmsg.Open(kmsg.Path); err != nil {
		t.Skipf("the kernel log is not readable: %v", err)
	} else {
		r.Close()
	}
	b, _, dev := holdFirst(t, 1, time.Minute)
	r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1 << 30, GiveUp: 11 * time.Second})
	if !errors.Is(err, ndst.ErrStuck) || r.Verdict == nil || r.Verdict.Kind != ndst.VerdictLeak {
		t.Fatalf("Del = %+v, %v; want stuck, leak", r, err)
	}
	want := "unregister_netdevice: waiting for " + dev.Name + " to become free. Usage count = "
	found := false
	for _, l := range r.KernelLog {
		found = found || strings.Contains(l, want)
	}
	if !found || r.Verdict.Waiting < 1 || len(r.Stuck) != 1 || r.Stuck[0].Name != dev.Name || r.Stuck[0].UsageCount < 2 {
		t.Errorf("kernel log %q, stuck %+v, waiting lines %d; want the kernel's line for %s and the device with its usage count",
			r.KernelLog, r.Stuck, r.Verdict.Waiting, dev.Name)
	}
}
