package statefile

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

const (
	magic      = "NDSTSF"
	headerSize = 16
	// bodyFixed is NextIfindex and count.
	bodyFixed = 8
	// minEntry is the smallest encoded entry: 1-byte delta, 1-byte flags,
	// length byte, 1-byte name.
	minEntry = 4
	// maxVarint is the longest uvarint accepted: every field fits 32 bits.
	maxVarint = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the file content for s, or an error wrapping ErrInvalid if s
// breaks the State invariants. A State without namespaces and veth pairs is
// written in format version 1, which every ndst reads; any other in version 2.
func Encode(s *State) ([]byte, error) {
	if s == nil {
		return nil, invalidf("nil state")
	}
	if s.NextIfindex < 0 {
		return nil, invalidf("NextIfindex %d is negative", s.NextIfindex)
	}
	devs := s.Devices
	if len(devs) > (MaxFileSize-headerSize-bodyFixed)/minEntry {
		return nil, invalidf("%d devices is more than a state file holds", len(devs))
	}
	// Validate and size in one pass.
	size, err := sizeDevices(devs, "")
	if err != nil {
		return nil, err
	}
	size += headerSize + bodyFixed
	version := uint16(1)
	if len(s.Namespaces) > 0 || len(s.Veths) > 0 || len(s.Lowers) > 0 {
		version = 2
		n, err := sizeNetns(s)
		if err != nil {
			return nil, err
		}
		size += n
	}
	if len(s.Lowers) > 0 {
		version = 3
		n, err := sizeLowers(s)
		if err != nil {
			return nil, err
		}
		size += n
	}
	if size > MaxFileSize {
		return nil, invalidf("encoded state would be %d bytes, more than the %d-byte limit", size, MaxFileSize)
	}

	buf := make([]byte, headerSize, size)
	copy(buf, magic)
	binary.LittleEndian.PutUint16(buf[6:], version)
	binary.LittleEndian.PutUint32(buf[8:], uint32(size-headerSize))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(s.NextIfindex))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(devs)))
	buf = appendDevices(buf, devs)
	if version >= 2 {
		buf = appendNetns(buf, s)
	}
	if version >= 3 {
		buf = appendLowers(buf, s)
	}
	binary.LittleEndian.PutUint32(buf[12:], checksum(buf))
	return buf, nil
}

// sizeDevices validates one namespace's devices (ns names it in errors, ""
// for the initial one) and returns the size of their entries.
func sizeDevices(devs []Device, ns string) (int, error) {
	size := 0
	names := newNameSet(len(devs))
	var prev int32
	for i := range devs {
		d := &devs[i]
		if d.Ifindex <= prev {
			if i == 0 {
				return 0, invalidf("%sdevice %q has ifindex %d; ifindexes start at 1", inNetns(ns), d.Name, d.Ifindex)
			}
			return 0, invalidf("%sdevices not in strictly ascending ifindex order: %q (ifindex %d) follows ifindex %d",
				inNetns(ns), d.Name, d.Ifindex, prev)
		}
		if !names.add(i, d.Name) {
			return 0, invalidf("%sdevice %d (ifindex %d) has an invalid name %q: %s", inNetns(ns), i, d.Ifindex, d.Name, nameProblem(d.Name))
		}
		size += uvarintLen(uint64(d.Ifindex-prev)) + uvarintLen(uint64(d.Flags)) + 1 + len(d.Name)
		prev = d.Ifindex
	}
	if i, j := names.find(devs); i >= 0 {
		return 0, invalidf("%sduplicate device name %q (ifindexes %d and %d)", inNetns(ns), devs[i].Name, devs[i].Ifindex, devs[j].Ifindex)
	}
	return size, nil
}

// inNetns prefixes messages about a namespace's devices.
func inNetns(ns string) string {
	if ns == "" {
		return ""
	}
	return "namespace " + ns + ": "
}

