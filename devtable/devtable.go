// Package devtable is one network namespace's device table: entries keyed by
// a unique name and a unique ifindex, hashed into a fixed number of index
// buckets (the kernel uses 256) and found by name through an FNV-1a hash.
//
// The table exists to list large registries through small pages the way the
// fixed /proc/net/tcp reader does, and to contrast that with the old reader:
//
//   - List resumes from a Cursor in O(1): the cursor caches the (bucket,
//     position) of the next entry and the last ifindex it returned. The
//     cached position is trusted only if the entry just before it still
//     carries that ifindex; otherwise (entries were added or removed in
//     that bucket meanwhile) the position is found again by searching the
//     bucket for the first ifindex above the last one returned.
//   - ListNaive restarts from the head of the table on every call and skips
//     the entries already returned, which makes a whole listing
//     O(n * n / page).
//
// Invariants:
//   - names are unique, ifindexes are unique and lie in [1, MaxIndex];
//   - each index bucket (ifindex & (nbuckets-1)) is kept sorted by ifindex,
//     as a list of chunks of at most chunkMax entries, so that insert and
//     remove cost O(log n + chunkMax) whatever the bucket's length;
//   - List and Range output depends only on the table's contents, never on
//     the history of insertions or on Go's map order: the name hash is
//     FNV-1a with its fixed offset basis;
//   - a listing with List visits every entry that existed throughout it
//     exactly once, whatever is inserted or removed between calls, and ends;
//   - a failed call changes nothing.
//
// A Table is not safe for concurrent use: the owner holds its lock. The
// visit callbacks of List, ListNaive and Range must not modify the table.
package devtable

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// MaxIndex is the largest ifindex a table accepts (the kernel's ifindex is a
// positive int).
const MaxIndex = math.MaxInt32

// Errors; test them with errors.Is.
var (
	ErrDuplicateName  = errors.New("devtable: name already in use")
	ErrDuplicateIndex = errors.New("devtable: ifindex already in use")
	ErrNotFound       = errors.New("devtable: no such ifindex")
	ErrInvalid        = errors.New("devtable: invalid name or ifindex")
)

// chunkMax is the most entries one chunk of an index bucket holds. Inserting
// into the middle of a chunk moves at most this many 8-byte items.
const chunkMax = 128

// item is one entry's place in an index bucket.
type item struct {
	key  int32 // ifindex
	slot int32 // position in Table.ents
}

type entry[T any] struct {
	name    string
	ifindex int32
	used    bool
	v       T
}

// Table holds entries keyed by a unique name and a unique ifindex. The zero
// value is not usable; call New.
type Table[T any] struct {
	// idx[b] is index bucket b: chunks of items sorted by key, every
	// chunk non-empty.
	idx  [][][]item
	mask int32 // nbuckets - 1

	// ents is a slab of entries; free lists its unused slots.
	ents []entry[T]
	free []int32
	n    int

	// names is an open-addressed (linear probing) hash of names. A slot is
	// 0 when empty, else hash32<<32 | (ents slot + 1).
	names []uint64

	// resumeSearches counts List resumes whose cached position was stale.
	resumeSearches int
}

// New returns an empty table with nbuckets index buckets. It panics unless
// nbuckets is a power of two in [1, 1<<20].
func New[T any](nbuckets int) *Table[T] {
	if nbuckets < 1 || nbuckets > 1<<20 || nbuckets&(nbuckets-1) != 0 {
		panic(fmt.Sprintf("devtable.New(%d): nbuckets must be a power of two in [1, 1048576]", nbuckets))
	}
	return &Table[T]{
		idx:   make([][][]item, nbuckets),
		mask:  int32(nbuckets - 1),
		names: make([]uint64, 8),
	}
}

// Len returns the number of entries.
func (t *Table[T]) Len() int { return t.n }

// Buckets returns the number of index buckets.
func (t *Table[T]) Buckets() int { return len(t.idx) }

// --- name hash -------------------------------------------------------------

// hashName is FNV-1a (64-bit) folded to 32 bits.
func hashName(s string) uint32 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return uint32(h ^ h>>32)
}

