package statefile

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The namespace section of format version 2: the network namespaces other
// than the initial one, each with its own devices and ifindex cursor, and the
// veth pairs, whose two ends may sit in different namespaces.

// MaxNetnsNameLen is the longest namespace name (a file name under
// /run/netns for the real kernel).
const MaxNetnsNameLen = 64

// Namespace is one network namespace other than the initial one.
type Namespace struct {
	Name string // see NetnsNameProblem
	// NextIfindex is the namespace's own ifindex cursor.
	NextIfindex int32
	// Flags are backend-defined bits.
	Flags uint32
	// Devices in strictly ascending Ifindex order, with unique names.
	Devices []Device
}

// End is one end of a veth pair: a device of a namespace ("" is the initial
// namespace) named by its ifindex there.
type End struct {
	Netns   string
	Ifindex int32
}

// VethPair is a veth pair; A sorts before B (see State).
type VethPair struct{ A, B End }

// minNamespace is the smallest encoded namespace: name length, a 1-byte
// name, cursor, flags and device count.
const minNamespace = 5

// minPair is the smallest encoded veth pair: four 1-byte uvarints.
const minPair = 4

// NetnsNameProblem returns why name cannot name a network namespace, or ""
// when it can: 1..64 bytes of valid UTF-8 made of letters (with their
// combining marks) and digits of any script, '_', '.' and '-', not "." and
// without "..", not beginning with '-' or '.', so that it is one plain,
// listed file name under /run/netns that prints as it is and that no
// command line takes for an option. The command line and both backends use the same rule.
func NetnsNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case len(name) > MaxNetnsNameLen:
		return fmt.Sprintf("%d bytes; at most %d", len(name), MaxNetnsNameLen)
	case name == ".":
		return "the name is reserved"
	case strings.Contains(name, ".."):
		return `it contains ".."`
	case name[0] == '-':
		return "it begins with '-', which ip(8) and most command lines read as an option (ip netns exec -x)"
	case name[0] == '.':
		return "it begins with '.', which hides it from a listing of /run/netns"
	}
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size <= 1 {
				return fmt.Sprintf("not valid UTF-8 (byte %#02x at offset %d)", name[i], i)
			}
		}
		if !unicode.IsLetter(r) && !unicode.IsMark(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			return fmt.Sprintf("it contains %q (U+%04X); allowed are letters, digits, '_', '.' and '-'", r, r)
		}
	}
	return ""
}

// endKey orders pair ends: the initial namespace first (index 0), then the
// namespaces in State order (index i+1), then by ifindex.
type endKey struct {
	ns      int
	ifindex int32
}

func (a endKey) less(b endKey) bool {
	return a.ns < b.ns || a.ns == b.ns && a.ifindex < b.ifindex
}

// netnsIndex maps namespace names to their 1-based index in s.Namespaces.
func netnsIndex(s *State) map[string]int {
	m := make(map[string]int, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		m[ns.Name] = i + 1
	}
	return m
}