func appendDevices(buf []byte, devs []Device) []byte {
	var prev int32
	for i := range devs {
		d := &devs[i]
		buf = binary.AppendUvarint(buf, uint64(d.Ifindex-prev))
		buf = binary.AppendUvarint(buf, uint64(d.Flags))
		buf = append(buf, byte(len(d.Name)))
		buf = append(buf, d.Name...)
		prev = d.Ifindex
	}
	return buf
}

// checksum is the CRC-32C of the header's first 12 bytes and the body.
func checksum(data []byte) uint32 {
	c := crc32.Update(0, castagnoli, data[:12])
	return crc32.Update(c, castagnoli, data[headerSize:])
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// Decode parses file content. Errors are *FormatError values wrapping
// ErrCorrupt or ErrVersion, with an empty Path.
func Decode(data []byte) (*State, error) {
	if err := checkHeader(data); err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, corruptf("%d bytes, more than the %d-byte limit", len(data), MaxFileSize)
	}
	bodyLen := uint64(binary.LittleEndian.Uint32(data[8:]))
	if have := uint64(len(data) - headerSize); have < bodyLen {
		return nil, corruptf("truncated: header announces %d body bytes, only %d present", bodyLen, have)
	} else if have > bodyLen {
		return nil, corruptf("%d bytes of trailing garbage after the body", have-bodyLen)
	}
	if err := checkSum(data, checksum(data)); err != nil {
		return nil, err
	}
	// One copy of the body; every name is a substring of it.
	return decodeBody(binary.LittleEndian.Uint16(data[6:]), string(data[headerSize:]))
}

// checkSum compares the checksum stored in header with the computed one.
func checkSum(header []byte, computed uint32) error {
	if stored := binary.LittleEndian.Uint32(header[12:]); stored != computed {
		return corruptf("checksum mismatch: stored %08x, computed %08x", stored, computed)
	}
	return nil
}

// checkHeader validates magic and version and that a whole header is there.
func checkHeader(data []byte) error {
	n := min(len(data), len(magic))
	if string(data[:n]) != magic[:n] {
		return &FormatError{Reason: "it does not begin with \"" + magic + "\"", kind: ErrForeign}
	}
	if len(data) < headerSize {
		if len(data) == 0 {
			return corruptf("truncated: empty file")
		}
		return corruptf("truncated: %d bytes, shorter than the %d-byte header", len(data), headerSize)
	}
	if v := binary.LittleEndian.Uint16(data[6:]); v < MinVersion || v > Version {
		return &FormatError{Version: int(v), kind: ErrVersion, Reason: "unsupported format version"}
	}
	return nil
}

// decodeBody parses a checksummed body of the given format version. The
// names it returns are substrings of body.
func decodeBody(version uint16, body string) (*State, error) {
	if len(body) < bodyFixed {
		return nil, corruptf("body is %d bytes, shorter than its %d-byte fixed part", len(body), bodyFixed)
	}
	next := le32(body)
	if next > math.MaxInt32 {
		return nil, corruptf("ifindex cursor %d is out of range", next)
	}
	count := uint64(le32(body[4:]))
	if rest := uint64(len(body) - bodyFixed); count > rest/minEntry {
		return nil, corruptf("device count %d cannot fit in %d bytes", count, rest)
	}
	st := &State{NextIfindex: int32(next)}
	devs, p, err := decodeDevices(body, bodyFixed, count, "")
	if err != nil {
		return nil, err
	}
	st.Devices = devs
	if version >= 2 {
		if p, err = decodeNetns(body, p, st); err != nil {
			return nil, err
		}
		if version == 2 && len(st.Namespaces) == 0 && len(st.Veths) == 0 {
			return nil, corruptf("format version 2 without namespaces or veth pairs (such a state is written as version 1)")
		}
	}
	if version >= 3 {
		if p, err = decodeLowers(body, p, st); err != nil {
			return nil, err
		}
	}
	if p != len(body) {
		return nil, corruptf("%d bytes after the last %s entry", len(body)-p, lastEntry(version))
	}
	return st, nil
}

func lastEntry(version uint16) string {
	if version >= 3 {
		return "lower link"
	}
	if version >= 2 {
		return "veth pair"
	}
	return "device"
}

