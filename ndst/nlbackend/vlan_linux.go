package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

// VLANs and macvlans on the real kernel: "add N --kind vlan|macvlan
// --parent NAME" makes N children of a link of ndst's own (in its
// namespace and one of its groups), each one RTM_NEWLINK with IFLA_LINK
// naming the parent, a window of them in one datagram, all in one new
// group of their own so that "del" of their range is one group delete.
// Deleting the parent takes them too (the kernel's own handlers).

// Link attribute numbers of the VLAN and macvlan drivers.
const (
	iflaVLANID        = 1 // IFLA_VLAN_ID
	iflaMacvlanMode   = 1 // IFLA_MACVLAN_MODE
	macvlanModeBridge = 4 // MACVLAN_MODE_BRIDGE
)

// appendNewChild appends an RTM_NEWLINK of a VLAN (id > 0) or macvlan on
// parent; no acknowledgement asked for.
func appendNewChild(m *msg, seq uint32, kind, name string, parent int, id int, group uint32) {
	off := m.begin(unix.RTM_NEWLINK, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL, seq)
	m.ifinfo(0)
	m.str(unix.IFLA_IFNAME, name)
	m.u32(unix.IFLA_LINK, uint32(parent))
	m.u32(unix.IFLA_GROUP, group)
	li := m.nest(unix.IFLA_LINKINFO)
	m.attr(unix.IFLA_INFO_KIND, []byte(kind))
	data := m.nest(unix.IFLA_INFO_DATA)
	if kind == ndst.KindVLAN {
		var v [2]byte
		native.PutUint16(v[:], uint16(id))
		m.attr(iflaVLANID, v[:])
	} else {
		m.u32(iflaMacvlanMode, macvlanModeBridge)
	}
	m.unnest(data)
	m.unnest(li)
	m.end(off)
}

