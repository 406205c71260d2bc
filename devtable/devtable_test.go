package devtable

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// check verifies the table's internal invariants.
func (t *Table[T]) check() error {
	n := 0
	for b := range t.bk {
		bk := t.at(int32(b))
		if len(bk.lasts) != len(bk.chunks) {
			return fmt.Errorf("bucket %d: %d lasts for %d chunks", b, len(bk.lasts), len(bk.chunks))
		}
		prev := int32(0)
		for ci, ch := range bk.chunks {
			if len(ch) == 0 || len(ch) > chunkMax {
				return fmt.Errorf("bucket %d chunk %d has %d entries", b, ci, len(ch))
			}
			if bk.lasts[ci] != ch[len(ch)-1].key {
				return fmt.Errorf("bucket %d chunk %d: last %d, directory says %d", b, ci, ch[len(ch)-1].key, bk.lasts[ci])
			}
			for _, r := range ch {
				if r.key <= prev {
					return fmt.Errorf("bucket %d: key %d after %d", b, r.key, prev)
				}
				if int(r.key&t.mask) != b {
					return fmt.Errorf("key %d in bucket %d", r.key, b)
				}
				if _, got := t.nameFind(r.name, hashName(r.name)); got == nil || got.key != r.key {
					return fmt.Errorf("name %q of %d not found in the name hash", r.name, r.key)
				}
				prev = r.key
				n++
			}
		}
	}
	if n != t.n {
		return fmt.Errorf("buckets hold %d entries, Len() = %d", n, t.n)
	}
	names := 0
	for _, s := range t.names {
		if s != 0 {
			names++
		}
	}
	if names != t.n {
		return fmt.Errorf("name hash holds %d names, Len() = %d", names, t.n)
	}
	return nil
}

