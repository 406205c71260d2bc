// Package idalloc hands out the lowest free integer index in a range, the way
// the kernel allocates file descriptors, interface indexes and the %d of
// device name templates.
//
// Two allocators implement the same Allocator interface:
//
//   - Bitmap keeps one bit per index plus summary levels in which one bit
//     stands for one full 64-bit word of the level below (the fd table's
//     "full_fds_bits" technique, applied recursively so that the top level
//     is a single word), and a next-free hint like the fd table's next_fd.
//     Finding the lowest free index costs O(log64 n) word operations even
//     when every low index is taken, which is what the hole-punching
//     pattern (free a low index, reallocate it, allocate another) produces.
//   - Linear is the naive allocator: the same next-free hint, then a scan of
//     the bitmap word by word. The hole-punching pattern defeats the hint and
//     makes every allocation O(n/64).
//
// Invariants, for both allocators:
//   - an index is handed out (by AllocFrom, Alloc or Reserve) only while it is
//     not in use, and AllocFrom returns the lowest free index >= start,
//     wrapping around to min;
//   - every index below the hint is in use;
//   - memory is bits: storage grows on demand with the highest index ever
//     used, never with max, and no per-index structure is kept;
//   - a failed call changes nothing.
//
// Neither allocator is safe for concurrent use: the owner holds its lock.
package idalloc

import (
	"errors"
	"fmt"
	"math/bits"
)

// Allocator hands out integers in [min, max].
type Allocator interface {
	// AllocFrom returns the lowest free index >= start, wrapping around to
	// min if none is free up to max (start < min is treated as min).
	// ErrFull when every index is in use.
	AllocFrom(start int) (int, error)
	// Alloc returns the lowest free index (== AllocFrom(min)).
	Alloc() (int, error)
	// Reserve marks n used; error if out of range or already used.
	Reserve(n int) error
	// Free releases n; error if out of range or not in use.
	Free(n int) error
	// InUse reports whether n is in use (false when out of range).
	InUse(n int) bool
	// Len is the number of indexes in use.
	Len() int
}

// Errors returned by the allocators; test them with errors.Is.
var (
	// ErrFull: every index in the range is in use.
	ErrFull = errors.New("idalloc: every index is in use")
	// ErrRange: the index lies outside [min, max].
	ErrRange = errors.New("idalloc: index out of range")
	// ErrInUse: Reserve of an index that is already in use.
	ErrInUse = errors.New("idalloc: index already in use")
	// ErrNotInUse: Free of an index that is not in use.
	ErrNotInUse = errors.New("idalloc: index not in use")
)

const allOnes = ^uint64(0)

// span is the part both allocators share: the range, the count in use and
// the next-free hint.
type span struct {
	min, max int
	size     int // max - min + 1
	n        int // indexes in use
	// hint is relative to min: every index in [min, min+hint) is in use.
	hint int
}

func newSpan(kind string, min, max int) span {
	if min > max || min < 0 {
		panic(fmt.Sprintf("idalloc.%s(%d, %d): need 0 <= min <= max", kind, min, max))
	}
	return span{min: min, max: max, size: max - min + 1}
}

func (s *span) rangeErr(op string, n int) error {
	return fmt.Errorf("%s(%d): %w [%d, %d]", op, n, ErrRange, s.min, s.max)
}

// Len returns the number of indexes in use.
func (s *span) Len() int { return s.n }

// Bitmap is the two-level (summary-bit) allocator. The zero value is not
// usable; call NewBitmap.
type Bitmap struct {
	span
	// levels[0] has one bit per index (bit i is index min+i; 1 = in use).
	// levels[k+1] has one bit per word of levels[k] (1 = that word is all
	// ones). len(levels[k+1]) == ceil(len(levels[k])/64), and the last
	// level has exactly one word. Words past the end of a level are
	// implicitly zero.
	levels [][]uint64
	// words is ceil(size/64): the most level 0 may ever hold.
	words int
}

var _ Allocator = (*Bitmap)(nil)

// NewBitmap returns an empty allocator of indexes in [min, max]. It panics
// unless 0 <= min <= max. Storage grows with the highest index used.
func NewBitmap(min, max int) *Bitmap {
	b := &Bitmap{span: newSpan("NewBitmap", min, max)}
	b.words = (b.size + 63) / 64
	b.levels = [][]uint64{make([]uint64, 1)}
	return b
}

