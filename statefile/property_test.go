package statefile

import (
	"fmt"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestNameKeyMatchesNameProblem: the word-at-a-time check accepts exactly
// the names the byte-at-a-time reference accepts, and equal names hash
// equally.
func TestNameKeyMatchesNameProblem(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, name string) {
		h, ok := nameKey(name)
		if want := nameProblem(name) == ""; ok != want {
			t.Fatalf("nameKey(%q) ok = %v, want %v (nameProblem = %q)", name, ok, want, nameProblem(name))
		}
		if h2, _ := nameKey(string([]byte(name))); ok && h2 != h {
			t.Fatalf("nameKey(%q) = %x then %x, want equal", name, h, h2)
		}
	}
	// Every byte in every position of names of every length.
	check(t, "")
	for n := 1; n <= MaxNameLen+1; n++ {
		for pos := range n {
			for c := range 256 {
				b := bytesOf(n, '0')
				b[pos] = byte(c)
				check(t, string(b))
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		check(t, rapid.String().Draw(t, "name"))
		check(t, string(rapid.SliceOfN(rapid.Byte(), 0, 17).Draw(t, "bytes")))
	})
}

// TestNameKeyDistinguishesPadding: names that differ only by trailing
// bytes equal to the padding must still hash apart (else duplicates of
// them would need a string comparison every time, and the hash would be
// poor).
func TestNameKeyDistinguishesPadding(t *testing.T) {
	seen := map[uint64]string{}
	for n := 1; n <= MaxNameLen; n++ {
		for _, c := range []byte{'a', 'b'} {
			name := string(bytesOf(n, c))
			h, ok := nameKey(name)
			if !ok {
				t.Fatalf("nameKey(%q) ok = false, want true", name)
			}
			if other, dup := seen[h]; dup {
				t.Errorf("nameKey(%q) = nameKey(%q) = %x, want different hashes", name, other, h)
			}
			seen[h] = name
		}
	}
}

func bytesOf(n int, c byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// findDup runs the dupFinder over names; partitionSize > 0 overrides the
// partitions' capacity, to force the overflow path.
func findDup(names []string, partitionSize ...int) (int, int) {
	devs := make([]Device, len(names))
	d := newDupFinder(len(names))
	if len(partitionSize) > 0 {
		d.size = partitionSize[0]
	}
	for i, n := range names {
		devs[i].Name = n
		h, _ := nameKey(n)
		d.add(i, h)
	}
	return d.find(devs)
}

// TestDupFinderMatchesMap compares the dupFinder with a map on random name
// lists, drawn from a small alphabet so that duplicates are common, and
// large enough to span many partitions.
func TestDupFinderMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfN(rapid.StringMatching(`[a-c]{1,6}`), 0, 300).Draw(t, "names")
		if rapid.Bool().Draw(t, "big") {
			// Many distinct names, then maybe one duplicate of a random one.
			n := rapid.IntRange(4000, 20000).Draw(t, "n")
			names = names[:0]
			for i := range n {
				names = append(names, fmt.Sprintf("d%d", i))
			}
			if rapid.Bool().Draw(t, "dup") {
				names = append(names, names[rapid.IntRange(0, n-1).Draw(t, "of")])
			}
		}
		seen := map[string]bool{}
		wantDup := false
		for _, n := range names {
			wantDup = wantDup || seen[n]
			seen[n] = true
		}
		var i, j int
		if rapid.Bool().Draw(t, "overflow") {
			i, j = findDup(names, 1) // every partition overflows at its second name
		} else {
			i, j = findDup(names)
		}
		if gotDup := i >= 0; gotDup != wantDup {
			t.Fatalf("findDup(%d names) = %d, %d; want a duplicate: %v", len(names), i, j, wantDup)
		}
		if i >= 0 && !(i < j && names[i] == names[j]) {
			t.Fatalf("findDup(%d names) = %d, %d (%q, %q); want i < j with equal names", len(names), i, j, names[i], names[j])
		}
	})
}

// TestDupFinderAtScale plants one duplicate at both ends of 10^6 names.
func TestDupFinderAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("10^6 names")
	}
	st := manyDevices(1_000_000)
	names := make([]string, len(st.Devices))
	for i, d := range st.Devices {
		names[i] = d.Name
	}
	if i, j := findDup(names); i >= 0 {
		t.Fatalf("findDup(10^6 distinct) = %d, %d; want -1, -1", i, j)
	}
	names[len(names)-1] = names[0]
	if i, j := findDup(names); i != 0 || j != len(names)-1 {
		t.Errorf("findDup(10^6, first == last) = %d, %d; want 0, %d", i, j, len(names)-1)
	}
}

// TestNameSetMatchesReference checks nameSet, fast path and hash path
// together, against nameProblem and a map, on names built to hit the
// corners: the first name's prefix with numbers in and out of canonical
// form, beyond the bitmap's limit, too long, invalid, and unrelated names.
func TestNameSetMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SampledFrom([]string{"dummy", "d", "", "a:", "x y", "fourteen-bytes", "."}).Draw(t, "prefix")
		gen := rapid.OneOf(
			rapid.Custom(func(t *rapid.T) string {
				return prefix + strconv.Itoa(rapid.IntRange(0, 300).Draw(t, "k"))
			}),
			rapid.Custom(func(t *rapid.T) string { // leading zeros
				return prefix + "0" + strconv.Itoa(rapid.IntRange(0, 30).Draw(t, "k"))
			}),
			rapid.Custom(func(t *rapid.T) string { // past the bitmap's limit
				return prefix + strconv.Itoa(rapid.IntRange(1_000_000, 1_000_010).Draw(t, "k"))
			}),
			rapid.StringMatching(`[a-e0-9.:]{0,4}`),
			rapid.StringMatching(`[a-z0-9]{14,17}`),
		)
		names := rapid.SliceOfN(gen, 1, 200).Draw(t, "names")
		devs := make([]Device, len(names))
		s := newNameSet(len(names))
		seen := map[string]bool{}
		wantDup := false
		for i, n := range names {
			devs[i].Name = n
			ok := s.add(i, n)
			if want := nameProblem(n) == ""; ok != want {
				t.Fatalf("nameSet.add(%q) = %v, want %v (nameProblem %q)", n, ok, want, nameProblem(n))
			}
			if !ok {
				return // Encode and Decode stop at the first invalid name
			}
			wantDup = wantDup || seen[n]
			seen[n] = true
		}
		i, j := s.find(devs)
		if (i >= 0) != wantDup || i >= 0 && !(i < j && names[i] == names[j]) {
			t.Fatalf("nameSet.find(%q) = %d, %d; want a duplicate pair: %v", names, i, j, wantDup)
		}
	})
}
