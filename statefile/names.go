package statefile

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/ifname"
)

// nameByteOK[c] is true for the bytes a device name may hold: the same rule
// as the command line's (ifname.ByteOK), so a state file never holds a
// name ndst would refuse to create.
var nameByteOK = func() (t [256]bool) {
	for c := range t {
		t[c] = ifname.ByteOK(byte(c))
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

// badBytes is non-zero when a byte of w is one ifname.ByteOK refuses:
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

// nameSet validates the names of one State and finds a duplicate among them,
// in linear time. Names made from a template, a prefix and a canonical
// decimal number (ndst's own: dummy0, dummy1, ...), take a fast path: the
// prefix, taken from the first name, is validated once, and duplicates are
// found in a bitmap over the numbers, which for ndst's lowest-free
// numbering is n bits, small enough to stay in the CPU cache. Every other
// name goes through nameKey and the dupFinder. No name can be in both
// classes, so no duplicate can straddle them.
type nameSet struct {
	n        int
	init     bool
	prefix   string
	prefixOK bool     // prefix plus digits is a valid name if short enough
	seen     []uint64 // bit k: the name prefix+k was seen
	limit    uint64   // numbers >= limit take the hash path (bounds seen)
	dupAt    int      // a device whose name an earlier device had, or -1
	hashed   *dupFinder
}

func newNameSet(n int) nameSet {
	return nameSet{n: n, limit: 8*uint64(n) + 64, dupAt: -1}
}

// add checks device i's name and records it; false means the name is not a
// valid device name (see nameProblem).
func (s *nameSet) add(i int, name string) bool {
	if !s.init {
		s.init = true
		s.prefix = strings.TrimRight(name, "0123456789")
		s.prefixOK = len(s.prefix) < MaxNameLen && nameProblem(s.prefix+"0") == ""
		s.seen = make([]uint64, min(s.n, int(s.limit))/64+1)
	}
	if k, ok := s.number(name); ok {
		w, bit := int(k>>6), uint64(1)<<(k&63)
		if w >= len(s.seen) {
			s.seen = append(s.seen, make([]uint64, max(w+1, 2*len(s.seen))-len(s.seen))...)
		}
		if s.seen[w]&bit != 0 && s.dupAt < 0 {
			s.dupAt = i
		}
		s.seen[w] |= bit
		return true
	}
	h, ok := nameKey(name)
	if !ok {
		return false
	}
	if s.hashed == nil {
		s.hashed = new(newDupFinder(s.n))
	}
	s.hashed.add(i, h)
	return true
}

// number returns k when name is s.prefix followed by k in canonical decimal
// (no leading zero) and k < s.limit.
func (s *nameSet) number(name string) (uint64, bool) {
	p := len(s.prefix)
	if !s.prefixOK || len(name) <= p || len(name) > MaxNameLen || name[:p] != s.prefix {
		return 0, false
	}
	d := name[p:]
	if d[0] == '0' && len(d) > 1 {
		return 0, false
	}
	var k uint64
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			return 0, false
		}
		k = k*10 + uint64(c)
	}
	return k, k < s.limit
}

// find returns indexes i < j of two devices with the same name, or -1, -1.
// Every device must have been added.
func (s *nameSet) find(devs []Device) (int, int) {
	if j := s.dupAt; j >= 0 {
		for i := range j {
			if devs[i].Name == devs[j].Name {
				return i, j
			}
		}
	}
	if s.hashed != nil {
		return s.hashed.find(devs)
	}
	return -1, -1
}
