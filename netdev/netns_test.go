package netdev_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/waitrefs"
)

type nsKernel struct {
	kernel
	ns *netdev.Namespaces
}

// bootNetns boots a kernel of the line with its default strategy and RCU
// at HZ 250 with a namespace set.
func bootNetns(t *testing.T, profile string, cpus int) nsKernel {
	t.Helper()
	p, err := netdev.LookupProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{HZ: 250, CPUs: cpus, Watchdog: -1, Timers: p.Timers, MsleepExact: p.MsleepExact})
	if err != nil {
		t.Fatal(err)
	}
	ct := costs.Default()
	choice, err := p.Choose("", cpus, sim.PreemptNone)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rcu.New(e, p.RCUConfig(choice, 250, cpus, sim.PreemptNone, ct))
	if err != nil {
		t.Fatal(err)
	}
	w, err := waitrefs.Lookup(p.DefaultStrategy)
	if err != nil {
		t.Fatal(err)
	}
	reg := netdev.New(e, r, netdev.Options{Profile: p, Costs: ct, Waiter: w})
	return nsKernel{kernel{e, r, reg}, netdev.NewNamespaces(reg, netdev.DefaultNetnsCosts)}
}

// create makes namespaces named names, each with one link, a veth pair and
// lo up.
func (k nsKernel) create(t *testing.T, tk *sim.Task, names ...string) []*netdev.Netns {
	var out []*netdev.Netns
	veth, _ := netdevTemplate("veth%d")
	for _, name := range names {
		n, err := k.ns.Create(tk, name)
		if err != nil {
			t.Errorf("Create(%s) = %v", name, err)
			return out
		}
		if _, err := k.ns.AddLink(tk, n, tmpl); err != nil {
			t.Errorf("AddLink(%s) = %v", name, err)
		}
		if _, _, err := k.ns.AddVeth(tk, n, "eth0", veth); err != nil {
			t.Errorf("AddVeth(%s) = %v", name, err)
		}
		k.ns.SetLoUp(tk, n)
		out = append(out, n)
	}
	return out
}