// decodeDevices parses count device entries of one namespace (ns names it
// in errors, "" for the initial one) starting at s[p:], and returns them
// (nil when count is 0) and the offset after them. The caller has checked
// that count entries can fit in what is left of s.
func decodeDevices(s string, p int, count uint64, ns string) ([]Device, int, error) {
	if count == 0 {
		return nil, p, nil
	}
	// At most (len(body)-8)/4 devices of 24 bytes, plus 9 bytes each for
	// dupFinder: memory stays within a small multiple of the input.
	devs := make([]Device, count)
	names := newNameSet(len(devs))
	where := inNetns(ns)
	var prev uint64
	for i := range devs {
		// One-byte varints, by far the most common, inline; uvarint
		// handles the rest and every error.
		var delta, flags uint64
		var r int
		if p+2 < len(s) && s[p]|s[p+1] < 0x80 {
			delta, flags, r = uint64(s[p]), uint64(s[p+1]), p+2
		} else {
			var q int
			if delta, q = uvarint(s, p); q < 0 {
				return nil, 0, entryErr(where, i, "ifindex delta", q)
			}
			if flags, r = uvarint(s, q); r < 0 {
				return nil, 0, entryErr(where, i, "flags", r)
			}
		}
		if delta == 0 {
			return nil, 0, corruptf("%sdevice entry %d: ifindexes not strictly ascending (repeats %d)", where, i, prev)
		}
		ifindex := prev + delta
		if ifindex > math.MaxInt32 {
			return nil, 0, corruptf("%sdevice entry %d: ifindex %d is out of range", where, i, ifindex)
		}
		if flags > math.MaxUint32 {
			return nil, 0, corruptf("%sdevice entry %d: flags %#x do not fit 32 bits", where, i, flags)
		}
		if r >= len(s) {
			return nil, 0, corruptf("%sdevice entry %d: truncated before its name", where, i)
		}
		nl := int(s[r])
		r++
		if nl > len(s)-r {
			return nil, 0, corruptf("%sdevice entry %d: name of %d bytes runs past the end", where, i, nl)
		}
		name := s[r : r+nl]
		if !names.add(i, name) {
			return nil, 0, corruptf("%sdevice entry %d (ifindex %d): %s %q", where, i, ifindex, nameProblem(name), name)
		}
		devs[i] = Device{Ifindex: int32(ifindex), Name: name, Flags: uint32(flags)}
		p = r + nl
		prev = ifindex
	}
	if i, j := names.find(devs); i >= 0 {
		return nil, 0, corruptf("%sduplicate device name %q (ifindexes %d and %d)", where, devs[i].Name, devs[i].Ifindex, devs[j].Ifindex)
	}
	return devs, p, nil
}

// uvarint failure codes, returned in place of the next offset.
const (
	varintShort    = -1 // input ended inside the varint
	varintLong     = -2 // more than maxVarint bytes
	varintNonCanon = -3 // a redundant trailing zero group
)

// uvarint reads a canonical uvarint of at most maxVarint bytes from s at p and
// returns the value and the offset after it, or a negative failure code.
func uvarint(s string, p int) (uint64, int) {
	if p < len(s) && s[p] < 0x80 { // fast path: one byte
		return uint64(s[p]), p + 1
	}
	var v uint64
	for i := 0; i < maxVarint; i++ {
		if p >= len(s) {
			return 0, varintShort
		}
		b := s[p]
		p++
		if b < 0x80 {
			if b == 0 {
				return 0, varintNonCanon
			}
			return v | uint64(b)<<(7*i), p
		}
		v |= uint64(b&0x7f) << (7 * i)
	}
	return 0, varintLong
}

func entryErr(where string, i int, field string, code int) error {
	return varintErr(fmt.Sprintf("%sdevice entry %d", where, i), field, code)
}

// varintErr describes a uvarint failure code of the field of what.
func varintErr(what, field string, code int) error {
	switch code {
	case varintShort:
		return corruptf("%s: truncated in its %s", what, field)
	case varintLong:
		return corruptf("%s: %s is too long", what, field)
	default:
		return corruptf("%s: %s is not in canonical form", what, field)
	}
}