// hasDevice reports whether devs (ascending by ifindex) holds ifindex.
func hasDevice(devs []Device, ifindex int32) bool {
	lo, hi := 0, len(devs)
	for lo < hi {
		m := (lo + hi) / 2
		if devs[m].Ifindex < ifindex {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(devs) && devs[lo].Ifindex == ifindex
}

// sizeNetns validates the namespace section of s and returns its size.
func sizeNetns(s *State) (int, error) {
	size := uvarintLen(uint64(len(s.Namespaces))) + uvarintLen(uint64(len(s.Veths)))
	for i := range s.Namespaces {
		ns := &s.Namespaces[i]
		if p := NetnsNameProblem(ns.Name); p != "" {
			return 0, invalidf("namespace %d has an invalid name %q: %s", i, ns.Name, p)
		}
		if i > 0 && ns.Name <= s.Namespaces[i-1].Name {
			return 0, invalidf("namespaces not in strictly ascending name order: %q follows %q", ns.Name, s.Namespaces[i-1].Name)
		}
		if ns.NextIfindex < 0 {
			return 0, invalidf("namespace %s: NextIfindex %d is negative", ns.Name, ns.NextIfindex)
		}
		n, err := sizeDevices(ns.Devices, ns.Name)
		if err != nil {
			return 0, err
		}
		size += 1 + len(ns.Name) + uvarintLen(uint64(ns.NextIfindex)) + uvarintLen(uint64(ns.Flags)) +
			uvarintLen(uint64(len(ns.Devices))) + n
	}
	index := netnsIndex(s)
	devsOf := func(e End) ([]Device, int, bool) {
		if e.Netns == "" {
			return s.Devices, 0, true
		}
		i, ok := index[e.Netns]
		if !ok {
			return nil, 0, false
		}
		return s.Namespaces[i-1].Devices, i, true
	}
	used := make(map[endKey]bool, 2*len(s.Veths))
	var prev endKey
	for i, p := range s.Veths {
		var keys [2]endKey
		for j, e := range []End{p.A, p.B} {
			devs, ns, ok := devsOf(e)
			if !ok {
				return 0, invalidf("veth pair %d: no namespace %q", i, e.Netns)
			}
			if !hasDevice(devs, e.Ifindex) {
				return 0, invalidf("veth pair %d: %sno device with ifindex %d", i, inNetns(e.Netns), e.Ifindex)
			}
			keys[j] = endKey{ns, e.Ifindex}
			if used[keys[j]] {
				return 0, invalidf("veth pair %d: %sdevice %d is already an end of another pair", i, inNetns(e.Netns), e.Ifindex)
			}
			used[keys[j]] = true
			size += uvarintLen(uint64(ns)) + uvarintLen(uint64(e.Ifindex))
		}
		if !keys[0].less(keys[1]) {
			return 0, invalidf("veth pair %d: end A must sort before end B (initial namespace first, then namespaces by name, then ifindex)", i)
		}
		if i > 0 && !prev.less(keys[0]) {
			return 0, invalidf("veth pairs not in strictly ascending order of their A ends (pair %d)", i)
		}
		prev = keys[0]
	}
	return size, nil
}

// appendNetns encodes the namespace section of a validated s.
func appendNetns(buf []byte, s *State) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s.Namespaces)))
	for i := range s.Namespaces {
		ns := &s.Namespaces[i]
		buf = append(buf, byte(len(ns.Name)))
		buf = append(buf, ns.Name...)
		buf = binary.AppendUvarint(buf, uint64(ns.NextIfindex))
		buf = binary.AppendUvarint(buf, uint64(ns.Flags))
		buf = binary.AppendUvarint(buf, uint64(len(ns.Devices)))
		buf = appendDevices(buf, ns.Devices)
	}
	index := netnsIndex(s)
	buf = binary.AppendUvarint(buf, uint64(len(s.Veths)))
	for _, p := range s.Veths {
		for _, e := range []End{p.A, p.B} {
			buf = binary.AppendUvarint(buf, uint64(index[e.Netns]))
			buf = binary.AppendUvarint(buf, uint64(e.Ifindex))
		}
	}
	return buf
}