// addChildren implements Add for the child kinds.
func (b *Backend) addChildren(ctx context.Context, req ndst.AddRequest) (*ndst.Result, error) {
	if err := req.CheckChildren(); err != nil {
		return nil, err
	}
	if req.Count < 1 || req.Count > ndst.MaxCount {
		return nil, ndst.Usagef("count must be in 1..%d, got %d", ndst.MaxCount, req.Count)
	}
	unlock, err := b.beginChange(ctx, "add")
	if err != nil {
		return nil, err
	}
	defer unlock()
	links, err := b.dump()
	if err != nil {
		return nil, fmt.Errorf("add: list devices in namespace %s: %w", b.o.Netns, err)
	}
	var parent *link
	for i := range links {
		if links[i].Name == req.Parent {
			parent = &links[i]
		}
	}
	switch {
	case parent == nil:
		return nil, ndst.Usagef("--parent %s: no such device in namespace %s; make one with 'ndst --backend netlink --kind ifb add 1' (ndst puts children only on its own devices)", req.Parent, b.o.Netns)
	case !Owned(parent.Group):
		return nil, ndst.Usagef("--parent %s is not ndst's (interface group %#x): ndst puts VLANs and macvlans only on devices it made in namespace %s", req.Parent, parent.Group, b.o.Netns)
	case parent.Kind == ndst.KindVLAN || parent.Kind == ndst.KindMacvlan:
		return nil, ndst.Usagef("--parent %s is itself a %s; ndst does not stack them", req.Parent, parent.Kind)
	}
	names := make([]string, req.Count)
	taken := map[string]bool{}
	for _, l := range links {
		taken[l.Name] = true
		for _, a := range l.AltNames {
			taken[a] = true
		}
	}
	if req.Kind == ndst.KindVLAN {
		// A VLAN id already on the parent is the kernel's EEXIST.
		for i := range names {
			if names[i], err = ndst.VLANName(req.Parent, req.VLANID+i, req.Template); err != nil {
				return nil, err
			}
			if taken[names[i]] {
				return nil, ndst.Usagef("VLAN name %s is taken in namespace %s", names[i], b.o.Netns)
			}
		}
	} else {
		t := req.Template
		if t == (ndst.Template{}) {
			t, _ = ndst.ParseTemplate(ndst.MacvlanTemplate)
		}
		if names, err = freeLinkNames(t, links, req.Count); err != nil {
			return nil, err
		}
	}
	if !b.o.NoMemoryCheck {
		mem, err := readMeminfo()
		if err != nil {
			return nil, fmt.Errorf("add: cannot bound its memory: %w (--no-memory-check skips the bound)", err)
		}
		// A child costs what a dummy does and more: 64 KiB is far above
		// what either driver allocates (refused, not measured, as the
		// plain add measures its own).
		if need := uint64(req.Count) * 64 << 10; need > mem.usable() {
			return nil, ndst.Usagef("add %d %ss would need up to %s of kernel memory; %s is available (--no-memory-check overrides)",
				req.Count, req.Kind, humanBytes(float64(need)), humanBytes(float64(mem.usable())))
		}
	}
	group := freeGroup(links)
	res := b.newResult("add")
	defer b.hostFacts(res)
	res.Kind = req.Kind
	res.Notes = append(res.Notes, fmt.Sprintf("%d %ss on %s", req.Count, req.Kind, req.Parent))
	var lat []int64
	made := 0
	start := time.Now()
	var firstErr error
	var m msg
	for i := 0; i < req.Count && firstErr == nil; {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		end := min(i+window, req.Count)
		if req.OneByOne {
			end = i + 1
		}
		m.b = m.b[:0]
		sent := map[uint32]int{}
		for j := i; j < end; j++ {
			s := b.c.nextSeq()
			sent[s] = j
			id := 0
			if req.Kind == ndst.KindVLAN {
				id = req.VLANID + j
			}
			appendNewChild(&m, s, req.Kind, names[j], parent.Index, id, group)
		}
		t0 := time.Now()
		if err := b.c.send(m.b); err != nil {
			firstErr = fmt.Errorf("send %d RTM_NEWLINKs: %w", end-i, err)
			break
		}
		failed := map[int]bool{}
		err := b.bounded(ackTimeout+time.Second, "create children", func() error {
			return b.c.barrier(sent, time.Now().Add(ackTimeout), func(j int, e error) {
				failed[j] = true
				if firstErr == nil {
					firstErr = b.childError(req.Kind, names[j], req.Parent, e)
				}
			})
		})
		if req.OneByOne {
			lat = append(lat, int64(time.Since(t0)))
		}
		if err != nil {
			firstErr = fmt.Errorf("add: %w (the outcome of the last %d requests is unknown)", err, end-i)
			break
		}
		made += end - i - len(failed)
		i = end
	}
	res.WallNS = int64(time.Since(start))
	res.Count = made
	if made > 0 {
		b.made = true
		res.Counters = map[string]int64{"per_device_ns": res.WallNS / int64(made)}
	}
	res.Latency = ndst.Summarize(lat)
	if firstErr == nil && b.vanished() {
		firstErr = b.errVanished("add")
	}
	if firstErr != nil {
		if errors.Is(firstErr, context.Canceled) {
			firstErr = fmt.Errorf("add interrupted: %w", firstErr)
		}
		return fail(res, fmt.Errorf("%w (created %d of %d %ss; ndst del or reset removes them)", firstErr, made, req.Count, req.Kind))
	}
	return res, nil
}

// childError explains a failed child create.
func (b *Backend) childError(kind, name, parent string, err error) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return ndst.Usagef("--kind %s: this kernel has no %s link type (CONFIG_%s is not set, or its module is not loaded): %v", kind, kind,
			map[string]string{ndst.KindVLAN: "VLAN_8021Q", ndst.KindMacvlan: "MACVLAN"}[kind], err)
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("create %s %s on %s: it exists (a VLAN with that id, or the name): %w", kind, name, parent, err)
	}
	return fmt.Errorf("create %s %s on %s: %w", kind, name, parent, err)
}