// grow makes level 0 hold word w (w < b.words), doubling so that growth
// is amortised O(1), and keeps the summary levels in step.
func (b *Bitmap) grow(w int) {
	n := 2 * len(b.levels[0])
	if n < w+1 {
		n = w + 1
	}
	if n > b.words {
		n = b.words
	}
	for lv := 0; ; lv++ {
		if lv == len(b.levels) {
			// A new summary level over what was the one-word top:
			// its only meaningful bit says whether that word is full.
			top := make([]uint64, 1)
			if below := b.levels[lv-1]; below[0] == allOnes {
				top[0] = 1
			}
			b.levels = append(b.levels, top)
		}
		old := b.levels[lv]
		if len(old) < n {
			nw := make([]uint64, n)
			copy(nw, old)
			b.levels[lv] = nw
		}
		if n == 1 {
			// This level is the top. Higher levels, if any, were
			// already one word each and stay consistent.
			break
		}
		n = (n + 63) / 64
	}
}

// nextFree returns the lowest free relative index >= p. The result may be
// >= b.size, meaning none is free in [p, size).
func (b *Bitmap) nextFree(p int) int {
	lv := 0
	top := len(b.levels) - 1
	// Ascend until a level has a zero bit at or after p.
	for {
		words := b.levels[lv]
		w := p >> 6
		if w >= len(words) {
			break // past the end: implicitly zero, so p is free
		}
		if x := ^words[w] & (allOnes << (uint(p) & 63)); x != 0 {
			p = w<<6 | bits.TrailingZeros64(x)
			break
		}
		if lv == top {
			p = len(words) << 6 // first word past the end
			break
		}
		p = w + 1 // next word of this level: a bit of the level above
		lv++
	}
	// Descend: bit p of level lv is zero, so word p of level lv-1 has a
	// zero bit (or lies past the end of that level, which is all zero).
	for ; lv > 0; lv-- {
		words := b.levels[lv-1]
		if p >= len(words) {
			return p << (6 * uint(lv))
		}
		p = p<<6 | bits.TrailingZeros64(^words[p])
	}
	return p
}

// set marks relative index r used; r's word must exist.
func (b *Bitmap) set(r int) {
	for lv := 0; ; lv++ {
		words := b.levels[lv]
		w := r >> 6
		words[w] |= 1 << (uint(r) & 63)
		if words[w] != allOnes || lv+1 == len(b.levels) {
			return
		}
		r = w
	}
}

// clear marks relative index r free; r must be in use.
func (b *Bitmap) clear(r int) {
	for lv := 0; lv < len(b.levels); lv++ {
		words := b.levels[lv]
		w := r >> 6
		old := words[w]
		words[w] = old &^ (1 << (uint(r) & 63))
		if old != allOnes {
			return
		}
		r = w
	}
}

func (b *Bitmap) inUse(r int) bool {
	w := r >> 6
	l0 := b.levels[0]
	return w < len(l0) && l0[w]&(1<<(uint(r)&63)) != 0
}

func (b *Bitmap) take(r int) {
	if r>>6 >= len(b.levels[0]) {
		b.grow(r >> 6)
	}
	b.set(r)
	b.n++
}

// AllocFrom returns the lowest free index >= start, wrapping around to min.
func (b *Bitmap) AllocFrom(start int) (int, error) {
	if b.n == b.size {
		return 0, ErrFull
	}
	s := start - b.min
	if s < 0 || s >= b.size {
		s = 0
	}
	var r int
	if s <= b.hint {
		r = b.nextFree(b.hint)
		b.hint = r + 1
	} else if r = b.nextFree(s); r >= b.size {
		r = b.nextFree(b.hint)
		b.hint = r + 1
	}
	b.take(r)
	return b.min + r, nil
}

// Alloc returns the lowest free index.
func (b *Bitmap) Alloc() (int, error) { return b.AllocFrom(b.min) }

// Reserve marks n used.
func (b *Bitmap) Reserve(n int) error {
	if n < b.min || n > b.max {
		return b.rangeErr("Reserve", n)
	}
	r := n - b.min
	if b.inUse(r) {
		return fmt.Errorf("Reserve(%d): %w", n, ErrInUse)
	}
	b.take(r)
	if r == b.hint {
		b.hint++
	}
	return nil
}