// decodeNetns parses the namespace section of a version 2 body from s[p:]
// into st and returns the offset after it.
func decodeNetns(s string, p int, st *State) (int, error) {
	count, p, err := field(s, p, "the namespace section", "namespace count")
	if err != nil {
		return 0, err
	}
	if count > uint64(len(s)-p)/minNamespace {
		return 0, corruptf("namespace count %d cannot fit in %d bytes", count, len(s)-p)
	}
	if count > 0 {
		st.Namespaces = make([]Namespace, count)
	}
	for i := range st.Namespaces {
		what := fmt.Sprintf("namespace entry %d", i)
		if p >= len(s) {
			return 0, corruptf("%s: truncated before its name", what)
		}
		nl := int(s[p])
		p++
		if nl > len(s)-p {
			return 0, corruptf("%s: name of %d bytes runs past the end", what, nl)
		}
		name := s[p : p+nl]
		p += nl
		if prob := NetnsNameProblem(name); prob != "" {
			return 0, corruptf("%s: invalid name %q: %s", what, name, prob)
		}
		if i > 0 && name <= st.Namespaces[i-1].Name {
			return 0, corruptf("%s: namespaces not in strictly ascending name order (%q follows %q)", what, name, st.Namespaces[i-1].Name)
		}
		var next, flags, n uint64
		if next, p, err = field(s, p, what, "ifindex cursor"); err != nil {
			return 0, err
		}
		if next > math.MaxInt32 {
			return 0, corruptf("%s: ifindex cursor %d is out of range", what, next)
		}
		if flags, p, err = field(s, p, what, "flags"); err != nil {
			return 0, err
		}
		if flags > math.MaxUint32 {
			return 0, corruptf("%s: flags %#x do not fit 32 bits", what, flags)
		}
		if n, p, err = field(s, p, what, "device count"); err != nil {
			return 0, err
		}
		if n > uint64(len(s)-p)/minEntry {
			return 0, corruptf("%s: device count %d cannot fit in %d bytes", what, n, len(s)-p)
		}
		devs, q, err := decodeDevices(s, p, n, name)
		if err != nil {
			return 0, err
		}
		p = q
		st.Namespaces[i] = Namespace{Name: name, NextIfindex: int32(next), Flags: uint32(flags), Devices: devs}
	}
	pairs, p, err := field(s, p, "the veth section", "pair count")
	if err != nil {
		return 0, err
	}
	if pairs > uint64(len(s)-p)/minPair {
		return 0, corruptf("veth pair count %d cannot fit in %d bytes", pairs, len(s)-p)
	}
	if pairs > 0 {
		st.Veths = make([]VethPair, pairs)
	}
	used := make(map[endKey]bool, 2*pairs)
	var prev endKey
	for i := range st.Veths {
		what := fmt.Sprintf("veth pair %d", i)
		var keys [2]endKey
		var ends [2]End
		for j := range ends {
			var ns, ifindex uint64
			if ns, p, err = field(s, p, what, "namespace"); err != nil {
				return 0, err
			}
			if ifindex, p, err = field(s, p, what, "ifindex"); err != nil {
				return 0, err
			}
			devs := st.Devices
			switch {
			case ns > count:
				return 0, corruptf("%s: namespace %d of %d does not exist", what, ns, count)
			case ns > 0:
				devs = st.Namespaces[ns-1].Devices
				ends[j].Netns = st.Namespaces[ns-1].Name
			}
			if ifindex > math.MaxInt32 || !hasDevice(devs, int32(ifindex)) {
				return 0, corruptf("%s: %sno device with ifindex %d", what, inNetns(ends[j].Netns), ifindex)
			}
			ends[j].Ifindex = int32(ifindex)
			keys[j] = endKey{int(ns), int32(ifindex)}
			if used[keys[j]] {
				return 0, corruptf("%s: %sdevice %d is already an end of another pair", what, inNetns(ends[j].Netns), ifindex)
			}
			used[keys[j]] = true
		}
		if !keys[0].less(keys[1]) {
			return 0, corruptf("%s: its ends are not in order", what)
		}
		if i > 0 && !prev.less(keys[0]) {
			return 0, corruptf("%s: pairs not in strictly ascending order", what)
		}
		prev = keys[0]
		st.Veths[i] = VethPair{A: ends[0], B: ends[1]}
	}
	return p, nil
}

// field reads one uvarint of what, named name in errors.
func field(s string, p int, what, name string) (uint64, int, error) {
	v, q := uvarint(s, p)
	if q < 0 {
		return 0, 0, varintErr(what, name, q)
	}
	return v, q, nil
}

// Netns returns the namespace named name, or nil.
func (s *State) Netns(name string) *Namespace {
	lo, hi := 0, len(s.Namespaces)
	for lo < hi {
		m := (lo + hi) / 2
		if s.Namespaces[m].Name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.Namespaces) && s.Namespaces[lo].Name == name {
		return &s.Namespaces[lo]
	}
	return nil
}
