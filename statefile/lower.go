package statefile

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The lower-device section of format version 3: VLANs and macvlans, each a
// device of a namespace linked to its lower device in the same namespace.
// A state without such links is written as version 2 (or 1), so files
// that have none stay byte for byte what older ndst reads.

// LowerLink is one VLAN or macvlan: Child's lower device is the device with
// ifindex Parent in the same namespace; ID is the VLAN id (1..4094), 0 for
// a macvlan.
type LowerLink struct {
	Child  End
	Parent int32
	ID     uint16
}

// minLower is the smallest encoded link: four 1-byte uvarints.
const minLower = 4

// maxVLANID is the largest VLAN id.
const maxVLANID = 4094

// devicesOf returns the devices of namespace index i (0: the initial one).
func devicesOf(s *State, i int) []Device {
	if i == 0 {
		return s.Devices
	}
	return s.Namespaces[i-1].Devices
}

// sizeLowers validates the lower-device section of s and returns its size.
func sizeLowers(s *State) (int, error) {
	index := netnsIndex(s)
	size := uvarintLen(uint64(len(s.Lowers)))
	var prev endKey
	for i, l := range s.Lowers {
		ns, ok := 0, true
		if l.Child.Netns != "" {
			ns, ok = index[l.Child.Netns]
		}
		if !ok {
			return 0, invalidf("lower link %d: no namespace %q", i, l.Child.Netns)
		}
		devs := devicesOf(s, ns)
		switch {
		case !hasDevice(devs, l.Child.Ifindex):
			return 0, invalidf("lower link %d: %sno device with ifindex %d", i, inNetns(l.Child.Netns), l.Child.Ifindex)
		case !hasDevice(devs, l.Parent) || l.Parent == l.Child.Ifindex:
			return 0, invalidf("lower link %d: %sno lower device with ifindex %d", i, inNetns(l.Child.Netns), l.Parent)
		case l.ID > maxVLANID:
			return 0, invalidf("lower link %d: VLAN id %d is out of 1..%d", i, l.ID, maxVLANID)
		}
		k := endKey{ns, l.Child.Ifindex}
		if i > 0 && !prev.less(k) {
			return 0, invalidf("lower links not in strictly ascending order of their children (link %d)", i)
		}
		prev = k
		size += uvarintLen(uint64(ns)) + uvarintLen(uint64(l.Child.Ifindex)) + uvarintLen(uint64(l.Parent)) + uvarintLen(uint64(l.ID))
	}
	return size, nil
}

// appendLowers encodes the lower-device section of a validated s.
func appendLowers(buf []byte, s *State) []byte {
	index := netnsIndex(s)
	buf = binary.AppendUvarint(buf, uint64(len(s.Lowers)))
	for _, l := range s.Lowers {
		buf = binary.AppendUvarint(buf, uint64(index[l.Child.Netns]))
		buf = binary.AppendUvarint(buf, uint64(l.Child.Ifindex))
		buf = binary.AppendUvarint(buf, uint64(l.Parent))
		buf = binary.AppendUvarint(buf, uint64(l.ID))
	}
	return buf
}

// decodeLowers parses the lower-device section of a version 3 body from
// s[p:] into st and returns the offset after it.
func decodeLowers(s string, p int, st *State) (int, error) {
	count, p, err := field(s, p, "the lower-device section", "link count")
	if err != nil {
		return 0, err
	}
	if count == 0 {
		return 0, corruptf("format version 3 without lower-device links (such a state is written as version 2 or 1)")
	}
	if count > uint64(len(s)-p)/minLower {
		return 0, corruptf("lower link count %d cannot fit in %d bytes", count, len(s)-p)
	}
	st.Lowers = make([]LowerLink, count)
	var prev endKey
	for i := range st.Lowers {
		what := fmt.Sprintf("lower link %d", i)
		var v [4]uint64
		for j, name := range []string{"namespace", "ifindex", "lower ifindex", "VLAN id"} {
			if v[j], p, err = field(s, p, what, name); err != nil {
				return 0, err
			}
		}
		if v[0] > uint64(len(st.Namespaces)) {
			return 0, corruptf("%s: namespace %d of %d", what, v[0], len(st.Namespaces))
		}
		if v[1] > math.MaxInt32 || v[2] > math.MaxInt32 {
			return 0, corruptf("%s: ifindex out of range", what)
		}
		devs := devicesOf(st, int(v[0]))
		name := ""
		if v[0] > 0 {
			name = st.Namespaces[v[0]-1].Name
		}
		switch {
		case !hasDevice(devs, int32(v[1])):
			return 0, corruptf("%s: %sno device with ifindex %d", what, inNetns(name), v[1])
		case !hasDevice(devs, int32(v[2])) || v[1] == v[2]:
			return 0, corruptf("%s: %sno lower device with ifindex %d", what, inNetns(name), v[2])
		case v[3] > maxVLANID:
			return 0, corruptf("%s: VLAN id %d is out of 1..%d", what, v[3], maxVLANID)
		}
		k := endKey{int(v[0]), int32(v[1])}
		if i > 0 && !prev.less(k) {
			return 0, corruptf("%s: links not in strictly ascending order", what)
		}
		prev = k
		st.Lowers[i] = LowerLink{Child: End{Netns: name, Ifindex: int32(v[1])}, Parent: int32(v[2]), ID: uint16(v[3])}
	}
	return p, nil
}
