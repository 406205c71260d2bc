package emu

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/statefile"
)

// Up devices with addresses on the emulated kernel (netdev/addr.go): the
// state file keeps each device's configuration in its flags, beside the
// namespace layer's (flagUp, flagLoopback, flagVeth).
const (
	flagForwarding6 = 1 << 3
	flagKindShift   = 4 // three bits: netdev.Kind of ifb, vlan, macvlan
	flagKindMask    = 7 << flagKindShift
	flagV4Shift     = 8 // eight bits: IPv4 addresses
	flagV6Shift     = 16
	flagLinkMask    = flagForwarding6 | flagKindMask | 0xff<<flagV4Shift | 0xff<<flagV6Shift
)

// knownFlags are every flag bit a state file's device may carry.
const knownFlags = flagUp | flagLoopback | flagVeth | flagLinkMask

// checkFlags refuses a device's flags with a bit this ndst does not define
// (a newer ndst's, or damage the checksum did not catch), or lo and veth
// at once: a state so read would restore a device other than the one
// saved.
func checkFlags(d statefile.Device) string {
	switch {
	case d.Flags&^knownFlags != 0:
		return fmt.Sprintf("device %s (ifindex %d) has flag bits %#x that this ndst does not define", d.Name, d.Ifindex, d.Flags&^knownFlags)
	case d.Flags&flagLoopback != 0 && d.Flags&flagVeth != 0:
		return fmt.Sprintf("device %s (ifindex %d) is marked both lo and a veth end (flags %#x)", d.Name, d.Ifindex, d.Flags)
	}
	return ""
}

// linkFlags encodes a device's configuration; for a device the namespace
// layer knows (lo, a veth end) only its address bits are used.
func linkFlags(c netdev.LinkConfig) uint32 {
	var f uint32
	if c.Up {
		f |= flagUp
	}
	if c.Forwarding6 {
		f |= flagForwarding6
	}
	f |= uint32(c.Kind) << flagKindShift & flagKindMask
	f |= uint32(c.V4) << flagV4Shift
	f |= uint32(c.V6) << flagV6Shift
	return f
}

// linkConfig decodes the configuration of a device whose flags carry one
// (not lo, not a veth end).
func linkConfig(flags uint32) (netdev.LinkConfig, error) {
	c := netdev.LinkConfig{
		Kind:        netdev.Kind(flags & flagKindMask >> flagKindShift),
		Up:          flags&flagUp != 0,
		V4:          int(flags >> flagV4Shift & 0xff),
		V6:          int(flags >> flagV6Shift & 0xff),
		Forwarding6: flags&flagForwarding6 != 0,
	}
	if c.Kind != netdev.KindDummy && c.Kind != netdev.KindIfb && c.Kind != netdev.KindVLAN && c.Kind != netdev.KindMacvlan {
		return c, fmt.Errorf("device flags %#x name no link kind", flags)
	}
	return c, c.Validate()
}

// hasLinkConfig reports whether a device's flags are a link configuration
// rather than the namespace layer's (lo, a veth end).
func hasLinkConfig(flags uint32) bool { return flags&(flagLoopback|flagVeth) == 0 }

// restoreLink lists a persisted device of reg with its configuration.
func restoreLink(reg *netdev.Registry, d statefile.Device) error {
	c, err := linkConfig(d.Flags)
	if err != nil {
		return fmt.Errorf("device %s: %w", d.Name, err)
	}
	if err := reg.Restore(d.Name, int(d.Ifindex)); err != nil {
		return err
	}
	dev, _ := reg.ByIndex(int(d.Ifindex))
	return reg.RestoreLink(dev, c)
}

// linkOf is the configuration of the devices an add makes.
func linkOf(req ndst.AddRequest) (netdev.LinkConfig, error) {
	a := req.Addrs
	if err := a.Normalize(); err != nil {
		return netdev.LinkConfig{}, err
	}
	c := netdev.LinkConfig{Up: a.Up, V4: a.V4, V6: a.V6, Forwarding6: a.Forwarding6}
	switch req.Kind {
	case "", "dummy":
	case "ifb":
		c.Kind = netdev.KindIfb
	default:
		return c, ndst.Usagef("--kind %s: the emulated kernel adds dummy, ifb, vlan and macvlan devices (the last two with --parent)", req.Kind)
	}
	return c, nil
}

// addrCounters adds what up devices brought to a run's counters: how many
// were unregistered, and which references made the devices ready (only
// for runs that unregistered up devices, so other outputs keep their
// counters).
func addrCounters(s netdev.Stats, m map[string]int64) {
	if s.UpUnregistered == 0 {
		return
	}
	m["up_devices_unregistered"] = s.UpUnregistered
	for h, n := range s.LastRef {
		if n > 0 {
			m["last_ref_"+netdev.Holder(h).String()] = n
		}
	}
	m["last_ref_nested_rcu"] = s.LastRefNested
}

// lastRef names the holder whose release made most devices ready, from the
// run's counters ("" when the run had no up devices).
func lastRef(c map[string]int64) (string, int64) {
	best, n := "", int64(0)
	for k, v := range c {
		if h, ok := strings.CutPrefix(k, "last_ref_"); ok && h != "nested_rcu" && (v > n || v == n && h < best) {
			best, n = h, v
		}
	}
	return best, n
}