func TestOperations(t *testing.T) {
	type step struct {
		call string
		run  func(tb *Table[int]) string
		want string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"insert and look up", []step{
			{"Insert(eth0, 1, 10)", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("eth0", 1, 10)) }, "<nil>"},
			{"ByName(eth0)", func(tb *Table[int]) string { return fmt.Sprint(tb.ByName("eth0")) }, "10 true"},
			{"ByIndex(1)", func(tb *Table[int]) string { return fmt.Sprint(tb.ByIndex(1)) }, "10 true"},
			{"ByIndex(2)", func(tb *Table[int]) string { return fmt.Sprint(tb.ByIndex(2)) }, "0 false"},
			{"ByName(eth1)", func(tb *Table[int]) string { return fmt.Sprint(tb.ByName("eth1")) }, "0 false"},
			{"Len()", func(tb *Table[int]) string { return fmt.Sprint(tb.Len()) }, "1"},
		}},
		{"duplicates are refused and change nothing", []step{
			{"Insert(a, 5, 1)", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("a", 5, 1)) }, "<nil>"},
			{"Insert(a, 6, 2)", func(tb *Table[int]) string {
				return fmt.Sprint(errors.Is(tb.Insert("a", 6, 2), ErrDuplicateName))
			}, "true"},
			{"Insert(b, 5, 2)", func(tb *Table[int]) string {
				return fmt.Sprint(errors.Is(tb.Insert("b", 5, 2), ErrDuplicateIndex))
			}, "true"},
			{"state", func(tb *Table[int]) string {
				v, _ := tb.ByIndex(5)
				_, b := tb.ByName("b")
				_, six := tb.ByIndex(6)
				return fmt.Sprint(tb.Len(), v, b, six)
			}, "1 1 false false"},
		}},
		{"invalid input", []step{
			{"Insert(\"\", 1, 0)", func(tb *Table[int]) string { return fmt.Sprint(errors.Is(tb.Insert("", 1, 0), ErrInvalid)) }, "true"},
			{"Insert(x, 0, 0)", func(tb *Table[int]) string { return fmt.Sprint(errors.Is(tb.Insert("x", 0, 0), ErrInvalid)) }, "true"},
			{"Insert(x, -3, 0)", func(tb *Table[int]) string { return fmt.Sprint(errors.Is(tb.Insert("x", -3, 0), ErrInvalid)) }, "true"},
			{"Insert(x, 1<<31, 0)", func(tb *Table[int]) string {
				return fmt.Sprint(errors.Is(tb.Insert("x", 1<<31, 0), ErrInvalid))
			}, "true"},
			{"Insert(x, MaxIndex, 0)", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("x", MaxIndex, 0)) }, "<nil>"},
			{"Len()", func(tb *Table[int]) string { return fmt.Sprint(tb.Len()) }, "1"},
		}},
		{"remove", []step{
			{"Insert(a, 3, 7)", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("a", 3, 7)) }, "<nil>"},
			{"Remove(3)", func(tb *Table[int]) string { return fmt.Sprint(tb.Remove(3)) }, "7 true"},
			{"Remove(3) again", func(tb *Table[int]) string { return fmt.Sprint(tb.Remove(3)) }, "0 false"},
			{"ByName(a)", func(tb *Table[int]) string { return fmt.Sprint(tb.ByName("a")) }, "0 false"},
			{"Insert(a, 3, 8) reuses both keys", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("a", 3, 8)) }, "<nil>"},
			{"ByName(a)", func(tb *Table[int]) string { return fmt.Sprint(tb.ByName("a")) }, "8 true"},
		}},
		{"rename", []step{
			{"Insert(a, 1, 1)", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("a", 1, 1)) }, "<nil>"},
			{"Insert(b, 2, 2)", func(tb *Table[int]) string { return fmt.Sprint(tb.Insert("b", 2, 2)) }, "<nil>"},
			{"Rename(1, b)", func(tb *Table[int]) string { return fmt.Sprint(errors.Is(tb.Rename(1, "b"), ErrDuplicateName)) }, "true"},
			{"Rename(9, c)", func(tb *Table[int]) string { return fmt.Sprint(errors.Is(tb.Rename(9, "c"), ErrNotFound)) }, "true"},
			{"Rename(1, \"\")", func(tb *Table[int]) string { return fmt.Sprint(errors.Is(tb.Rename(1, ""), ErrInvalid)) }, "true"},
			{"Rename(1, a)", func(tb *Table[int]) string { return fmt.Sprint(tb.Rename(1, "a")) }, "<nil>"},
			{"Rename(1, c)", func(tb *Table[int]) string { return fmt.Sprint(tb.Rename(1, "c")) }, "<nil>"},
			{"lookups", func(tb *Table[int]) string {
				_, a := tb.ByName("a")
				c, _ := tb.ByName("c")
				n, _ := tb.NameOf(1)
				i, _ := tb.IndexOf("c")
				return fmt.Sprintln(a, c, n, i)
			}, "false 1 c 1\n"},
		}},
	}
	for _, tt := range tests {
		tb := New[int](4)
		for _, s := range tt.steps {
			if got := s.run(tb); got != s.want {
				t.Errorf("%s: %s = %s, want %s", tt.name, s.call, got, s.want)
			}
		}
		if err := tb.check(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestNewPanicsOnBadBuckets(t *testing.T) {
	for _, nb := range []int{0, -1, 3, 6, 1 << 21} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", nb)
				}
			}()
			New[int](nb)
		}()
	}
}

// listAll reads the whole table with List in pages of size page.
func listAll[T any](tb *Table[T], page int) []int {
	var got []int
	c := Cursor{}
	for calls := 0; !c.Done(); calls++ {
		if calls > tb.Len()+len(tb.bk)+2 {
			panic("listing does not end")
		}
		c = tb.List(c, page, func(ifindex int, _ string, _ T) { got = append(got, ifindex) })
	}
	return got
}

func listAllNaive[T any](tb *Table[T], page int) []int {
	var got []int
	pos, done := 0, false
	for !done {
		pos, done = tb.ListNaive(pos, page, func(ifindex int, _ string, _ T) { got = append(got, ifindex) })
	}
	return got
}

// TestManyPerBucket is the regression test from the 2009 review of the
// /proc/net/tcp reader: thousands of entries in few buckets, read through
// small pages, must list every entry exactly once.
func TestManyPerBucket(t *testing.T) {
	const n = 4096
	for _, nb := range []int{1, 4, 256} {
		tb := New[int](nb)
		for i := 1; i <= n; i++ {
			if err := tb.Insert(fmt.Sprintf("dev%d", i), i, i); err != nil {
				t.Fatal(err)
			}
		}
		for _, page := range []int{1, 3, 7, 28, 1000, n, n + 1} {
			for _, naive := range []bool{false, true} {
				var got []int
				if naive {
					got = listAllNaive(tb, page)
				} else {
					got = listAll(tb, page)
				}
				seen := map[int]bool{}
				for _, i := range got {
					seen[i] = true
				}
				if len(got) != n || len(seen) != n {
					t.Errorf("nbuckets=%d naive=%v page=%d: listed %d entries (%d distinct), want %d",
						nb, naive, page, len(got), len(seen), n)
				}
			}
		}
		if tb.resumeSearches != 0 {
			t.Errorf("nbuckets=%d: %d resumes searched on an unchanged table, want 0", nb, tb.resumeSearches)
		}
	}
}

