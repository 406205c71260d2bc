package idalloc

import (
	"fmt"
	"math/bits"
)

// topWords is the most words the top summary level may have; it is scanned
// word by word. Letting it hold a few words saves a level (one more step on
// every search and every change of a full word) at the sizes that matter.
const topWords = 8

// maxLevels bounds the depth: 64^11 bits exceed any int.
const maxLevels = 12

// Bitmap is the summary-bit allocator. The zero value is not usable; call
// NewBitmap.
type Bitmap struct {
	span
	// bm holds every level, level 0 first: level k is bm[off[k]:off[k+1]].
	// Level 0 has one bit per index (bit i is index min+i; 1 = in use).
	// Level k+1 has one bit per word of level k (1 = that word is all
	// ones) and ceil(len(level k)/64) words. The top level has at most
	// topMax words. Words past the end of a level are implicitly zero.
	bm     []uint64
	off    [maxLevels + 1]int
	top    int // index of the top level
	topMax int // topWords; smaller in tests, to get deep levels early
	// words is ceil(size/64): the most level 0 may ever hold.
	words int
	// [runA, runB) (relative) is a second run known to be in use, beside
	// the hint's [0, hint): the used stretch a search just skipped, or the
	// part of the hint's run above an index just freed. It lets the fd
	// table's hole-punching loop (free a low index, take it back,
	// allocate) find its answer without searching. Empty when runA ==
	// runB; never overlaps or touches [0, hint) (normalize merges it).
	runA, runB int
	// noRun disables the run (benchmarks compare the kernel's design).
	noRun bool
	// dirty is a level 0 word whose summary bits may be stale, or -1.
	// Searches consult the summary bits only of words after the hint's
	// word (they climb from the hint, never descend from the top), so
	// a change of fullness in a word at or below the hint's word need
	// not be propagated at once: it is recorded here and propagated
	// (sync) when another word becomes dirty or when the hint moves
	// below it. The hole-punching loop thus never touches the summary
	// levels. Invariant: dirty == -1 or dirty <= hint>>6.
	dirty int
}

var _ Allocator = (*Bitmap)(nil)

// NewBitmap returns an empty allocator of indexes in [min, max]. It panics
// unless 0 <= min <= max. Storage grows with the highest index used.
func NewBitmap(min, max int) *Bitmap {
	b := &Bitmap{span: newSpan("NewBitmap", min, max)}
	b.words = (b.size + 63) / 64
	b.bm = make([]uint64, 1)
	b.off[1] = 1
	b.topMax = topWords
	b.dirty = -1
	return b
}

func (b *Bitmap) level(lv int) []uint64 { return b.bm[b.off[lv]:b.off[lv+1]] }

// grow makes level 0 hold word w (w < b.words), doubling so that growth
// is amortised O(1), and rebuilds the summary levels above it.
func (b *Bitmap) grow(w int) {
	n := 2 * (b.off[1] - b.off[0])
	if n < w+1 {
		n = w + 1
	}
	if n > b.words {
		n = b.words
	}
	var sizes [maxLevels]int
	levels := 0
	total := 0
	for {
		sizes[levels] = n
		total += n
		levels++
		if n <= b.topMax {
			break
		}
		n = (n + 63) / 64
	}
	nbm := make([]uint64, total)
	var noff [maxLevels + 1]int
	for lv := 0; lv < levels; lv++ {
		noff[lv+1] = noff[lv] + sizes[lv]
	}
	// Levels that existed keep their words: the new words below them are
	// zero, hence not full, which their new zero bits say.
	for lv := 0; lv <= b.top && lv < levels; lv++ {
		copy(nbm[noff[lv]:], b.level(lv))
	}
	// Levels above the old top are computed from the level below.
	for lv := b.top + 1; lv < levels; lv++ {
		below := nbm[noff[lv-1]:noff[lv]]
		cur := nbm[noff[lv]:noff[lv+1]]
		for i, x := range below {
			if x == allOnes {
				cur[i>>6] |= 1 << (uint(i) & 63)
			}
		}
	}
	b.bm, b.off, b.top = nbm, noff, levels-1
}

// firstZeroTop returns the first zero bit of the top level (64*words when
// the top is full).
func (b *Bitmap) firstZeroTop(from int) int {
	top := b.bm[b.off[b.top]:b.off[b.top+1]]
	w := from >> 6
	if w >= len(top) {
		return from
	}
	if x := ^top[w] & (allOnes << (uint(from) & 63)); x != 0 {
		return w<<6 | bits.TrailingZeros64(x)
	}
	for w++; w < len(top); w++ {
		if x := ^top[w]; x != 0 {
			return w<<6 | bits.TrailingZeros64(x)
		}
	}
	return len(top) << 6
}

// descend turns a zero bit p of level lv into the zero bit of level 0 it
// stands for (the first one in the words it summarises).
func (b *Bitmap) descend(lv, p int) int {
	bm := b.bm
	for ; lv > 0; lv-- {
		i := b.off[lv-1] + p
		if i >= b.off[lv] {
			return p << (6 * uint(lv)) // past the end: all zero
		}
		p = p<<6 | bits.TrailingZeros64(^bm[i])
	}
	return p
}

// nextFree returns the lowest free relative index >= p. The result may be
// >= b.size, meaning none is free in [p, size).
func (b *Bitmap) nextFree(p int) int {
	bm := b.bm
	for lv := 0; lv < b.top; lv++ {
		i := b.off[lv] + p>>6
		if i >= b.off[lv+1] {
			return b.descend(lv, p) // past the end: p is free
		}
		if x := ^bm[i] & (allOnes << (uint(p) & 63)); x != 0 {
			return b.descend(lv, (p&^63)|bits.TrailingZeros64(x))
		}
		p = p>>6 + 1 // no zero left in this word: climb to the next word
	}
	return b.descend(b.top, b.firstZeroTop(p))
}

