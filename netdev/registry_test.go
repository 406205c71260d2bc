package netdev_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/waitrefs"
)

type kernel struct {
	e   *sim.Engine
	r   *rcu.RCU
	reg *netdev.Registry
}

func boot(t *testing.T, profile string, cpus int, strategy string, names netdev.NameAlloc) kernel {
	t.Helper()
	p, err := netdev.LookupProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{HZ: 1000, CPUs: cpus, Watchdog: -1})
	if err != nil {
		t.Fatal(err)
	}
	ct := costs.Default()
	r, err := rcu.New(e, p.RCUConfig(p.RCUs[0], 1000, cpus, sim.PreemptNone, ct))
	if err != nil {
		t.Fatal(err)
	}
	w, err := waitrefs.Lookup(strategy)
	if err != nil {
		t.Fatal(err)
	}
	reg := netdev.New(e, r, netdev.Options{Profile: p, Costs: ct, Waiter: w, NameAlloc: names})
	return kernel{e, r, reg}
}

// do runs fn as the module's task and the engine to completion.
func (k kernel) do(t *testing.T, fn func(tk *sim.Task)) error {
	t.Helper()
	k.e.Go("ndst", 0, false, fn)
	return k.e.Run()
}

var tmpl, _ = ifname.ParseTemplate("dummy%d")

