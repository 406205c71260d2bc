package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// equalState compares states, treating nil and empty device lists alike.
func equalState(a, b *State) bool {
	if a.NextIfindex != b.NextIfindex || len(a.Devices) != len(b.Devices) {
		return false
	}
	for i := range a.Devices {
		if a.Devices[i] != b.Devices[i] {
			return false
		}
	}
	return true
}

// manyDevices returns n devices dummy1..dummyN with ifindex 1..n. The names
// are substrings of one string, as in a State that Load returns, so that
// the garbage collector's cost of marking n separate strings does not blur
// the codec's figures (BenchmarkEncode1MSeparateNames measures that case).
func manyDevices(n int) *State {
	s := &State{NextIfindex: int32(n), Devices: make([]Device, n)}
	var all []byte
	ends := make([]int, n)
	for i := range n {
		all = strconv.AppendInt(append(all, "dummy"...), int64(i+1), 10)
		ends[i] = len(all)
	}
	names, start := string(all), 0
	for i := range s.Devices {
		s.Devices[i] = Device{Ifindex: int32(i + 1), Name: names[start:ends[i]], Flags: uint32(i & 1)}
		start = ends[i]
	}
	return s
}

// manyDevicesSeparateNames is manyDevices with one allocation per name.
func manyDevicesSeparateNames(n int) *State {
	s := manyDevices(n)
	for i := range s.Devices {
		s.Devices[i].Name = fmt.Sprintf("dummy%d", i+1)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		st   *State
	}{
		{"empty", &State{}},
		{"empty with cursor", &State{NextIfindex: 1234}},
		{"one", &State{NextIfindex: 1, Devices: []Device{{Ifindex: 1, Name: "dummy0", Flags: 1}}}},
		{"gaps and big values", &State{NextIfindex: math.MaxInt32, Devices: []Device{
			{Ifindex: 3, Name: "a", Flags: 0},
			{Ifindex: 130, Name: "b", Flags: math.MaxUint32},
			{Ifindex: 20000, Name: "fifteen-bytes-x", Flags: 0x80},
			{Ifindex: math.MaxInt32, Name: "\xff\xfe\x80é", Flags: 1 << 31},
		}}},
		{"cursor wrapped below devices", &State{NextIfindex: 2, Devices: []Device{
			{Ifindex: 1, Name: "x1"}, {Ifindex: 2, Name: "x2"}, {Ifindex: 2147483000, Name: "x3"},
		}}},
		{"thousand", manyDevices(1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.st)
			if err != nil {
				t.Fatalf("Encode(%s) error = %v, want nil", tt.name, err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(%s)) error = %v, want nil", tt.name, err)
			}
			if !equalState(got, tt.st) {
				t.Errorf("Decode(Encode(%s)) = %+v, want %+v", tt.name, got, tt.st)
			}
			again, err := Encode(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Errorf("Encode(Decode(Encode(%s))) = %x, %v; want %x, nil", tt.name, again, err, b)
			}
		})
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	tests := []struct {
		name string
		st   *State
		want string
	}{
		{"nil", nil, "nil state"},
		{"negative cursor", &State{NextIfindex: -1}, "negative"},
		{"ifindex zero", &State{Devices: []Device{{Ifindex: 0, Name: "a"}}}, "start at 1"},
		{"ifindex negative", &State{Devices: []Device{{Ifindex: -5, Name: "a"}}}, "start at 1"},
		{"descending", &State{Devices: []Device{{Ifindex: 2, Name: "a"}, {Ifindex: 1, Name: "b"}}}, "ascending"},
		{"repeated ifindex", &State{Devices: []Device{{Ifindex: 2, Name: "a"}, {Ifindex: 2, Name: "b"}}}, "ascending"},
		{"duplicate name", &State{Devices: []Device{{Ifindex: 1, Name: "a"}, {Ifindex: 5, Name: "b"}, {Ifindex: 9, Name: "a"}}}, `duplicate device name "a" (ifindexes 1 and 9)`},
		{"name too long", &State{Devices: []Device{{Ifindex: 1, Name: "sixteen-bytes-xx"}}}, "longer than 15"},
		{"empty name", &State{Devices: []Device{{Ifindex: 1, Name: ""}}}, "empty name"},
		{"dot", &State{Devices: []Device{{Ifindex: 1, Name: "."}}}, "reserved"},
		{"dotdot", &State{Devices: []Device{{Ifindex: 1, Name: ".."}}}, "reserved"},
		{"slash", &State{Devices: []Device{{Ifindex: 1, Name: "a/b"}}}, "refuses"},
		{"colon", &State{Devices: []Device{{Ifindex: 1, Name: "a:b"}}}, "refuses"},
		{"space", &State{Devices: []Device{{Ifindex: 1, Name: "a b"}}}, "refuses"},
		{"nul", &State{Devices: []Device{{Ifindex: 1, Name: "a\x00"}}}, "refuses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.st)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode(%s) = %d bytes, %v; want error wrapping ErrInvalid containing %q", tt.name, len(b), err, tt.want)
			}
		})
	}
}

