package idalloc

import (
	"fmt"
	"math/bits"
)

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
	s, err := l.startOffset(start)
	if err != nil {
		return 0, err
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
