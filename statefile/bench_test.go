package statefile

import (
	"path/filepath"
	"strconv"
	"testing"
)

// loop runs op b.N times and reports CPU ms and page faults per op.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	cpu0, flt0 := usage()
	for b.Loop() {
		op()
	}
	cpu1, flt1 := usage()
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(flt1-flt0)/float64(b.N), "faults/op")
}

// The target: encode + decode of 10^6 devices well under 100 ms.
const benchDevices = 1_000_000

func BenchmarkEncode1M(b *testing.B) {
	st := manyDevices(benchDevices)
	data, err := Encode(st)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	loop(b, func() {
		if _, err := Encode(st); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkEncode1MSeparateNames is BenchmarkEncode1M with a million
// separately allocated names, whose marking by the garbage collector (a
// cost of the caller's heap, not of the codec) is then included.
func BenchmarkEncode1MSeparateNames(b *testing.B) {
	st := manyDevicesSeparateNames(benchDevices)
	loop(b, func() {
		if _, err := Encode(st); err != nil {
			b.Fatal(err)
		}
	})
}

// hashedNames renames the devices to "v<k>p": a suffix after the number,
// so no name takes nameSet's bitmap path and all are hashed.
func hashedNames(st *State) *State {
	for i := range st.Devices {
		st.Devices[i].Name = "v" + strconv.Itoa(i+1) + "p"
	}
	return st
}

// BenchmarkEncode1MHashedNames and BenchmarkDecode1MHashedNames measure the
// general duplicate check, for names that are not prefix + number.
func BenchmarkEncode1MHashedNames(b *testing.B) {
	st := hashedNames(manyDevices(benchDevices))
	loop(b, func() {
		if _, err := Encode(st); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkDecode1MHashedNames(b *testing.B) {
	data, err := Encode(hashedNames(manyDevices(benchDevices)))
	if err != nil {
		b.Fatal(err)
	}
	loop(b, func() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkDecode1M(b *testing.B) {
	data, err := Encode(manyDevices(benchDevices))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	loop(b, func() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRoundTrip1M is one encode plus one decode, the figure the target
// is stated in.
func BenchmarkRoundTrip1M(b *testing.B) {
	st := manyDevices(benchDevices)
	loop(b, func() {
		data, err := Encode(st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSaveLoad1M adds the file system: temp file, fsync, rename,
// directory fsync, then a full Load.
func BenchmarkSaveLoad1M(b *testing.B) {
	st := manyDevices(benchDevices)
	path := filepath.Join(b.TempDir(), "state")
	loop(b, func() {
		if err := Save(path, st); err != nil {
			b.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	})
}