// TestListOrderMatchesNaive checks that both readers give the same order
// and that it is (bucket, ifindex).
func TestListOrderMatchesNaive(t *testing.T) {
	tb := New[string](8)
	for _, i := range []int{40, 3, 17, 8, 1, 1000, 9, 16, 24, 2} {
		_ = tb.Insert(fmt.Sprint("d", i), i, "")
	}
	want := []int{8, 16, 24, 40, 1000, 1, 9, 17, 2, 3}
	if got := listAll(tb, 3); !slices.Equal(got, want) {
		t.Errorf("List pages of 3 = %v, want %v", got, want)
	}
	if got := listAllNaive(tb, 3); !slices.Equal(got, want) {
		t.Errorf("ListNaive pages of 3 = %v, want %v", got, want)
	}
}

func TestListEdges(t *testing.T) {
	tb := New[int](4)
	if c := tb.List(Cursor{}, 10, func(int, string, int) {}); !c.Done() {
		t.Errorf("List(empty table) Done() = false, want true")
	}
	_ = tb.Insert("a", 1, 0)
	_ = tb.Insert("b", 2, 0)
	c := tb.List(Cursor{}, 2, func(int, string, int) {})
	if !c.Done() {
		t.Errorf("List(2 of 2 entries) Done() = false, want true")
	}
	c = tb.List(Cursor{}, 0, func(int, string, int) {})
	if c.Done() {
		t.Errorf("List(max 0) Done() = true, want false")
	}
	if next, done := tb.ListNaive(0, 2, func(int, string, int) {}); next != 2 || !done {
		t.Errorf("ListNaive(0, 2) = %d, %v, want 2, true", next, done)
	}
	// A cursor of a table with more buckets ends this listing.
	big := New[int](64)
	for i := 1; i <= 64; i++ {
		_ = big.Insert(fmt.Sprint(i), i, 0)
	}
	bc := big.List(Cursor{}, 40, func(int, string, int) {})
	if got := tb.List(bc, 10, func(int, string, int) {}); !got.Done() {
		t.Errorf("List(foreign cursor) Done() = false, want true")
	}
}

// TestResumeIsCached checks the O(1) resume: a change in one bucket makes
// only a resume in that bucket search.
func TestResumeIsCached(t *testing.T) {
	tb := New[int](4)
	for i := 1; i <= 400; i++ {
		_ = tb.Insert(fmt.Sprint(i), i, 0)
	}
	c := tb.List(Cursor{}, 10, func(int, string, int) {}) // in bucket 0
	_ = tb.Insert("x", 1001, 0)                           // bucket 1
	c = tb.List(c, 10, func(int, string, int) {})
	if tb.resumeSearches != 0 {
		t.Errorf("after a change in another bucket: %d searches, want 0", tb.resumeSearches)
	}
	tb.Remove(4) // bucket 0, before the cursor
	var got []int
	c = tb.List(c, 1, func(i int, _ string, _ int) { got = append(got, i) })
	if tb.resumeSearches != 1 || !slices.Equal(got, []int{84}) {
		t.Errorf("after a removal in the cursor's bucket: searches %d, listed %v, want 1, [84]", tb.resumeSearches, got)
	}
	_ = c
}

func TestRange(t *testing.T) {
	tb := New[int](4)
	keys := []int{77, 5, 1, 4096, 12, 13, 2, 3, 1000000}
	for _, k := range keys {
		_ = tb.Insert(fmt.Sprint("n", k), k, k*2)
	}
	var got []int
	tb.Range(func(i int, name string, v int) bool {
		if name != fmt.Sprint("n", i) || v != 2*i {
			t.Errorf("Range visit(%d, %q, %d), want name n%d value %d", i, name, v, i, 2*i)
		}
		got = append(got, i)
		return true
	})
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Range order = %v, want %v", got, want)
	}
	got = got[:0]
	tb.Range(func(i int, _ string, _ int) bool { got = append(got, i); return len(got) < 3 })
	if !slices.Equal(got, want[:3]) {
		t.Errorf("Range stopped after 3 = %v, want %v", got, want[:3])
	}
}

