package netdev_test

import (
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/waitrefs"
)

// childUnregisterCPU is the unregister CPU of 10 macvlans on one device,
// deleted as one batch, with macvlan_unregister_ns = extra.
func childUnregisterCPU(t *testing.T, extra int64) sim.Time {
	_, un := childCPU(t, "macvlan_unregister_ns", extra)
	return un
}

// childCPU is the register and the unregister CPU of 10 macvlans on one
// device, created one after the other and deleted as one batch, with the
// cost key = extra.
func childCPU(t *testing.T, key string, extra int64) (register, unregister sim.Time) {
	t.Helper()
	p, err := netdev.LookupProfile("6.18")
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{HZ: 250, CPUs: 2, Watchdog: -1, Timers: p.Timers, MsleepExact: p.MsleepExact})
	if err != nil {
		t.Fatal(err)
	}
	ct := costs.Default()
	ct.Extra = map[string]int64{key: extra}
	choice, err := p.Choose("", 2, sim.PreemptNone)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rcu.New(e, p.RCUConfig(choice, 250, 2, sim.PreemptNone, ct))
	if err != nil {
		t.Fatal(err)
	}
	w, err := waitrefs.Lookup(p.DefaultStrategy)
	if err != nil {
		t.Fatal(err)
	}
	reg := netdev.New(e, r, netdev.Options{Profile: p, Costs: ct, Waiter: w})
	var cpu, regCPU sim.Time
	e.Go("ndst", 0, false, func(tk *sim.Task) {
		reg.RTNLLock(tk)
		parent, err := reg.RegisterNamed(tk, "ifb0")
		if err != nil {
			t.Error(err)
			return
		}
		regBefore := phaseCPU(tk, phase.Register)
		var kids []*netdev.Device
		for _, name := range []string{"mv0", "mv1", "mv2", "mv3", "mv4", "mv5", "mv6", "mv7", "mv8", "mv9"} {
			d, err := reg.RegisterChild(tk, name, netdev.KindMacvlan, netdev.Lower{Parent: parent})
			if err != nil {
				t.Error(err)
				return
			}
			kids = append(kids, d)
		}
		regCPU = phaseCPU(tk, phase.Register) - regBefore
		reg.RTNLUnlock(tk)
		before := unregisterCPU(tk)
		reg.RTNLLock(tk)
		reg.UnregisterMany(tk, kids)
		reg.RTNLUnlock(tk)
		cpu = unregisterCPU(tk) - before
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return regCPU, cpu
}

func unregisterCPU(tk *sim.Task) sim.Time { return phaseCPU(tk, phase.Unregister) }

func phaseCPU(tk *sim.Task, name string) sim.Time {
	for _, p := range tk.Phases() {
		if p.Name == name {
			return p.CPU
		}
	}
	return 0
}

// TestChildRegisterCost: a macvlan's register cost beyond a plain
// device's may be negative too, charged in the register phase, and the
// child's register work stays >= 0.
func TestChildRegisterCost(t *testing.T) {
	base, _ := childCPU(t, "macvlan_register_ns", 0)
	dearer, _ := childCPU(t, "macvlan_register_ns", 20_000)
	cheaper, _ := childCPU(t, "macvlan_register_ns", -20_000)
	floor, _ := childCPU(t, "macvlan_register_ns", -1_000_000_000)
	if base <= 0 || dearer-base != 10*20_000 || base-cheaper != 10*20_000 {
		t.Errorf("register CPU of 10 macvlans: %v at +20 µs each, %v at 0, %v at -20 µs each; want steps of 200 µs", dearer, base, cheaper)
	}
	if floor != 0 {
		t.Errorf("with a cost below minus a device's register, the register CPU is %v; want 0", floor)
	}
}

// TestChildUnregisterCost: a macvlan's unregister cost beyond a plain
// device's may be negative, and the child's unregister work stays >= 0.
func TestChildUnregisterCost(t *testing.T) {
	base := childUnregisterCPU(t, 0)
	dearer := childUnregisterCPU(t, 20_000)
	cheaper := childUnregisterCPU(t, -20_000)
	floor := childUnregisterCPU(t, -1_000_000_000)
	if dearer-base != 10*20_000 || base-cheaper != 10*20_000 {
		t.Errorf("unregister CPU of 10 macvlans: %v at +20 µs each, %v at 0, %v at -20 µs each; want steps of 200 µs", dearer, base, cheaper)
	}
	if floor < 0 || floor >= cheaper {
		t.Errorf("with a cost below minus a device's unregister, the CPU is %v; want at least 0 and less than %v", floor, cheaper)
	}
}
