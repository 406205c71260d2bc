package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var updateCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite the seed files of testdata/fuzz/FuzzDecode")

// fuzzSeeds are valid encodings and every corruption class.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, st := range []*State{
		{}, {NextIfindex: 9},
		{NextIfindex: 3, Devices: []Device{{Ifindex: 1, Name: "dummy0", Flags: 1}, {Ifindex: 3, Name: "dummy1"}}},
		{NextIfindex: 2147483647, Devices: []Device{{Ifindex: 200, Name: "fifteen-bytes-x", Flags: 0xFFFFFFFF}, {Ifindex: 2147483647, Name: "\xff"}}},
		manyDevices(20),
	} {
		b, err := Encode(st)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, b)
	}
	for _, c := range corruptCases() {
		seeds = append(seeds, c.data)
	}
	b, err := Encode(netnsSample()) // format version 2
	if err != nil {
		panic(err)
	}
	return append(seeds, b)
}

// resealed returns data with a valid magic, version, length and checksum,
// so that the fuzzer's mutations reach the body parser instead of stopping
// at the checksum. A version this package reads is kept (so that both body
// layouts are fuzzed); any other becomes the current one.
func resealed(data []byte) []byte {
	b := bytes.Clone(data)
	copy(b, magic)
	if v := binary.LittleEndian.Uint16(b[6:]); v < MinVersion || v > Version {
		binary.LittleEndian.PutUint16(b[6:], Version)
	}
	binary.LittleEndian.PutUint32(b[8:], uint32(len(b)-headerSize))
	binary.LittleEndian.PutUint32(b[12:], checksum(b))
	return b
}

// checkDecode is the fuzz property: Decode never panics, fails only with a
// *FormatError (ErrForeign exactly when the magic is missing), allocates in proportion to its input, and what it accepts
// re-encodes to exactly the same bytes.
func checkDecode(t *testing.T, data []byte) {
	st, err := Decode(data)
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrForeign) {
			t.Fatalf("Decode(%q) error = %#v, want a *FormatError wrapping ErrCorrupt, ErrVersion or ErrForeign", data, err)
		}
		if errors.Is(err, ErrForeign) != (len(data) >= len(magic) && string(data[:len(magic)]) != magic || len(data) < len(magic) && string(data) != magic[:len(data)]) {
			t.Fatalf("Decode(%q) error = %v: ErrForeign must mean exactly that the data does not begin with the magic", data, err)
		}
		return
	}
	if cap(st.Devices) > len(data)/minEntry {
		t.Fatalf("Decode(%d bytes) made room for %d devices, want <= %d", len(data), cap(st.Devices), len(data)/minEntry)
	}
	if cap(st.Namespaces) > len(data)/minNamespace || cap(st.Veths) > len(data)/minPair {
		t.Fatalf("Decode(%d bytes) made room for %d namespaces and %d pairs, want <= %d and %d",
			len(data), cap(st.Namespaces), cap(st.Veths), len(data)/minNamespace, len(data)/minPair)
	}
	out, err := Encode(st)
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("Encode(Decode(%q)) = %q, %v; want the input back", data, out, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if len(data) >= headerSize {
			checkDecode(t, resealed(data))
		}
	})
}

// TestWriteFuzzCorpus rewrites the committed seed corpus when run with
// -update-fuzz-corpus; the seeds also run as ordinary tests through f.Add.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-fuzz-corpus to rewrite testdata/fuzz/FuzzDecode/seed-*")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds() {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