// body builds a raw body: cursor, count, then raw entry bytes.
func body(next, count uint32, entries ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, next)
	b = binary.LittleEndian.AppendUint32(b, count)
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

// entry builds one raw entry from a delta, flags and name.
func entry(delta uint64, flags uint64, name string) []byte {
	b := binary.AppendUvarint(nil, delta)
	b = binary.AppendUvarint(b, flags)
	b = append(b, byte(len(name)))
	return append(b, name...)
}

// sealed wraps a body in a header with the given version and a correct
// length and checksum.
func sealed(version uint16, body []byte) []byte {
	b := make([]byte, headerSize, headerSize+len(body))
	copy(b, magic)
	binary.LittleEndian.PutUint16(b[6:], version)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(body)))
	b = append(b, body...)
	binary.LittleEndian.PutUint32(b[12:], checksum(b))
	return b
}

func validSample() []byte {
	b, err := Encode(&State{NextIfindex: 3, Devices: []Device{
		{Ifindex: 1, Name: "dummy0", Flags: 1}, {Ifindex: 3, Name: "dummy1"},
	}})
	if err != nil {
		panic(err)
	}
	return b
}

func mutate(f func([]byte) []byte) []byte { return f(validSample()) }

// corruptCases are encodings Decode must reject, by class.
func corruptCases() []struct {
	name, want string
	kind       error
	data       []byte
} {
	return []struct {
		name, want string
		kind       error
		data       []byte
	}{
		{"empty file", "truncated: empty", ErrCorrupt, nil},
		{"truncated header", "shorter than the 16-byte header", ErrCorrupt, validSample()[:10]},
		{"truncated body", "truncated: header announces", ErrCorrupt, mutate(func(b []byte) []byte { return b[:len(b)-3] })},
		{"truncated to header", "truncated: header announces", ErrCorrupt, validSample()[:headerSize]},
		{"trailing garbage", "trailing garbage", ErrCorrupt, append(validSample(), 0, 1, 2)},
		{"garbage", "does not begin with \"NDSTSF\"", ErrForeign, []byte("this is not a state file at all, just text\n")},
		{"json from elsewhere", "does not begin with \"NDSTSF\"", ErrForeign, []byte(`{"devices":[]}`)},
		{"magic cut short", "shorter than the 16-byte header", ErrCorrupt, []byte("NDS")},
		{"checksum flipped", "checksum mismatch", ErrCorrupt, mutate(func(b []byte) []byte { b[12] ^= 1; return b })},
		{"body bit flip", "checksum mismatch", ErrCorrupt, mutate(func(b []byte) []byte { b[len(b)-1] ^= 0x20; return b })},
		{"length field bit flip", "truncated", ErrCorrupt, mutate(func(b []byte) []byte { b[8] ^= 0x40; return b })},
		{"older version", "older than this ndst reads", ErrVersion, sealed(0, body(0, 0))},
		{"newer version", "newer than this ndst reads (versions 1 to 3); use a newer ndst", ErrVersion, sealed(7, body(0, 0))},
		{"body too short", "shorter than its 8-byte fixed part", ErrCorrupt, sealed(1, []byte{1, 2, 3})},
		{"cursor out of range", "cursor", ErrCorrupt, sealed(1, body(1<<31, 0))},
		{"absurd count", "device count 4294967295 cannot fit", ErrCorrupt, sealed(1, body(0, math.MaxUint32, entry(1, 0, "a")))},
		{"count larger than entries", "device entry 1: truncated in its ifindex delta", ErrCorrupt, sealed(1, body(0, 2, entry(1, 0, "abcdefghij"), []byte{0x81}))},
		{"entry cut in flags", "device entry 1: truncated in its flags", ErrCorrupt, sealed(1, body(0, 2, entry(1, 0, "abcdefghij"), []byte{1, 0x81}))},
		{"entry cut before name", "device entry 1: truncated before its name", ErrCorrupt, sealed(1, body(0, 2, entry(1, 0, "abcdefghij"), []byte{1, 0}))},
		{"count smaller than entries", "after the last device entry", ErrCorrupt, sealed(1, body(0, 1, entry(1, 0, "a"), entry(1, 0, "b")))},
		{"bytes after empty list", "after the last device entry", ErrCorrupt, sealed(1, body(0, 0, []byte{1, 2, 3, 4}))},
		{"repeated ifindex", "not strictly ascending", ErrCorrupt, sealed(1, body(0, 2, entry(1, 0, "a"), entry(0, 0, "b")))},
		{"ifindex zero", "not strictly ascending", ErrCorrupt, sealed(1, body(0, 1, entry(0, 0, "a")))},
		{"ifindex overflow", "out of range", ErrCorrupt, sealed(1, body(0, 2, entry(math.MaxInt32, 0, "a"), entry(1, 0, "b")))},
		{"flags overflow", "do not fit 32 bits", ErrCorrupt, sealed(1, body(0, 1, entry(1, 1<<32, "a")))},
		{"overlong varint", "too long", ErrCorrupt, sealed(1, body(0, 1, []byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 1, 'a'}))},
		{"non-canonical varint", "canonical", ErrCorrupt, sealed(1, body(0, 1, []byte{0x81, 0x00, 0, 1, 'a'}))},
		{"name over 15 bytes", "longer than 15 bytes", ErrCorrupt, sealed(1, body(0, 1, entry(1, 0, "sixteen-bytes-xx")))},
		{"name runs past end", "runs past the end", ErrCorrupt, sealed(1, body(0, 1, []byte{1, 0, 9, 'a', 'b', 'c', 'd'}))},
		{"empty name", "empty name", ErrCorrupt, sealed(1, body(0, 1, []byte{1, 0, 0, 0}))},
		{"name with slash", "refuses", ErrCorrupt, sealed(1, body(0, 1, entry(1, 0, "a/b")))},
		{"reserved name", "reserved", ErrCorrupt, sealed(1, body(0, 1, entry(1, 0, "..")))},
		{"duplicate names", `duplicate device name "eth0" (ifindexes 2 and 7)`, ErrCorrupt,
			sealed(1, body(0, 3, entry(2, 0, "eth0"), entry(3, 0, "eth1"), entry(2, 0, "eth0")))},
	}
}

