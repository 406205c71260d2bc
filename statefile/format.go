package statefile

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/ndst-project/ndst/ndst"
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

// nameByteOK[c] is true for the bytes a device name may hold: the same rule
// as the command line's (ndst.NameByteOK), so a state file never holds a
// name ndst would refuse to create.
var nameByteOK = func() (t [256]bool) {
	for c := range t {
		t[c] = ndst.NameByteOK(byte(c))
	}
	return t
}()

// nameProblem returns why name is not a valid device name, or "".
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty name"
	case len(name) > MaxNameLen:
		return "name longer than 15 bytes"
	case name == "." || name == "..":
		return "reserved name"
	}
	for i := 0; i < len(name); i++ {
		if !nameByteOK[name[i]] {
			return "name contains a byte the kernel refuses"
		}
	}
	return ""
}

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
	dups := newDupFinder(len(devs))
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
		h, ok := nameKey(d.Name)
		if !ok {
			return nil, invalidf("device %d (ifindex %d) has an invalid name %q: %s", i, d.Ifindex, d.Name, nameProblem(d.Name))
		}
		dups.add(i, h)
		size += uvarintLen(uint64(d.Ifindex-prev)) + uvarintLen(uint64(d.Flags)) + 1 + len(d.Name)
		prev = d.Ifindex
	}
	if i, j := dups.find(devs); i >= 0 {
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
		return corruptf("not an ndst state file: bad magic")
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
	dups := newDupFinder(len(devs))
	p := bodyFixed
	var prev uint64
	for i := range devs {
		// One-byte varints, by far the most common, inline; uvarint
		// handles the rest and every error.
		var delta, flags uint64
		q, r := p+1, p+2
		if r < len(s) && s[p]|s[p+1] < 0x80 {
			delta, flags = uint64(s[p]), uint64(s[p+1])
		} else {
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
		h, ok := nameKey(name)
		if !ok {
			return nil, corruptf("device entry %d (ifindex %d): %s %q", i, ifindex, nameProblem(name), name)
		}
		dups.add(i, h)
		devs[i] = Device{Ifindex: int32(ifindex), Name: name, Flags: uint32(flags)}
		p = r + nl
		prev = ifindex
	}
	if p != len(s) {
		return nil, corruptf("%d bytes after the last device entry", len(s)-p)
	}
	if i, j := dups.find(devs); i >= 0 {
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

// dupFinder finds two devices with the same name in linear time, with
// memory touched almost only in sequential streams and about 9 bytes per
// device. That matters at 10^6 names: a single hash table that size costs a
// cache and TLB miss per insert, several times slower.
//
// add files each name's hash (from nameKey), with its low idxBits replaced
// by the device's index, into one of 2^k partitions chosen by the hash's top
// bits. Partitions have a fixed capacity six standard deviations above their
// expected size: hashes are seeded, so no input can aim for one, and an
// overflow (odds below 10^-6) only sends find down a slower path. find then
// runs one small open-addressing table per partition, sized to stay in the
// CPU cache, and compares names only when 64-idxBits hash bits agree.
type dupFinder struct {
	ents     []uint64 // partition p is ents[p*size : p*size+fill[p]]
	fill     []int
	size     int
	shift    uint // partition = hash >> shift
	overflow bool
}

// idxBits holds any device index: Decode and Encode accept fewer than
// MaxFileSize/minEntry = 2^28 devices.
const (
	idxBits = 28
	idxMask = 1<<idxBits - 1
)

func newDupFinder(n int) dupFinder {
	k := max(0, bits.Len(uint(n))-12) // partitions of about 2^11..2^12 names
	size := n
	if k > 0 {
		mean := n >> k
		size = mean + 6*int(math.Sqrt(float64(mean))) + 16
	}
	return dupFinder{
		ents:  make([]uint64, size<<k),
		fill:  make([]int, 1<<k),
		size:  size,
		shift: uint(64 - k), // h>>64 is 0 in Go: one partition when k == 0
	}
}

func (d *dupFinder) add(i int, h uint64) {
	p := int(h >> d.shift)
	f := d.fill[p]
	if f == d.size {
		d.overflow = true
		return
	}
	d.ents[p*d.size+f] = h&^idxMask | uint64(i)
	d.fill[p] = f + 1
}

// find returns indexes i < j of two devices with the same name, or -1, -1.
// Every device must have been added.
func (d *dupFinder) find(devs []Device) (int, int) {
	if d.overflow {
		return findDuplicateSlow(devs)
	}
	table := make([]uint64, tableSize(slices.Max(append(d.fill, 0))))
	for p, f := range d.fill {
		part := d.ents[p*d.size : p*d.size+f]
		t := table[:tableSize(len(part))]
		clear(t)
		mask := uint64(len(t) - 1)
		for _, e := range part {
			tag := e >> idxBits
			for s := tag & mask; ; s = (s + 1) & mask {
				v := t[s]
				if v == 0 {
					t[s] = e + 1 // +1 so that 0 marks a free slot; the index never carries
					break
				}
				v--
				if v>>idxBits == tag {
					i, j := int(v&idxMask), int(e&idxMask)
					if devs[i].Name == devs[j].Name {
						return min(i, j), max(i, j)
					}
				}
			}
		}
	}
	return -1, -1
}

// findDuplicateSlow is find's fallback when a partition overflowed.
func findDuplicateSlow(devs []Device) (int, int) {
	seen := make(map[string]int, len(devs))
	for j, d := range devs {
		if i, ok := seen[d.Name]; ok {
			return i, j
		}
		seen[d.Name] = j
	}
	return -1, -1
}

// tableSize is the power of two at least twice n (load factor <= 1/2).
func tableSize(n int) int {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return size
}

// Keys of nameKey's hash, random per process so that a crafted file cannot
// aim for collisions.
var hashKey0, hashKey1 = rand.Uint64(), rand.Uint64()

// Byte-parallel ("SWAR") tests on 8 bytes at once.
const (
	ones         = 0x0101010101010101
	highs        = 0x8080808080808080
	pad   uint64 = 'a' * ones // a byte every check accepts
)

// badBytes is non-zero when a byte of w is one ndst.NameByteOK refuses:
// <= ' ', DEL, 0xA0 (a space to the kernel), '/' or ':'.
func badBytes(w uint64) uint64 {
	lt := (w - 0x21*ones) &^ w & highs // some byte < 0x21
	return lt | zeroByte(w^0x7f*ones) | zeroByte(w^0xa0*ones) | zeroByte(w^'/'*ones) | zeroByte(w^':'*ones)
}

// le32 is the little-endian word in s's first 4 bytes.
func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// le64 is the little-endian word in s's first 8 bytes.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// zeroByte is non-zero when a byte of w is zero.
func zeroByte(w uint64) uint64 { return (w - ones) &^ w & highs }

// nameKey reports whether name is a valid device name (nameProblem(name) ==
// "") and, if so, returns its seeded hash. It looks at the name as two
// 8-byte words, padded with a byte that passes every check, which is several
// times faster than a loop over bytes.
func nameKey(name string) (uint64, bool) {
	n := len(name)
	if n == 0 || n > MaxNameLen || name[0] == '.' && (n == 1 || n == 2 && name[1] == '.') {
		return 0, false
	}
	lo, hi := pad, pad
	if n >= 8 {
		lo = le64(name)
		// The last 8 bytes, shifted to drop the ones lo already has.
		hi = le64(name[n-8:])>>(8*(16-n)) | pad<<(8*(n-8))
	} else {
		for i := n - 1; i >= 0; i-- {
			lo = lo<<8 | uint64(name[i])
		}
	}
	if badBytes(lo)|badBytes(hi) != 0 {
		return 0, false
	}
	// The length goes into the last byte, always padding, so "ab" and
	// "aba" differ; then one wide multiply mixes both words (as wyhash).
	x, y := bits.Mul64(lo^hashKey0, hi^uint64(n)<<56^hashKey1)
	return x ^ y, true
}
