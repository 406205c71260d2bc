package netdev_test

import (
	"slices"
	"testing"

	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// TestSocketDefersCleanup: a namespace deleted while the netlink socket
// closed in it is still being freed is queued for cleanup only when the
// socket's RCU callback drops its reference, a grace period later, and
// not with a namespace deleted at the same time without one; a socket
// freed before the delete defers nothing.
func TestSocketDefersCleanup(t *testing.T) {
	k := bootNetns(t, "6.18", 1)
	var ns []*netdev.Netns
	var put, bTaken sim.Time
	var aAtB netdev.NetnsState
	var bAtB netdev.NetnsState
	err := k.do(t, func(tk *sim.Task) {
		ns = k.create(t, tk, "a", "b", "c")
		a, b, c := ns[0], ns[1], ns[2]
		// c: its socket is freed (the callback has run) before its delete.
		k.ns.OpenSocket(c)
		k.ns.CloseSocket(tk, c)
		k.r.Barrier(tk)
		k.ns.Put(tk, c)
		if !k.ns.WaitDone(tk, ns[2:], 60*sim.Second) {
			t.Error("WaitDone(c) = false")
		}
		// a: closed just before its delete; b: no socket.
		k.ns.OpenSocket(a)
		k.ns.CloseSocket(tk, a)
		put = tk.Now()
		k.ns.Put(tk, a)
		k.ns.Put(tk, b)
		tk.Nanosleep(sim.Microsecond) // the worker takes what is queued
		bTaken = tk.Now()
		aAtB, bAtB = a.State, b.State
		if !k.ns.WaitDone(tk, ns[:2], 60*sim.Second) {
			t.Error("WaitDone(a, b) = false")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := ns[0], ns[1], ns[2]
	if c.Batch != 1 {
		t.Errorf("c in cleanup run %d, want 1 (its socket was freed before its delete)", c.Batch)
	}
	if bAtB != netdev.NetnsCleaning || aAtB != netdev.NetnsQueued {
		t.Errorf("at %v: a %s, b %s; want a queued (its socket's reference still held), b cleaning", bTaken, aAtB, bAtB)
	}
	if got := k.ns.Batches(); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("Batches() = %v, want [1 1 1]: a's cleanup is a run of its own after b's", got)
	}
	if !(a.Batch == 3 && b.Batch == 2) {
		t.Errorf("a in run %d, b in run %d; want 3 and 2", a.Batch, b.Batch)
	}
	if !(put <= a.QueuedAt && a.QueuedAt < b.QueuedAt) {
		t.Errorf("a's delete at %v, QueuedAt %v, b's %v; want a's delete's time, before b's", put, a.QueuedAt, b.QueuedAt)
	}
	// The reference goes after a grace period: a's devices are gone no
	// sooner than one after its delete.
	if gp := 2 * k.e.Period(); a.GoneAt-a.QueuedAt < gp {
		t.Errorf("a's devices gone %v after its delete, less than two jiffies (%v): no grace period for its socket", a.GoneAt-a.QueuedAt, gp)
	}
	if st := k.ns.Stats(); st.Queued != 3 || st.Freed != 3 {
		t.Errorf("queued %d, freed %d; want 3 and 3", st.Queued, st.Freed)
	}
}