// lowestFree returns the lowest free relative index. Every index below the
// hint is in use, so it is the first zero bit at or after the hint: found
// in the hint's word when that word has one, else by climbing the summary
// levels from there.
func (b *Bitmap) lowestFree() int {
	h := b.hint
	w := h >> 6
	if w >= b.off[1] {
		return h
	}
	if x := ^b.bm[w] & (allOnes << (uint(h) & 63)); x != 0 {
		return w<<6 | bits.TrailingZeros64(x)
	}
	return b.nextFree(h)
}

// changed records that level 0 word w became full or stopped being full:
// lazily when w is at or below the hint's word, else at once.
func (b *Bitmap) changed(w int) {
	if w == b.dirty || b.top == 0 {
		return // already dirty, and dirty <= hint>>6
	}
	b.changedSlow(w)
}

func (b *Bitmap) changedSlow(w int) {
	if w <= b.hint>>6 {
		if b.dirty != w {
			if b.dirty >= 0 {
				b.sync(b.dirty)
			}
			b.dirty = w
		}
		return
	}
	b.sync(w)
}

// hintLowered restores the invariant dirty <= hint>>6 after the hint moved
// down.
func (b *Bitmap) hintLowered() {
	if b.dirty > b.hint>>6 {
		b.sync(b.dirty)
		b.dirty = -1
	}
}

// sync propagates the fullness of level 0 word w up the summary levels.
func (b *Bitmap) sync(w int) {
	bm := b.bm
	full := bm[w] == allOnes
	for lv := 1; lv <= b.top; lv++ {
		i := b.off[lv] + w>>6
		old := bm[i]
		x := old &^ (1 << (uint(w) & 63))
		if full {
			x = old | 1<<(uint(w)&63)
		}
		bm[i] = x
		if (x == allOnes) == (old == allOnes) {
			return // this word's fullness did not change: nothing above does
		}
		full = x == allOnes
		w >>= 6
	}
}

func (b *Bitmap) inUse(r int) bool {
	w := r >> 6
	return w < b.off[1] && b.bm[w]&(1<<(uint(r)&63)) != 0
}

// normalize merges the run into the hint's run when they touch, and
// forgets a run the hint has passed.
func (b *Bitmap) normalize() {
	if b.runA <= b.hint && b.hint < b.runB {
		b.hint = b.runB
	}
	if b.runB <= b.hint || b.noRun {
		b.runA, b.runB = 0, 0
	}
}

// AllocFrom returns the lowest free index >= start, wrapping around to min.
func (b *Bitmap) AllocFrom(start int) (int, error) {
	s, err := b.startOffset(start)
	if err != nil {
		return 0, err
	}
	var r int
	if s <= b.hint {
		r = b.lowestFree()
		b.hint = r + 1
		b.normalize()
	} else {
		from := s
		if b.runA <= s && s < b.runB {
			from = b.runB // [s, runB) is in use
		}
		if r = b.nextFree(from); r < b.size {
			// [s, r] is now in use: remember it as the run.
			if !(b.runA <= s && s <= b.runB) {
				b.runA = s
			}
			b.runB = r + 1
			b.normalize()
		} else {
			r = b.lowestFree()
			b.hint = r + 1
			b.normalize()
		}
	}
	w := r >> 6
	if w >= b.off[1] {
		b.grow(w)
	}
	x := b.bm[w] | 1<<(uint(r)&63)
	b.bm[w] = x
	if x == allOnes {
		b.changed(w)
	}
	b.n++
	return b.min + r, nil
}

// Alloc returns the lowest free index.
func (b *Bitmap) Alloc() (int, error) { return b.AllocFrom(b.min) }

// Reserve marks n used.
func (b *Bitmap) Reserve(n int) error {
	r := n - b.min
	if n < b.min || n > b.max {
		return b.rangeErr("Reserve", n)
	}
	w := r >> 6
	if w >= b.off[1] {
		b.grow(w)
	}
	old := b.bm[w]
	bit := uint64(1) << (uint(r) & 63)
	if old&bit != 0 {
		return fmt.Errorf("Reserve(%d): %w", n, ErrInUse)
	}
	b.bm[w] = old | bit
	b.n++
	switch {
	case r == b.hint:
		b.hint++
		b.normalize()
	case r == b.runB && b.runA < b.runB:
		b.runB++
	case r+1 == b.runA:
		b.runA--
	}
	if old|bit == allOnes {
		b.changed(w)
	}
	return nil
}

// Free releases n.
func (b *Bitmap) Free(n int) error {
	r := n - b.min
	if n < b.min || n > b.max {
		return b.rangeErr("Free", n)
	}
	w := r >> 6
	bit := uint64(1) << (uint(r) & 63)
	if w >= b.off[1] || b.bm[w]&bit == 0 {
		return fmt.Errorf("Free(%d): %w", n, ErrNotInUse)
	}
	old := b.bm[w]
	b.bm[w] = old &^ bit
	b.n--
	switch {
	case r < b.hint:
		// The hint's run splits: [0, r) stays, [r+1, hint) becomes
		// the run (replacing the old one, which lies above it).
		b.runA, b.runB = r+1, b.hint
		b.hint = r
		b.normalize()
		b.hintLowered()
	case b.runA <= r && r < b.runB:
		b.runB = r
	}
	if old == allOnes {
		b.changed(w)
	}
	return nil
}

// InUse reports whether n is in use.
func (b *Bitmap) InUse(n int) bool {
	return n >= b.min && n <= b.max && b.inUse(n-b.min)
}

// Bytes is the memory held by the bitmap's words, for reports.
func (b *Bitmap) Bytes() int { return 8 * cap(b.bm) }