// NameHash returns the name's hash, for callers that report which name
// bucket (NameHash(name) & (nbuckets-1)) a device would chain into.
func NameHash(name string) uint32 { return hashName(name) }

// nameFind returns the names slot holding name, or the empty slot where it
// would go.
func (t *Table[T]) nameFind(name string, h uint32) (int, bool) {
	mask := len(t.names) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := t.names[i]
		if s == 0 {
			return i, false
		}
		if uint32(s>>32) == h && t.ents[uint32(s)-1].name == name {
			return i, true
		}
	}
}

// nameAdd records name -> slot; name must be absent.
func (t *Table[T]) nameAdd(name string, slot int32) {
	if 4*(t.n+1) > 3*len(t.names) {
		t.nameGrow()
	}
	h := hashName(name)
	i, _ := t.nameFind(name, h)
	t.names[i] = uint64(h)<<32 | uint64(slot+1)
}

func (t *Table[T]) nameGrow() {
	old := t.names
	t.names = make([]uint64, 2*len(old))
	mask := len(t.names) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := int(uint32(s>>32)) & mask
		for t.names[i] != 0 {
			i = (i + 1) & mask
		}
		t.names[i] = s
	}
}

// nameDel empties names slot i, shifting later members of its probe run
// back so that lookups never stop early.
func (t *Table[T]) nameDel(i int) {
	mask := len(t.names) - 1
	j := i
	for {
		j = (j + 1) & mask
		s := t.names[j]
		if s == 0 {
			break
		}
		home := int(uint32(s>>32)) & mask
		// Move s into the hole at i unless its home lies in (i, j].
		if (j-home)&mask >= (j-i)&mask {
			t.names[i] = s
			i = j
		}
	}
	t.names[i] = 0
}

// --- index buckets ---------------------------------------------------------

func (t *Table[T]) bucketOf(ifindex int32) int { return int(ifindex & t.mask) }

