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
//   - each index bucket (ifindex & (nbuckets-1)) holds its entries
//     themselves, sorted by ifindex, in chunks of at most chunkMax entries
//     with a directory of each chunk's last ifindex: insert and remove cost
//     O(log n + chunkMax), plus moving the bucket's directory (n/nbuckets/
//     chunkMax words) when a chunk splits or merges; appending a higher
//     ifindex than any in the bucket costs O(1), and a listing reads memory
//     in order;
//   - the name hash maps a name to its ifindex (open addressing, linear
//     probing, at most 3/4 full, doubled when it would be fuller; it does
//     not shrink);
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
// into the middle of a chunk moves at most this many entries.
const chunkMax = 128

// rec is one entry, stored in its index bucket.
type rec[T any] struct {
	key  int32 // ifindex
	name string
	v    T
}

// bucket is one index bucket: non-empty chunks of recs sorted by key, and
// lasts[i], the key of the last rec of chunks[i].
type bucket[T any] struct {
	lasts  []int32
	chunks [][]rec[T]
}

// Table holds entries keyed by a unique name and a unique ifindex. The zero
// value is not usable; call New.
type Table[T any] struct {
	// bk holds the index buckets, each allocated by its first insert
	// (nil reads as empty): a namespace's table of a few devices costs a
	// pointer per bucket, not a bucket.
	bk    []*bucket[T]
	empty bucket[T]
	mask  int32 // nbuckets - 1
	n     int

	// names is the name hash. A slot is 0 when empty, else
	// hash32<<32 | ifindex.
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
		bk:    make([]*bucket[T], nbuckets),
		mask:  int32(nbuckets - 1),
		names: make([]uint64, 8),
	}
}

// at returns bucket i for reading (an empty one where none was made).
func (t *Table[T]) at(i int32) *bucket[T] {
	if b := t.bk[i]; b != nil {
		return b
	}
	return &t.empty
}

// Len returns the number of entries.
func (t *Table[T]) Len() int { return t.n }

// Buckets returns the number of index buckets.
func (t *Table[T]) Buckets() int { return len(t.bk) }

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

// nameFind returns the names slot holding name and its rec, or the empty
// slot where name would go and nil.
func (t *Table[T]) nameFind(name string, h uint32) (int, *rec[T]) {
	mask := len(t.names) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := t.names[i]
		if s == 0 {
			return i, nil
		}
		if uint32(s>>32) == h {
			if r := t.find(int32(uint32(s))); r != nil && r.name == name {
				return i, r
			}
		}
	}
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