// TestNetnsBatching: two namespaces whose last references drop before the
// cleanup work runs share one cleanup; a third queued while that cleanup
// runs waits for it and gets a cleanup of its own.
func TestNetnsBatching(t *testing.T) {
	for _, line := range []string{"2.6.33", "5.10", "6.18"} {
		t.Run(line, func(t *testing.T) {
			k := bootNetns(t, line, 1)
			var ns []*netdev.Netns
			var thirdQueued sim.Time
			err := k.do(t, func(tk *sim.Task) {
				ns = k.create(t, tk, "a", "b", "c")
				// One CPU, no preemption: the worker cannot run before
				// this task sleeps, so a and b are queued together.
				k.ns.Put(tk, ns[0])
				k.ns.Put(tk, ns[1])
				tk.Nanosleep(sim.Microsecond) // the worker takes {a, b}
				if ns[0].State != netdev.NetnsCleaning || ns[1].State != netdev.NetnsCleaning {
					t.Errorf("after the first sleep: a %s, b %s; want both cleaning", ns[0].State, ns[1].State)
				}
				k.ns.Put(tk, ns[2])
				thirdQueued = tk.Now()
				if !k.ns.WaitDone(tk, ns, 60*sim.Second) {
					t.Error("WaitDone = false")
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := k.ns.Batches(); !slices.Equal(got, []int{2, 1}) {
				t.Fatalf("Batches() = %v, want [2 1]", got)
			}
			a, b, c := ns[0], ns[1], ns[2]
			if a.Batch != 1 || b.Batch != 1 || c.Batch != 2 {
				t.Errorf("batches a %d, b %d, c %d; want 1, 1, 2", a.Batch, b.Batch, c.Batch)
			}
			if a.DoneAt != b.DoneAt {
				t.Errorf("a done at %v, b at %v; one cleanup frees both at once", a.DoneAt, b.DoneAt)
			}
			if !(thirdQueued < a.DoneAt) {
				t.Errorf("c queued at %v, after the first cleanup ended at %v; want it queued while it ran", thirdQueued, a.DoneAt)
			}
			// c's cleanup starts only after {a, b}'s: its devices go after
			// the first batch is done.
			if !(c.GoneAt > a.DoneAt) {
				t.Errorf("c's devices gone at %v, before the first cleanup ended at %v", c.GoneAt, a.DoneAt)
			}
			for _, n := range ns {
				if !(n.QueuedAt < n.GoneAt && n.GoneAt < n.DoneAt) {
					t.Errorf("%s: queued %v, gone %v, done %v; want in that order", n.Name, n.QueuedAt, n.GoneAt, n.DoneAt)
				}
			}
			// Every device went, host-side peers included.
			if k.reg.Len() != 0 {
				t.Errorf("initial namespace keeps %d devices; the veth peers go with their namespaces", k.reg.Len())
			}
			if st := k.reg.Stats(); st.Freed != 3*4 {
				t.Errorf("freed %d devices, want 12 (lo, a link, two veth ends per namespace)", st.Freed)
			}
		})
	}
}

// TestNetnsOneWorkItemEach: before batching (2.6.32) every namespace is a
// cleanup of its own, run one after another.
func TestNetnsOneWorkItemEach(t *testing.T) {
	k := bootNetns(t, "2.6.32", 1)
	var ns []*netdev.Netns
	err := k.do(t, func(tk *sim.Task) {
		ns = k.create(t, tk, "a", "b")
		k.ns.Put(tk, ns[0])
		k.ns.Put(tk, ns[1])
		k.ns.WaitDone(tk, ns, 60*sim.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.ns.Batches(); !slices.Equal(got, []int{1, 1}) {
		t.Fatalf("Batches() = %v, want [1 1]", got)
	}
	if !(ns[1].GoneAt > ns[0].DoneAt) {
		t.Errorf("b gone at %v before a done at %v; the single-threaded workqueue runs them in turn", ns[1].GoneAt, ns[0].DoneAt)
	}
	// default_device_exit's netdev_run_todo sleeps msleep(250) once for the
	// links (the in_device callbacks have all run by then), and
	// loopback_net_exit's once more for lo.
	if d := ns[0].DoneAt - ns[0].QueuedAt; d < 500*sim.Millisecond || d > 600*sim.Millisecond {
		t.Errorf("a took %v; want two 250 ms sleeps of netdev_wait_allrefs and a little more", d)
	}
}

// TestNetnsCreateWaitsForCleanup: with the single net_mutex (2.6.32) a
// namespace created while a cleanup runs waits for the cleanup's exit
// phase; with pernet_ops_rwsem (6.18) it does not.
func TestNetnsCreateWaitsForCleanup(t *testing.T) {
	for _, tc := range []struct {
		line string
		wait bool
	}{{"2.6.32", true}, {"6.18", false}} {
		t.Run(tc.line, func(t *testing.T) {
			k := bootNetns(t, tc.line, 2)
			var a, b *netdev.Netns
			var created sim.Time
			err := k.do(t, func(tk *sim.Task) {
				a = k.create(t, tk, "a")[0]
				k.ns.Put(tk, a)
				tk.Nanosleep(100 * sim.Microsecond) // the cleanup is under way on the other CPU
				n, err := k.ns.Create(tk, "b")
				if err != nil {
					t.Error(err)
					return
				}
				b, created = n, tk.Now()
				k.ns.WaitDone(tk, []*netdev.Netns{a}, 60*sim.Second)
			})
			if err != nil {
				t.Fatal(err)
			}
			st := k.ns.Stats()
			if (st.PernetWaits > 0) != tc.wait {
				t.Errorf("pernet lock waits = %d, want waiting %v", st.PernetWaits, tc.wait)
			}
			if tc.wait && !(created > a.GoneAt) {
				t.Errorf("b created at %v, before a's devices went at %v; net_mutex is held across the exits", created, a.GoneAt)
			}
			// Without net_mutex, b still takes RTNL to register its lo,
			// which the cleanup holds around unregister_netdevice_many.
			if b.State != netdev.NetnsAlive || b.Lo == nil {
				t.Errorf("b is %s with lo %v, want alive with lo", b.State, b.Lo)
			}
		})
	}
}

// TestNetnsStuckIsAResult: a namespace whose lo never loses a reference
// stops the run as stuck, bounded in virtual time.
func TestNetnsStuckIsAResult(t *testing.T) {
	k := bootNetns(t, "6.18", 2)
	k.reg.GiveUp = 30 * sim.Second
	err := k.do(t, func(tk *sim.Task) {
		n := k.create(t, tk, "a")[0]
		netdev.LeakReference(n.Lo)
		k.ns.Put(tk, n)
		k.ns.WaitDone(tk, []*netdev.Netns{n}, 600*sim.Second)
	})
	var stuck *netdev.StuckError
	if !errors.As(err, &stuck) || len(stuck.Devices) != 1 || stuck.Devices[0].Name != "lo" {
		t.Fatalf("run error = %v, want a *StuckError for lo", err)
	}
	if now := k.e.Now(); now > 40*sim.Second {
		t.Errorf("the leak was reported at %v of virtual time, want within the 30 s bound", now)
	}
}

// TestNetnsDeterministic: same inputs, same virtual times.
func TestNetnsDeterministic(t *testing.T) {
	run := func() []sim.Time {
		k := bootNetns(t, "6.18", 2)
		var out []sim.Time
		_ = k.do(t, func(tk *sim.Task) {
			ns := k.create(t, tk, "a", "b", "c", "d")
			for _, n := range ns {
				k.ns.Put(tk, n)
			}
			k.ns.WaitDone(tk, ns, 60*sim.Second)
			for _, n := range ns {
				out = append(out, n.QueuedAt, n.GoneAt, n.DoneAt)
			}
		})
		return out
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Errorf("two runs gave %v and %v", a, b)
	}
}

func netdevTemplate(s string) (ifname.Template, error) { return ifname.ParseTemplate(s) }

// TestNetnsUnmount: deleting a named namespace unmounts its /run/netns bind
// mount, whose namespace_unlock() waits for an expedited grace period (4.20
// on) before the last reference drops; 2.6.3x had no named namespaces, so
// the delete is the put alone.
func TestNetnsUnmount(t *testing.T) {
	for _, tc := range []struct {
		line string
		want netdev.UmountSync
		gps  int64 // expedited grace periods the unmounts wait for
	}{{"2.6.32", netdev.UmountNone, 0}, {"6.1", netdev.UmountExpedited, 2}, {"6.18", netdev.UmountExpedited, 2}} {
		t.Run(tc.line, func(t *testing.T) {
			p, _ := netdev.LookupProfile(tc.line)
			if p.Netns.UmountSync != tc.want {
				t.Fatalf("UmountSync = %v, want %v", p.Netns.UmountSync, tc.want)
			}
			k := bootNetns(t, tc.line, 2)
			var before, after int64
			var start, end sim.Time
			err := k.do(t, func(tk *sim.Task) {
				ns := k.create(t, tk, "a", "b")
				// Both unmounts before either put, so that no cleanup
				// (with grace periods of its own) runs meanwhile.
				before, start = k.r.Stats().ExpeditedGPs, tk.Now()
				for _, n := range ns {
					k.ns.Unmount(tk, n)
					if n.State != netdev.NetnsAlive {
						t.Errorf("%s is %s after Unmount; the put drops the reference", n.Name, n.State)
					}
				}
				after, end = k.r.Stats().ExpeditedGPs, tk.Now()
				for _, n := range ns {
					k.ns.Put(tk, n)
				}
				k.ns.WaitDone(tk, ns, 60*sim.Second)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := after - before; got != tc.gps {
				t.Errorf("the deletes waited for %d expedited grace periods, want %d", got, tc.gps)
			}
			if tc.gps == 0 && end != start {
				t.Errorf("the unmounts took %v; without a bind mount there is nothing to undo", end-start)
			}
			if tc.gps > 0 && end == start {
				t.Error("the unmounts took no time; each waits for its grace period")
			}
		})
	}
}

// TestFreedNamespacesAreNotKept: once its cleanup has freed a namespace,
// nothing of the namespace layer keeps it (or its registry) reachable, so a
// churn of many pods holds only the ones alive.
func TestFreedNamespacesAreNotKept(t *testing.T) {
	for _, line := range []string{"2.6.32", "6.18"} {
		t.Run(line, func(t *testing.T) {
			k := bootNetns(t, line, 2)
			var freed []weak.Pointer[netdev.Netns]
			var alive *netdev.Netns
			err := k.do(t, func(tk *sim.Task) {
				ns := k.create(t, tk, "a", "b", "c", "d")
				for _, n := range ns[:3] {
					freed = append(freed, weak.Make(n))
					k.ns.Put(tk, n)
				}
				if !k.ns.WaitDone(tk, ns[:3], 60*sim.Second) {
					t.Error("WaitDone = false")
				}
				alive = ns[3]
			})
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			for i, w := range freed {
				if w.Value() != nil {
					t.Errorf("freed namespace %d is still reachable", i)
				}
			}
			if n, ok := k.ns.Lookup("d"); !ok || n != alive || k.ns.Kind(alive.Lo) != netdev.KindLoopback {
				t.Errorf("the namespace still alive is lost: Lookup(d) = %v, %v", n, ok)
			}
		})
	}
}

// TestVethQueueSync: from 6.1 a veth pair made on a machine with more than
// one CPU waits two synchronize_net() under RTNL (veth_init_queues cuts
// each end's transmit queues to one), expedited there; on one CPU, and on
// 5.10, it waits none.
func TestVethQueueSync(t *testing.T) {
	for _, c := range []struct {
		line string
		cpus int
		want int64
	}{{"6.18", 2, 2}, {"6.1", 4, 2}, {"6.18", 1, 0}, {"5.10", 2, 0}} {
		t.Run(fmt.Sprintf("%s/%dcpu", c.line, c.cpus), func(t *testing.T) {
			k := bootNetns(t, c.line, c.cpus)
			var syncs int64
			var phases []sim.PhaseTime
			_ = k.do(t, func(tk *sim.Task) {
				n, err := k.ns.Create(tk, "a")
				if err != nil {
					t.Fatal(err)
				}
				veth, _ := netdevTemplate("veth%d")
				before := k.reg.Stats().SyncNet
				if _, _, err := k.ns.AddVeth(tk, n, "eth0", veth); err != nil {
					t.Fatal(err)
				}
				syncs = k.reg.Stats().SyncNet - before
				phases = tk.Phases()
			})
			if syncs != c.want {
				t.Errorf("a veth pair waited %d synchronize_net(), want %d", syncs, c.want)
			}
			exp := slices.ContainsFunc(phases, func(p sim.PhaseTime) bool { return p.Name == phase.SyncNetExp })
			if exp != (c.want > 0) {
				t.Errorf("expedited synchronize_net phase present = %v, want %v (phases %v)", exp, c.want > 0, phases)
			}
		})
	}
}