func TestRegisterAllocatesLowestNameAndIndex(t *testing.T) {
	k := boot(t, "2.6.31", 1, "tick", netdev.NameBitmap)
	var devs []*netdev.Device
	err := k.do(t, func(tk *sim.Task) {
		for range 3 {
			k.reg.RTNLLock(tk)
			d, err := k.reg.Register(tk, tmpl)
			k.reg.RTNLUnlock(tk)
			if err != nil {
				t.Errorf("Register() = %v", err)
				return
			}
			devs = append(devs, d)
		}
		k.reg.RTNLLock(tk)
		k.reg.UnregisterMany(tk, devs[1:2]) // dummy1, ifindex 2
		k.reg.RTNLUnlock(tk)
		k.reg.RTNLLock(tk)
		d, _ := k.reg.Register(tk, tmpl)
		k.reg.RTNLUnlock(tk)
		devs = append(devs, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		name    string
		ifindex int
	}{{"dummy0", 1}, {"dummy1", 2}, {"dummy2", 3}, {"dummy1", 2}} {
		if devs[i].Name != want.name || devs[i].Ifindex != want.ifindex {
			t.Errorf("device %d = %s/%d, want %s/%d (lowest free name and ifindex)", i, devs[i].Name, devs[i].Ifindex, want.name, want.ifindex)
		}
	}
	// registration, in_device, arp_parms, inet6_dev, nd_parms.
	if got := devs[0].Refcount(); got != 5 {
		t.Errorf("refcount of a registered 2.6.31 device = %d (%s), want 5", got, devs[0].Holders())
	}
	if devs[1].State != netdev.Freed || devs[1].Refcount() != 0 {
		t.Errorf("unregistered device: state %v refcount %d, want freed at 0", devs[1].State, devs[1].Refcount())
	}
}

func TestProfilesWaitForDifferentThings(t *testing.T) {
	tests := []struct {
		profile                      string
		syncNet, barriers, expedited int64
		refsAfterRegister            int
	}{
		{"2.6.31", 2 * 4, 0, 0, 5}, // two synchronize_net per device, 4 devices
		{"2.6.33", 2, 0, 0, 5},     // one batch: the same two synchronize_net, once
		{"2.6.36", 1, 1, 0, 5},     // ef885afb: rcu_barrier replaces the second
		{"5.10", 3, 1, 3, 5},       // close + two expedited under RTNL, one barrier in run_todo
		{"6.1", 3, 1, 3, 6},        // the same; the device's own reference (ready at 1)
		{"6.18", 2, 1, 2, 6},       // closing a down device no longer synchronizes
	}
	for _, tc := range tests {
		k := boot(t, tc.profile, 2, "msleep250", netdev.NameBitmap)
		var refs int
		err := k.do(t, func(tk *sim.Task) {
			var devs []*netdev.Device
			for range 4 {
				k.reg.RTNLLock(tk)
				d, _ := k.reg.Register(tk, tmpl)
				k.reg.RTNLUnlock(tk)
				devs = append(devs, d)
			}
			refs = devs[0].Refcount()
			if k.reg.Profile().Batched {
				k.reg.RTNLLock(tk)
				k.reg.UnregisterMany(tk, devs)
				k.reg.RTNLUnlock(tk)
				return
			}
			for _, d := range devs {
				k.reg.RTNLLock(tk)
				k.reg.UnregisterMany(tk, []*netdev.Device{d})
				k.reg.RTNLUnlock(tk)
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.profile, err)
		}
		s, rs := k.reg.Stats(), k.r.Stats()
		if s.SyncNet != tc.syncNet || s.Barriers != tc.barriers || rs.ExpeditedGPs != tc.expedited || s.Freed != 4 {
			t.Errorf("%s: synchronize_net=%d barriers=%d expedited=%d freed=%d; want %d %d %d 4",
				tc.profile, s.SyncNet, s.Barriers, rs.ExpeditedGPs, s.Freed, tc.syncNet, tc.barriers, tc.expedited)
		}
		if refs != tc.refsAfterRegister {
			t.Errorf("%s: refcount after register = %d, want %d", tc.profile, refs, tc.refsAfterRegister)
		}
	}
}

func TestKernelNameScanRunsOutOfSlots(t *testing.T) {
	k := boot(t, "2.6.31", 1, "tick", netdev.NameScan)
	small, _ := ifname.ParseTemplate("abcdefghijklmn%d") // one digit: 10 names
	var err error
	n := 0
	k.do(t, func(tk *sim.Task) {
		k.reg.RTNLLock(tk)
		defer k.reg.RTNLUnlock(tk)
		for ; n < 11; n++ {
			if _, err = k.reg.Register(tk, small); err != nil {
				return
			}
		}
	})
	if n != 10 || !errors.Is(err, netdev.ErrNameSpace) {
		t.Errorf("registered %d then %v; want 10 then ErrNameSpace", n, err)
	}
}

func TestRestoreRejectsDuplicates(t *testing.T) {
	k := boot(t, "2.6.31", 1, "tick", netdev.NameBitmap)
	if err := k.reg.Restore("dummy0", 1); err != nil {
		t.Fatal(err)
	}
	if err := k.reg.Restore("dummy0", 2); err == nil {
		t.Errorf("Restore of a duplicate name succeeded")
	}
	if err := k.reg.Restore("dummy9", 1); err == nil {
		t.Errorf("Restore of a duplicate ifindex succeeded")
	}
	if k.reg.Len() != 1 {
		t.Errorf("Len() = %d after failed restores, want 1", k.reg.Len())
	}
}

func TestLeakedReferenceStopsTheRunAsStuck(t *testing.T) {
	k := boot(t, "2.6.31", 1, "tick", netdev.NameBitmap)
	k.reg.GiveUp = 30 * sim.Second
	var logs []string
	k.e.SetLogger(func(_ sim.Time, f string, a ...any) { logs = append(logs, f) })
	err := k.do(t, func(tk *sim.Task) {
		k.reg.RTNLLock(tk)
		d, _ := k.reg.Register(tk, tmpl)
		k.reg.RTNLUnlock(tk)
		netdev.LeakReference(d) // a subsystem that never lets go
		k.reg.RTNLLock(tk)
		k.reg.UnregisterMany(tk, []*netdev.Device{d})
		k.reg.RTNLUnlock(tk)
	})
	var stuck *netdev.StuckError
	if !errors.As(err, &stuck) || len(stuck.Devices) != 1 || !strings.Contains(stuck.Devices[0].Holders, "registration") {
		t.Fatalf("Run() = %v, want a StuckError naming the device and its holder", err)
	}
	if s := k.reg.Stats(); s.Warnings < 2 || s.Rebroadcasts < 20 {
		t.Errorf("warnings=%d rebroadcasts=%d, want the 10 s warning and the 1 s rebroadcast repeated", s.Warnings, s.Rebroadcasts)
	}
}