// TestListUnderChurn is the property test of List: under random inserts,
// removals and renames between pages, no entry that existed throughout a
// listing is lost or repeated, every visited entry exists when visited,
// the order is (bucket, ifindex), and the listing ends.
func TestListUnderChurn(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nb := rapid.SampledFrom([]int{1, 2, 4, 256}).Draw(t, "nbuckets")
		maxIdx := rapid.SampledFrom([]int{50, 2000}).Draw(t, "maxIndex")
		tb := New[int](nb)
		model := map[int]string{} // ifindex -> name
		names := map[string]int{}
		serial := 0
		newName := func() string { serial++; return fmt.Sprint("d", serial) }
		insert := func(t *rapid.T, i int) {
			name := newName()
			err := tb.Insert(name, i, i*7)
			if _, dup := model[i]; dup {
				if !errors.Is(err, ErrDuplicateIndex) {
					t.Fatalf("Insert(%q, %d) = %v, want ErrDuplicateIndex", name, i, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Insert(%q, %d) = %v, want nil", name, i, err)
			}
			model[i], names[name] = name, i
		}
		// Some initial bulk so that buckets hold several chunks.
		bulk := rapid.IntRange(0, 600).Draw(t, "bulk")
		for k := 0; k < bulk; k++ {
			insert(t, 1+k*maxIdx/600)
		}
		// Entries present at the start and never removed since: they must
		// be listed exactly once. (A rename keeps the entry.)
		throughout := map[int]bool{}
		idx := rapid.IntRange(1, maxIdx)
		mutate := func(t *rapid.T) {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				insert(t, idx.Draw(t, "ins"))
			case 2:
				i := idx.Draw(t, "del")
				v, ok := tb.Remove(i)
				name, want := model[i]
				if ok != want || (ok && v != i*7) {
					t.Fatalf("Remove(%d) = %d, %v, want %d, %v", i, v, ok, i*7, want)
				}
				delete(model, i)
				delete(names, name)
				delete(throughout, i)
			case 3:
				i := idx.Draw(t, "ren")
				name := newName()
				err := tb.Rename(i, name)
				old, ok := model[i]
				if !ok {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("Rename(%d, %q) = %v, want ErrNotFound", i, name, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Rename(%d, %q) = %v, want nil", i, name, err)
				}
				delete(names, old)
				model[i], names[name] = name, i
			}
		}
		page := rapid.IntRange(1, 40).Draw(t, "page")
		for i := range model {
			throughout[i] = true
		}
		seen := map[int]bool{}
		var lastB, lastI = -1, 0
		c := Cursor{}
		for calls := 0; !c.Done(); calls++ {
			if calls > 5000 {
				t.Fatalf("listing did not end after %d pages", calls)
			}
			c = tb.List(c, page, func(i int, name string, v int) {
				if model[i] != name || v != i*7 {
					t.Fatalf("List visited (%d, %q, %d), model has %q", i, name, v, model[i])
				}
				if seen[i] {
					t.Fatalf("List visited %d twice", i)
				}
				seen[i] = true
				b := i & (nb - 1)
				if b < lastB || (b == lastB && i <= lastI) {
					t.Fatalf("List visited %d (bucket %d) after %d (bucket %d)", i, b, lastI, lastB)
				}
				lastB, lastI = b, i
			})
			for k := rapid.IntRange(0, 8).Draw(t, "mutations"); k > 0; k-- {
				mutate(t)
			}
		}
		for i := range throughout {
			if !seen[i] {
				t.Fatalf("List lost %d, which existed throughout", i)
			}
		}
		if got, want := tb.Len(), len(model); got != want {
			t.Fatalf("Len() = %d, want %d", got, want)
		}
		for name, i := range names {
			if got, ok := tb.IndexOf(name); !ok || got != i {
				t.Fatalf("IndexOf(%q) = %d, %v, want %d, true", name, got, ok, i)
			}
		}
		if err := tb.check(); err != nil {
			t.Fatal(err)
		}
		// A fresh listing sees exactly the model.
		got := listAll(tb, page)
		if len(got) != len(model) {
			t.Fatalf("fresh listing has %d entries, model %d", len(got), len(model))
		}
	})
}
