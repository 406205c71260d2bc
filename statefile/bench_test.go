package statefile

import (
	"path/filepath"
	"testing"
)

// The target: encode + decode of 10^6 devices well under 100 ms.
const benchDevices = 1_000_000

func BenchmarkEncode1M(b *testing.B) {
	st := manyDevices(benchDevices)
	data, err := Encode(st)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(st); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode1M(b *testing.B) {
	data, err := Encode(manyDevices(benchDevices))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip1M is one encode plus one decode, the figure the target
// is stated in.
func BenchmarkRoundTrip1M(b *testing.B) {
	st := manyDevices(benchDevices)
	b.ReportAllocs()
	for b.Loop() {
		data, err := Encode(st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveLoad1M adds the file system: temp file, fsync, rename,
// directory fsync, then a full Load.
func BenchmarkSaveLoad1M(b *testing.B) {
	st := manyDevices(benchDevices)
	path := filepath.Join(b.TempDir(), "state")
	b.ReportAllocs()
	for b.Loop() {
		if err := Save(path, st); err != nil {
			b.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