func TestDecodeCorrupt(t *testing.T) {
	for _, tt := range corruptCases() {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Decode(tt.data)
			var fe *FormatError
			if !errors.Is(err, tt.kind) || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%s) = %+v, %v; want *FormatError wrapping %v containing %q", tt.name, st, err, tt.kind, tt.want)
			}
			if hint := strings.Contains(err.Error(), "reset"); hint != (tt.kind != ErrForeign) {
				t.Errorf("Decode(%s) error = %q; want the suggested fix 'ndst reset --backend sim' exactly when the data is ndst's", tt.name, err)
			}
		})
	}
}

// TestDecodeEveryTruncation cuts a valid encoding at every length.
func TestDecodeEveryTruncation(t *testing.T) {
	full, err := Encode(manyDevices(20))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(full); n++ {
		if st, err := Decode(full[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Decode(first %d of %d bytes) = %+v, %v; want ErrCorrupt", n, len(full), st, err)
		}
	}
}

// TestDecodeEveryBitFlip flips each bit of a valid encoding.
func TestDecodeEveryBitFlip(t *testing.T) {
	full := validSample()
	for i := range len(full) * 8 {
		b := bytes.Clone(full)
		b[i/8] ^= 1 << (i % 8)
		if st, err := Decode(b); err == nil {
			t.Fatalf("Decode(bit %d flipped) = %+v, nil; want an error", i, st)
		}
	}
}

// TestDecodeAbsurdCountAllocatesLittle checks that a header claiming billions
// of devices is refused before any allocation proportional to the claim.
func TestDecodeAbsurdCountAllocatesLittle(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"count 2^32-1, one entry", sealed(1, body(0, math.MaxUint32, entry(1, 0, "a")))},
		{"count 2^31, no entries", sealed(1, body(0, 1<<31))},
		{"body length 2^32-1", func() []byte {
			b := validSample()
			binary.LittleEndian.PutUint32(b[8:], math.MaxUint32)
			return b
		}()},
	}
	for _, tt := range tests {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decode(tt.data)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%s) error = %v, want ErrCorrupt", tt.name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("Decode(%s) allocated %d bytes, want <= 1 MiB", tt.name, got)
		}
	}
}