// Free releases n.
func (b *Bitmap) Free(n int) error {
	if n < b.min || n > b.max {
		return b.rangeErr("Free", n)
	}
	r := n - b.min
	if !b.inUse(r) {
		return fmt.Errorf("Free(%d): %w", n, ErrNotInUse)
	}
	b.clear(r)
	b.n--
	if r < b.hint {
		b.hint = r
	}
	return nil
}

// InUse reports whether n is in use.
func (b *Bitmap) InUse(n int) bool {
	return n >= b.min && n <= b.max && b.inUse(n-b.min)
}

// Bytes is the memory held by the bitmap's words, for reports.
func (b *Bitmap) Bytes() int {
	t := 0
	for _, l := range b.levels {
		t += 8 * cap(l)
	}
	return t
}

// Linear is the naive allocator: a next-free hint, then a word-by-word scan.
// The zero value is not usable; call NewLinear.
type Linear struct {
	span
	words []uint64 // bit i is index min+i; 1 = in use
	limit int      // ceil(size/64)
}

var _ Allocator = (*Linear)(nil)

// NewLinear returns an empty naive allocator of indexes in [min, max]. It
// panics unless 0 <= min <= max.
func NewLinear(min, max int) *Linear {
	l := &Linear{span: newSpan("NewLinear", min, max)}
	l.limit = (l.size + 63) / 64
	l.words = make([]uint64, 1)
	return l
}

// nextFree scans word by word from relative index p.
func (l *Linear) nextFree(p int) int {
	w := p >> 6
	if w >= len(l.words) {
		return p
	}
	if x := ^l.words[w] & (allOnes << (uint(p) & 63)); x != 0 {
		return w<<6 | bits.TrailingZeros64(x)
	}
	for w++; w < len(l.words); w++ {
		if x := ^l.words[w]; x != 0 {
			return w<<6 | bits.TrailingZeros64(x)
		}
	}
	return w << 6
}

func (l *Linear) inUse(r int) bool {
	w := r >> 6
	return w < len(l.words) && l.words[w]&(1<<(uint(r)&63)) != 0
}

func (l *Linear) take(r int) {
	w := r >> 6
	if w >= len(l.words) {
		n := 2 * len(l.words)
		if n < w+1 {
			n = w + 1
		}
		if n > l.limit {
			n = l.limit
		}
		nw := make([]uint64, n)
		copy(nw, l.words)
		l.words = nw
	}
	l.words[w] |= 1 << (uint(r) & 63)
	l.n++
}

// AllocFrom returns the lowest free index >= start, wrapping around to min.
func (l *Linear) AllocFrom(start int) (int, error) {
	if l.n == l.size {
		return 0, ErrFull
	}
	s := start - l.min
	if s < 0 || s >= l.size {
		s = 0
	}
	var r int
	if s <= l.hint {
		r = l.nextFree(l.hint)
		l.hint = r + 1
	} else if r = l.nextFree(s); r >= l.size {
		r = l.nextFree(l.hint)
		l.hint = r + 1
	}
	l.take(r)
	return l.min + r, nil
}

// Alloc returns the lowest free index.
func (l *Linear) Alloc() (int, error) { return l.AllocFrom(l.min) }

// Reserve marks n used.
func (l *Linear) Reserve(n int) error {
	if n < l.min || n > l.max {
		return l.rangeErr("Reserve", n)
	}
	r := n - l.min
	if l.inUse(r) {
		return fmt.Errorf("Reserve(%d): %w", n, ErrInUse)
	}
	l.take(r)
	if r == l.hint {
		l.hint++
	}
	return nil
}

// Free releases n.
func (l *Linear) Free(n int) error {
	if n < l.min || n > l.max {
		return l.rangeErr("Free", n)
	}
	r := n - l.min
	if !l.inUse(r) {
		return fmt.Errorf("Free(%d): %w", n, ErrNotInUse)
	}
	l.words[r>>6] &^= 1 << (uint(r) & 63)
	l.n--
	if r < l.hint {
		l.hint = r
	}
	return nil
}

// InUse reports whether n is in use.
func (l *Linear) InUse(n int) bool {
	return n >= l.min && n <= l.max && l.inUse(n-l.min)
}

// Bytes is the memory held by the bitmap's words, for reports.
func (l *Linear) Bytes() int { return 8 * cap(l.words) }