// search returns the position of the first item with key >= key in bucket
// b: chunk ci (len(chunks) when there is none) and offset pi in it.
func search(chunks [][]item, key int32) (ci, pi int) {
	lo, hi := 0, len(chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c := chunks[m]; c[len(c)-1].key < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(chunks) {
		return lo, 0
	}
	c := chunks[lo]
	a, z := 0, len(c)
	for a < z {
		m := int(uint(a+z) >> 1)
		if c[m].key < key {
			a = m + 1
		} else {
			z = m
		}
	}
	return lo, a
}

// lookup returns the slot of ifindex, or -1.
func (t *Table[T]) lookup(ifindex int) int32 {
	if ifindex < 1 || ifindex > MaxIndex {
		return -1
	}
	key := int32(ifindex)
	chunks := t.idx[t.bucketOf(key)]
	ci, pi := search(chunks, key)
	if ci < len(chunks) && chunks[ci][pi].key == key {
		return chunks[ci][pi].slot
	}
	return -1
}

// idxInsert puts it into its bucket; its key must be absent.
func (t *Table[T]) idxInsert(it item) {
	b := t.bucketOf(it.key)
	chunks := t.idx[b]
	if len(chunks) == 0 {
		t.idx[b] = append(chunks, []item{it})
		return
	}
	ci, pi := search(chunks, it.key)
	if ci == len(chunks) {
		// Past the last key: append to the last chunk, or start a new
		// chunk when it is full, so that ascending inserts fill chunks.
		ci--
		if c := chunks[ci]; len(c) == chunkMax {
			t.idx[b] = append(chunks, make([]item, 1, 8))
			t.idx[b][ci+1][0] = it
			return
		}
		chunks[ci] = append(chunks[ci], it)
		return
	}
	c := chunks[ci]
	if len(c) == chunkMax {
		// Split in two halves, each with room to grow.
		half := chunkMax / 2
		right := make([]item, chunkMax-half, chunkMax)
		copy(right, c[half:])
		c = c[:half]
		chunks = append(chunks, nil)
		copy(chunks[ci+2:], chunks[ci+1:])
		chunks[ci], chunks[ci+1] = c, right
		t.idx[b] = chunks
		if pi > half {
			ci, pi, c = ci+1, pi-half, right
		}
	}
	c = append(c, item{})
	copy(c[pi+1:], c[pi:])
	c[pi] = it
	chunks[ci] = c
}

// idxRemove deletes key from its bucket; key must be present.
func (t *Table[T]) idxRemove(key int32) {
	b := t.bucketOf(key)
	chunks := t.idx[b]
	ci, pi := search(chunks, key)
	c := chunks[ci]
	copy(c[pi:], c[pi+1:])
	c = c[:len(c)-1]
	chunks[ci] = c
	switch {
	case len(c) == 0:
		copy(chunks[ci:], chunks[ci+1:])
		chunks[len(chunks)-1] = nil
		t.idx[b] = chunks[:len(chunks)-1]
	case len(c) < chunkMax/4:
		// Merge a sparse chunk into a neighbour so that chunks stay at
		// least a quarter full on average and memory follows the count.
		if ci+1 < len(chunks) && len(c)+len(chunks[ci+1]) <= chunkMax*3/4 {
			chunks[ci] = append(c, chunks[ci+1]...)
			copy(chunks[ci+1:], chunks[ci+2:])
			chunks[len(chunks)-1] = nil
			t.idx[b] = chunks[:len(chunks)-1]
		} else if ci > 0 && len(c)+len(chunks[ci-1]) <= chunkMax*3/4 {
			chunks[ci-1] = append(chunks[ci-1], c...)
			copy(chunks[ci:], chunks[ci+1:])
			chunks[len(chunks)-1] = nil
			t.idx[b] = chunks[:len(chunks)-1]
		}
	}
}

// --- operations ------------------------------------------------------------

func validIndex(ifindex int) bool { return ifindex >= 1 && ifindex <= MaxIndex }

// Insert adds an entry. It fails with ErrDuplicateName, ErrDuplicateIndex or
// ErrInvalid (empty name, ifindex outside [1, MaxIndex]) and then changes
// nothing.
func (t *Table[T]) Insert(name string, ifindex int, v T) error {
	if name == "" || !validIndex(ifindex) {
		return fmt.Errorf("Insert(%q, %d): %w", name, ifindex, ErrInvalid)
	}
	if _, found := t.nameFind(name, hashName(name)); found {
		return fmt.Errorf("Insert(%q, %d): %w", name, ifindex, ErrDuplicateName)
	}
	if t.lookup(ifindex) >= 0 {
		return fmt.Errorf("Insert(%q, %d): %w", name, ifindex, ErrDuplicateIndex)
	}
	var slot int32
	if k := len(t.free); k > 0 {
		slot = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		if len(t.ents) == math.MaxInt32 {
			return fmt.Errorf("Insert(%q, %d): %w: table full", name, ifindex, ErrInvalid)
		}
		slot = int32(len(t.ents))
		t.ents = append(t.ents, entry[T]{})
	}
	t.ents[slot] = entry[T]{name: name, ifindex: int32(ifindex), used: true, v: v}
	t.nameAdd(name, slot)
	t.idxInsert(item{key: int32(ifindex), slot: slot})
	t.n++
	return nil
}

// Remove deletes the entry with ifindex and returns its value.
func (t *Table[T]) Remove(ifindex int) (T, bool) {
	slot := t.lookup(ifindex)
	if slot < 0 {
		var zero T
		return zero, false
	}
	e := &t.ents[slot]
	v := e.v
	i, _ := t.nameFind(e.name, hashName(e.name))
	t.nameDel(i)
	t.idxRemove(e.ifindex)
	*e = entry[T]{} // drop references for the garbage collector
	t.free = append(t.free, slot)
	t.n--
	if t.n == 0 {
		// Give the slab back: an empty table holds no entry memory.
		t.ents, t.free = nil, nil
	}
	return v, true
}

// Rename gives the entry with ifindex a new name. It fails with ErrNotFound,
// ErrDuplicateName or ErrInvalid (empty name) and then changes nothing.
// Renaming to the current name succeeds and changes nothing.
func (t *Table[T]) Rename(ifindex int, newName string) error {
	if newName == "" {
		return fmt.Errorf("Rename(%d, %q): %w", ifindex, newName, ErrInvalid)
	}
	slot := t.lookup(ifindex)
	if slot < 0 {
		return fmt.Errorf("Rename(%d, %q): %w", ifindex, newName, ErrNotFound)
	}
	e := &t.ents[slot]
	if e.name == newName {
		return nil
	}
	if _, found := t.nameFind(newName, hashName(newName)); found {
		return fmt.Errorf("Rename(%d, %q): %w", ifindex, newName, ErrDuplicateName)
	}
	i, _ := t.nameFind(e.name, hashName(e.name))
	t.nameDel(i)
	e.name = newName
	h := hashName(newName)
	j, _ := t.nameFind(newName, h)
	t.names[j] = uint64(h)<<32 | uint64(slot+1)
	return nil
}

// ByName returns the value of the entry called name.
func (t *Table[T]) ByName(name string) (T, bool) {
	if i, found := t.nameFind(name, hashName(name)); found {
		return t.ents[uint32(t.names[i])-1].v, true
	}
	var zero T
	return zero, false
}

// IndexOf returns the ifindex of the entry called name.
func (t *Table[T]) IndexOf(name string) (int, bool) {
	if i, found := t.nameFind(name, hashName(name)); found {
		return int(t.ents[uint32(t.names[i])-1].ifindex), true
	}
	return 0, false
}

// ByIndex returns the value of the entry with ifindex.
func (t *Table[T]) ByIndex(ifindex int) (T, bool) {
	if slot := t.lookup(ifindex); slot >= 0 {
		return t.ents[slot].v, true
	}
	var zero T
	return zero, false
}

// NameOf returns the name of the entry with ifindex.
func (t *Table[T]) NameOf(ifindex int) (string, bool) {
	if slot := t.lookup(ifindex); slot >= 0 {
		return t.ents[slot].name, true
	}
	return "", false
}

// --- listing ---------------------------------------------------------------

// Cursor is an opaque resumable position in a listing. The zero Cursor
// starts a listing. A cursor holds no reference into the table; it is
// validated against the table's contents on every use.
type Cursor struct {
	bucket int   // index bucket of the next entry
	chunk  int   // cached position of the next entry in that bucket
	pos    int   //
	last   int32 // last ifindex returned from this bucket; 0 = none yet
	done   bool
}

// Done reports whether the listing has ended.
func (c Cursor) Done() bool { return c.done }

// resume returns the position in bucket c.bucket of the first entry whose
// ifindex is above c.last: the cached one when it is still right, else
// found by a search.
func (t *Table[T]) resume(c Cursor) (ci, pi int) {
	chunks := t.idx[c.bucket]
	ci, pi = c.chunk, c.pos
	if c.last == 0 {
		if ci == 0 && pi == 0 {
			return 0, 0
		}
	} else if ci >= 0 && pi >= 0 && ci <= len(chunks) {
		// The cached position is right if the item just before it
		// still carries c.last: keys are unique and sorted.
		var prev []item
		p := pi - 1
		if pi == 0 && ci > 0 {
			prev = chunks[ci-1]
			p = len(prev) - 1
		} else if ci < len(chunks) && pi <= len(chunks[ci]) {
			prev = chunks[ci]
		}
		if p >= 0 && p < len(prev) && prev[p].key == c.last {
			if ci < len(chunks) && pi == len(chunks[ci]) {
				ci, pi = ci+1, 0
			}
			return ci, pi
		}
	}
	t.resumeSearches++
	return search(chunks, c.last+1)
}

// List visits up to max entries from c in (index bucket, ifindex) order and
// returns the cursor after them; Done() on the result reports that the
// table has no entry after the ones visited. max <= 0 visits nothing and
// returns c.
func (t *Table[T]) List(c Cursor, max int, visit func(ifindex int, name string, v T)) Cursor {
	if c.done || max <= 0 {
		return c
	}
	if c.bucket < 0 {
		c = Cursor{}
	}
	n := 0
	last := c.last
	for b := c.bucket; b < len(t.idx); b++ {
		var ci, pi int
		if b == c.bucket {
			ci, pi = t.resume(c)
		} else {
			last = 0
		}
		chunks := t.idx[b]
		for ; ci < len(chunks); ci, pi = ci+1, 0 {
			ch := chunks[ci]
			for ; pi < len(ch); pi++ {
				if n == max {
					return Cursor{bucket: b, chunk: ci, pos: pi, last: last}
				}
				it := ch[pi]
				e := &t.ents[it.slot]
				visit(int(it.key), e.name, e.v)
				last = it.key
				n++
			}
		}
	}
	return Cursor{bucket: len(t.idx), done: true}
}

// ListNaive is the old reader: every call restarts from the head of the
// table and steps over pos entries one by one before visiting up to max.
// It returns the position after the visited entries and whether the table
// has no entry after them.
func (t *Table[T]) ListNaive(pos int, max int, visit func(ifindex int, name string, v T)) (next int, done bool) {
	if pos < 0 {
		pos = 0
	}
	i, n := 0, 0
	for _, chunks := range t.idx {
		for _, ch := range chunks {
			for _, it := range ch {
				if i < pos {
					i++
					continue
				}
				if n == max {
					return pos + n, false
				}
				e := &t.ents[it.slot]
				visit(int(it.key), e.name, e.v)
				n++
			}
		}
	}
	return pos + n, true
}

// Range visits every entry in ascending ifindex order until visit returns
// false. It merges the sorted index buckets through a heap: O(n log
// nbuckets) time, O(nbuckets) memory.
func (t *Table[T]) Range(visit func(ifindex int, name string, v T) bool) {
	// A heap of bucket cursors ordered by the key at their position.
	type head struct {
		key    int32
		b      int32
		ci, pi int32
	}
	h := make([]head, 0, len(t.idx))
	for b, chunks := range t.idx {
		if len(chunks) > 0 {
			h = append(h, head{key: chunks[0][0].key, b: int32(b)})
		}
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && h[r].key < h[l].key {
				m = r
			}
			if h[i].key <= h[m].key {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		top := &h[0]
		chunks := t.idx[top.b]
		it := chunks[top.ci][top.pi]
		e := &t.ents[it.slot]
		if !visit(int(it.key), e.name, e.v) {
			return
		}
		top.pi++
		if int(top.pi) == len(chunks[top.ci]) {
			top.ci, top.pi = top.ci+1, 0
		}
		if int(top.ci) == len(chunks) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		} else {
			top.key = chunks[top.ci][top.pi].key
		}
		if len(h) > 0 {
			down(0)
		}
	}
}

// Stats describes the table's shape and memory, for reports.
type Stats struct {
	Entries    int
	Buckets    int
	MaxBucket  int // entries in the longest index bucket
	Chunks     int
	NameSlots  int
	IndexBytes int // index buckets: chunk items and chunk headers
	NameBytes  int // name hash
	EntryBytes int // entry slab and free list (excluding the names' bytes)
}

// Stats returns the table's shape and the bytes its structures hold.
func (t *Table[T]) Stats() Stats {
	var s Stats
	s.Entries, s.Buckets, s.NameSlots = t.n, len(t.idx), len(t.names)
	s.IndexBytes = 24 * cap(t.idx)
	for _, chunks := range t.idx {
		s.IndexBytes += 24 * cap(chunks)
		s.Chunks += len(chunks)
		k := 0
		for _, ch := range chunks {
			s.IndexBytes += 8 * cap(ch)
			k += len(ch)
		}
		if k > s.MaxBucket {
			s.MaxBucket = k
		}
	}
	s.NameBytes = 8 * cap(t.names)
	var e entry[T]
	s.EntryBytes = int(unsafe.Sizeof(e))*cap(t.ents) + 4*cap(t.free)
	return s
}
