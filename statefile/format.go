package statefile

import (
	"encoding/binary"
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
// breaks the State invariants.
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
	size := headerSize + bodyFixed
	names := newNameSet(len(devs))
	var prev int32
	for i := range devs {
		d := &devs[i]
		if d.Ifindex <= prev {
			if i == 0 {
				return nil, invalidf("device %q has ifindex %d; ifindexes start at 1", d.Name, d.Ifindex)
			}
			return nil, invalidf("devices not in strictly ascending ifindex order: %q (ifindex %d) follows ifindex %d",
				d.Name, d.Ifindex, prev)
		}
		if !names.add(i, d.Name) {
			return nil, invalidf("device %d (ifindex %d) has an invalid name %q: %s", i, d.Ifindex, d.Name, nameProblem(d.Name))
		}
		size += uvarintLen(uint64(d.Ifindex-prev)) + uvarintLen(uint64(d.Flags)) + 1 + len(d.Name)
		prev = d.Ifindex
	}
	if i, j := names.find(devs); i >= 0 {
		return nil, invalidf("duplicate device name %q (ifindexes %d and %d)", devs[i].Name, devs[i].Ifindex, devs[j].Ifindex)
	}
	if size > MaxFileSize {
		return nil, invalidf("encoded state would be %d bytes, more than the %d-byte limit", size, MaxFileSize)
	}

	buf := make([]byte, headerSize, size)
	copy(buf, magic)
	binary.LittleEndian.PutUint16(buf[6:], Version)
	binary.LittleEndian.PutUint32(buf[8:], uint32(size-headerSize))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(s.NextIfindex))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(devs)))
	prev = 0
	for i := range devs {
		d := &devs[i]
		buf = binary.AppendUvarint(buf, uint64(d.Ifindex-prev))
		buf = binary.AppendUvarint(buf, uint64(d.Flags))
		buf = append(buf, byte(len(d.Name)))
		buf = append(buf, d.Name...)
		prev = d.Ifindex
	}
	binary.LittleEndian.PutUint32(buf[12:], checksum(buf))
	return buf, nil
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
	return decodeBody(string(data[headerSize:]))
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
	if v := binary.LittleEndian.Uint16(data[6:]); v != Version {
		return &FormatError{Version: int(v), kind: ErrVersion, Reason: "unsupported format version"}
	}
	return nil
}

// decodeBody parses a checksummed body. The names it returns are substrings
// of body.
func decodeBody(body string) (*State, error) {
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
	if count == 0 {
		if len(body) != bodyFixed {
			return nil, corruptf("%d bytes after the last device entry", len(body)-bodyFixed)
		}
		return st, nil
	}
	s := body
	// At most (len(body)-8)/4 devices of 24 bytes, plus 9 bytes each for
	// dupFinder: memory stays within a small multiple of the input.
	devs := make([]Device, count)
	names := newNameSet(len(devs))
	p := bodyFixed
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
				return nil, entryErr(i, "ifindex delta", q)
			}
			if flags, r = uvarint(s, q); r < 0 {
				return nil, entryErr(i, "flags", r)
			}
		}
		if delta == 0 {
			return nil, corruptf("device entry %d: ifindexes not strictly ascending (repeats %d)", i, prev)
		}
		ifindex := prev + delta
		if ifindex > math.MaxInt32 {
			return nil, corruptf("device entry %d: ifindex %d is out of range", i, ifindex)
		}
		if flags > math.MaxUint32 {
			return nil, corruptf("device entry %d: flags %#x do not fit 32 bits", i, flags)
		}
		if r >= len(s) {
			return nil, corruptf("device entry %d: truncated before its name", i)
		}
		nl := int(s[r])
		r++
		if nl > len(s)-r {
			return nil, corruptf("device entry %d: name of %d bytes runs past the end", i, nl)
		}
		name := s[r : r+nl]
		if !names.add(i, name) {
			return nil, corruptf("device entry %d (ifindex %d): %s %q", i, ifindex, nameProblem(name), name)
		}
		devs[i] = Device{Ifindex: int32(ifindex), Name: name, Flags: uint32(flags)}
		p = r + nl
		prev = ifindex
	}
	if p != len(s) {
		return nil, corruptf("%d bytes after the last device entry", len(s)-p)
	}
	if i, j := names.find(devs); i >= 0 {
		return nil, corruptf("duplicate device name %q (ifindexes %d and %d)", devs[i].Name, devs[i].Ifindex, devs[j].Ifindex)
	}
	st.Devices = devs
	return st, nil
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

func entryErr(i int, field string, code int) error {
	switch code {
	case varintShort:
		return corruptf("device entry %d: truncated in its %s", i, field)
	case varintLong:
		return corruptf("device entry %d: %s is too long", i, field)
	default:
		return corruptf("device entry %d: %s is not in canonical form", i, field)
	}
}
