package emu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/statefile"
)

// VLANs and macvlans on the emulated kernel (netdev/vlan.go): add --kind
// vlan|macvlan --parent NAME, persisted as the state file's lower-device
// links (format version 3).

// addChildren implements Add for the child kinds.
func (b *Backend) addChildren(ctx context.Context, req ndst.AddRequest) (*ndst.Result, error) {
	if err := req.CheckChildren(); err != nil {
		return nil, err
	}
	kind := netdev.KindVLAN
	if req.Kind == ndst.KindMacvlan {
		kind = netdev.KindMacvlan
	}
	parent, ok := b.findDevice(req.Parent)
	if !ok {
		return nil, ndst.Usagef("--parent %s: no such device in %s (%s)", req.Parent, b.where(), b.describe())
	}
	if parent.Flags&(flagLoopback|flagVeth) == flagLoopback {
		return nil, ndst.Usagef("--parent %s: a VLAN or macvlan on lo is refused by the kernel (lo is not an Ethernet device)", req.Parent)
	}
	if hasLinkConfig(parent.Flags) {
		if c, err := linkConfig(parent.Flags); err == nil && (c.Kind == netdev.KindVLAN || c.Kind == netdev.KindMacvlan) {
			return nil, ndst.Usagef("--parent %s is itself a %s; stacked VLANs and macvlans are not modelled", req.Parent, c.Kind)
		}
	}
	names := make([]string, req.Count)
	taken := map[string]bool{}
	for _, d := range b.devices() {
		taken[d.Name] = true
	}
	mtmpl := req.Template
	if mtmpl == (ndst.Template{}) {
		mtmpl, _ = ndst.ParseTemplate(ndst.MacvlanTemplate)
	}
	if kind == netdev.KindVLAN {
		for i := range names {
			n, err := ndst.VLANName(req.Parent, req.VLANID+i, req.Template)
			if err != nil {
				return nil, err
			}
			if taken[n] {
				return nil, ndst.Usagef("VLAN name %s is taken in %s", n, b.where())
			}
			names[i] = n
		}
	} else if free := mtmpl.MaxNumber() + 1 - b.countMatching(mtmpl); req.Count > free {
		return nil, ndst.Usagef("template %s has room for %d more names, asked for %d", mtmpl, free, req.Count)
	}
	if err := checkMemory(b.stateUnits() + req.Count); err != nil {
		return nil, err
	}
	res := b.newResult("add", false)
	res.Kind = req.Kind
	res.Notes = append(res.Notes, fmt.Sprintf("%s on %s", plural(req.Count, req.Kind), req.Parent))
	wall := time.Now()
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	p, _ := k.reg.ByName(req.Parent)
	if kind == netdev.KindVLAN {
		for i := range req.Count {
			if _, dup := k.reg.ChildByID(p, req.VLANID+i); dup {
				return nil, ndst.Usagef("VLAN %d exists on %s", req.VLANID+i, req.Parent)
			}
		}
	}
	lat := make([]int64, 0, req.Count)
	created := 0
	var addErr error
	virt, runErr := k.run(ctx, func(t *sim.Task, _ sim.Time) {
		for i := range req.Count {
			if err := ctx.Err(); err != nil {
				addErr = err
				return
			}
			s := t.Now()
			l := netdev.Lower{Parent: p}
			name := names[i]
			if kind == netdev.KindVLAN {
				l.ID = req.VLANID + i
			}
			k.reg.RTNLLock(t)
			var err error
			if kind == netdev.KindMacvlan {
				name, err = k.reg.AllocName(mtmpl)
			}
			if err == nil {
				_, err = k.reg.RegisterChild(t, name, kind, l)
			}
			k.reg.RTNLUnlock(t)
			if err != nil {
				addErr = err
				return
			}
			created++
			lat = append(lat, int64(t.Now()-s))
			t.CondResched()
		}
	})
	if runErr != nil || addErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped after %v virtual: %d of %d %ss had been created; the state file is unchanged", virt, created, req.Count, req.Kind))
	}
	return b.finish(k, res, virt, time.Since(wall), lat, created, errors.Join(runErr, addErr))
}

// findDevice looks a persisted device of the backend's namespace up by
// name.
func (b *Backend) findDevice(name string) (statefile.Device, bool) {
	for _, d := range b.devices() {
		if d.Name == name {
			return d, true
		}
	}
	return statefile.Device{}, false
}

// where names the namespace the backend acts in.
func (b *Backend) where() string {
	if b.r.cfg.Netns != "" {
		return "emulated namespace " + b.r.cfg.Netns
	}
	return "the emulated namespace"
}

// restoreLowers links the restored children to their lower devices.
func (b *Backend) restoreLowers(k *kernel) error {
	for _, l := range b.state.Lowers {
		reg := k.hostReg()
		if l.Child.Netns != "" {
			n, ok := k.namespaces().Lookup(l.Child.Netns)
			if !ok {
				return fmt.Errorf("state file %s: lower link of namespace %s, which is missing", b.r.cfg.StatePath, l.Child.Netns)
			}
			reg = n.Reg
		}
		c, ok1 := reg.ByIndex(int(l.Child.Ifindex))
		p, ok2 := reg.ByIndex(int(l.Parent))
		if !ok1 || !ok2 {
			return fmt.Errorf("state file %s: lower link %v -> %d: a device is missing", b.r.cfg.StatePath, l.Child, l.Parent)
		}
		kind := reg.LinkConfigOf(c).Kind
		if err := reg.RestoreChild(c, kind, netdev.Lower{Parent: p, ID: int(l.ID)}); err != nil {
			return fmt.Errorf("state file %s: %w", b.r.cfg.StatePath, err)
		}
	}
	return nil
}

// hostReg is the initial namespace's registry.
func (k *kernel) hostReg() *netdev.Registry {
	if k.ns != nil {
		return k.ns.Host()
	}
	return k.reg
}

// lowers lists the children of reg (of namespace ns, "" the initial one).
func lowersOf(reg *netdev.Registry, ns string) []statefile.LowerLink {
	var out []statefile.LowerLink
	reg.Range(func(d *netdev.Device) bool {
		if l, ok := reg.LowerOf(d); ok {
			out = append(out, statefile.LowerLink{Child: statefile.End{Netns: ns, Ifindex: int32(d.Ifindex)},
				Parent: int32(l.Parent.Ifindex), ID: uint16(l.ID)})
		}
		return true
	})
	return out
}

// childNote says how many VLANs and macvlans outside devs go with their
// lower devices among devs.
func childNote(reg *netdev.Registry, devs []*netdev.Device) string {
	in := make(map[*netdev.Device]bool, len(devs))
	for _, d := range devs {
		in[d] = true
	}
	n := 0
	var parent string
	for _, d := range devs {
		for _, c := range reg.Children(d) {
			if !in[c] {
				n++
				parent = d.Name
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the %d VLANs and macvlans on %s go with it: its NETDEV_UNREGISTER handler unregisters them in a batch of their own, nested in its own", n, parent)
}