// search returns the position of the first rec with key >= key: chunk ci
// (len(chunks) when there is none) and offset pi in it.
func (b *bucket[T]) search(key int32) (ci, pi int) {
	lasts := b.lasts
	lo, hi := 0, len(lasts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if lasts[m] < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(lasts) {
		return lo, 0
	}
	c := b.chunks[lo]
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

// find returns the rec with key, or nil.
func (t *Table[T]) find(key int32) *rec[T] {
	b := t.at(key & t.mask)
	if k := len(b.lasts); k == 0 || key > b.lasts[k-1] {
		return nil
	}
	ci, pi := b.search(key)
	if r := &b.chunks[ci][pi]; r.key == key {
		return r
	}
	return nil
}

// lookup is find for an int ifindex of any value.
func (t *Table[T]) lookup(ifindex int) *rec[T] {
	if !validIndex(ifindex) {
		return nil
	}
	return t.find(int32(ifindex))
}

// insert puts r into its bucket; its key must be absent.
func (b *bucket[T]) insert(r rec[T]) {
	k := len(b.chunks)
	if k == 0 || r.key > b.lasts[k-1] {
		// Past the last key: append to the last chunk, or start a new
		// chunk when it is full, so that ascending inserts fill chunks.
		if k == 0 || len(b.chunks[k-1]) == chunkMax {
			// The first chunk of a bucket starts small; a bucket
			// that already filled one grows in whole chunks.
			c := 8
			if k > 0 {
				c = chunkMax
			}
			b.chunks = append(b.chunks, make([]rec[T], 0, c))
			b.lasts = append(b.lasts, 0)
			k++
		}
		b.chunks[k-1] = append(b.chunks[k-1], r)
		b.lasts[k-1] = r.key
		return
	}
	ci, pi := b.search(r.key)
	c := b.chunks[ci]
	if len(c) == chunkMax {
		// Split in two halves, each with room to grow.
		half := chunkMax / 2
		right := make([]rec[T], chunkMax-half, chunkMax)
		copy(right, c[half:])
		clear(c[half:])
		c = c[:half]
		b.chunks = append(b.chunks, nil)
		copy(b.chunks[ci+2:], b.chunks[ci+1:])
		b.chunks[ci], b.chunks[ci+1] = c, right
		b.lasts = append(b.lasts, 0)
		copy(b.lasts[ci+2:], b.lasts[ci+1:])
		b.lasts[ci], b.lasts[ci+1] = c[half-1].key, right[len(right)-1].key
		if pi > half {
			ci, pi, c = ci+1, pi-half, right
		}
	}
	c = append(c, rec[T]{})
	copy(c[pi+1:], c[pi:])
	c[pi] = r
	b.chunks[ci] = c
	b.lasts[ci] = c[len(c)-1].key
}

// drop removes chunk ci.
func (b *bucket[T]) drop(ci int) {
	k := len(b.chunks)
	copy(b.chunks[ci:], b.chunks[ci+1:])
	b.chunks[k-1] = nil
	b.chunks = b.chunks[:k-1]
	copy(b.lasts[ci:], b.lasts[ci+1:])
	b.lasts = b.lasts[:k-1]
}

// remove deletes the rec at (ci, pi) and returns it.
func (b *bucket[T]) remove(ci, pi int) rec[T] {
	c := b.chunks[ci]
	r := c[pi]
	copy(c[pi:], c[pi+1:])
	c[len(c)-1] = rec[T]{} // drop references for the garbage collector
	c = c[:len(c)-1]
	b.chunks[ci] = c
	switch {
	case len(c) == 0:
		b.drop(ci)
	case len(c) < chunkMax/4:
		b.lasts[ci] = c[len(c)-1].key
		// Merge a sparse chunk into a neighbour so that chunks stay at
		// least a quarter full on average and memory follows the count.
		if ci+1 < len(b.chunks) && len(c)+len(b.chunks[ci+1]) <= chunkMax*3/4 {
			b.chunks[ci] = append(c, b.chunks[ci+1]...)
			b.lasts[ci] = b.lasts[ci+1]
			b.drop(ci + 1)
		} else if ci > 0 && len(c)+len(b.chunks[ci-1]) <= chunkMax*3/4 {
			b.chunks[ci-1] = append(b.chunks[ci-1], c...)
			b.lasts[ci-1] = b.lasts[ci]
			b.drop(ci)
		}
	default:
		b.lasts[ci] = c[len(c)-1].key
	}
	if len(b.chunks) == 0 {
		b.chunks, b.lasts = nil, nil // an empty bucket holds no memory
	}
	return r
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
	h := hashName(name)
	slot, r := t.nameFind(name, h)
	if r != nil {
		return fmt.Errorf("Insert(%q, %d): %w", name, ifindex, ErrDuplicateName)
	}
	key := int32(ifindex)
	if t.find(key) != nil {
		return fmt.Errorf("Insert(%q, %d): %w", name, ifindex, ErrDuplicateIndex)
	}
	b := t.bk[key&t.mask]
	if b == nil {
		b = new(bucket[T])
		t.bk[key&t.mask] = b
	}
	b.insert(rec[T]{key: key, name: name, v: v})
	t.n++
	if 4*t.n > 3*len(t.names) {
		t.nameGrow()
		slot, _ = t.nameFind(name, h)
	}
	t.names[slot] = uint64(h)<<32 | uint64(uint32(key))
	return nil
}

// Remove deletes the entry with ifindex and returns its value.
func (t *Table[T]) Remove(ifindex int) (T, bool) {
	var zero T
	if !validIndex(ifindex) {
		return zero, false
	}
	key := int32(ifindex)
	b := t.at(key & t.mask)
	if k := len(b.lasts); k == 0 || key > b.lasts[k-1] {
		return zero, false
	}
	ci, pi := b.search(key)
	if b.chunks[ci][pi].key != key {
		return zero, false
	}
	name := b.chunks[ci][pi].name
	i, _ := t.nameFind(name, hashName(name))
	t.nameDel(i)
	r := b.remove(ci, pi)
	t.n--
	return r.v, true
}

// Rename gives the entry with ifindex a new name. It fails with ErrNotFound,
// ErrDuplicateName or ErrInvalid (empty name) and then changes nothing.
// Renaming to the current name succeeds and changes nothing.
func (t *Table[T]) Rename(ifindex int, newName string) error {
	if newName == "" {
		return fmt.Errorf("Rename(%d, %q): %w", ifindex, newName, ErrInvalid)
	}
	r := t.lookup(ifindex)
	if r == nil {
		return fmt.Errorf("Rename(%d, %q): %w", ifindex, newName, ErrNotFound)
	}
	if r.name == newName {
		return nil
	}
	h := hashName(newName)
	if _, other := t.nameFind(newName, h); other != nil {
		return fmt.Errorf("Rename(%d, %q): %w", ifindex, newName, ErrDuplicateName)
	}
	i, _ := t.nameFind(r.name, hashName(r.name))
	t.nameDel(i)
	r.name = newName
	var j int
	// The deletion may have opened a hole before the slot found for
	// newName, where lookups would stop: look again.
	j, _ = t.nameFind(newName, h)
	t.names[j] = uint64(h)<<32 | uint64(uint32(r.key))
	return nil
}

// ByName returns the value of the entry called name.
func (t *Table[T]) ByName(name string) (T, bool) {
	if _, r := t.nameFind(name, hashName(name)); r != nil {
		return r.v, true
	}
	var zero T
	return zero, false
}

// IndexOf returns the ifindex of the entry called name.
func (t *Table[T]) IndexOf(name string) (int, bool) {
	if _, r := t.nameFind(name, hashName(name)); r != nil {
		return int(r.key), true
	}
	return 0, false
}

// ByIndex returns the value of the entry with ifindex.
func (t *Table[T]) ByIndex(ifindex int) (T, bool) {
	if r := t.lookup(ifindex); r != nil {
		return r.v, true
	}
	var zero T
	return zero, false
}

// NameOf returns the name of the entry with ifindex.
func (t *Table[T]) NameOf(ifindex int) (string, bool) {
	if r := t.lookup(ifindex); r != nil {
		return r.name, true
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
	b := t.at(int32(c.bucket))
	chunks := b.chunks
	ci, pi = c.chunk, c.pos
	if c.last == 0 {
		if ci == 0 && pi == 0 {
			return 0, 0
		}
	} else if ci >= 0 && pi >= 0 && ci <= len(chunks) {
		// The cached position is right if the entry just before it
		// still carries c.last: keys are unique and sorted.
		var prev []rec[T]
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
	return b.search(c.last + 1)
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
	for b := c.bucket; b < len(t.bk); b++ {
		var ci, pi int
		if b == c.bucket {
			ci, pi = t.resume(c)
		} else {
			last = 0
		}
		chunks := t.at(int32(b)).chunks
		for ; ci < len(chunks); ci, pi = ci+1, 0 {
			ch := chunks[ci]
			for ; pi < len(ch); pi++ {
				if n == max {
					return Cursor{bucket: b, chunk: ci, pos: pi, last: last}
				}
				r := &ch[pi]
				visit(int(r.key), r.name, r.v)
				last = r.key
				n++
			}
		}
	}
	return Cursor{bucket: len(t.bk), done: true}
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
	for b := range t.bk {
		for _, ch := range t.at(int32(b)).chunks {
			for k := range ch {
				if i < pos {
					i++
					continue
				}
				if n == max {
					return pos + n, false
				}
				r := &ch[k]
				visit(int(r.key), r.name, r.v)
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
	// A heap of bucket positions ordered by the key found there.
	type head struct {
		key    int32
		b      int32
		ci, pi int32
	}
	h := make([]head, 0, min(len(t.bk), t.n))
	for b, bk := range t.bk {
		if bk == nil {
			continue
		}
		if chunks := bk.chunks; len(chunks) > 0 {
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
		chunks := t.bk[top.b].chunks
		r := &chunks[top.ci][top.pi]
		if !visit(int(r.key), r.name, r.v) {
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
	IndexBytes int // index buckets: chunks of entries and directories
	NameBytes  int // name hash
}

// Stats returns the table's shape and the bytes its structures hold (not
// counting the bytes of the name strings or what values point to).
func (t *Table[T]) Stats() Stats {
	var s Stats
	s.Entries, s.Buckets, s.NameSlots = t.n, len(t.bk), len(t.names)
	var r rec[T]
	var b bucket[T]
	s.IndexBytes = int(unsafe.Sizeof(&b)) * cap(t.bk)
	for i := range t.bk {
		bk := t.bk[i]
		if bk == nil {
			continue
		}
		s.IndexBytes += int(unsafe.Sizeof(b))
		s.IndexBytes += 24*cap(bk.chunks) + 4*cap(bk.lasts)
		s.Chunks += len(bk.chunks)
		k := 0
		for _, ch := range bk.chunks {
			s.IndexBytes += int(unsafe.Sizeof(r)) * cap(ch)
			k += len(ch)
		}
		if k > s.MaxBucket {
			s.MaxBucket = k
		}
	}
	s.NameBytes = 8 * cap(t.names)
	return s
}
