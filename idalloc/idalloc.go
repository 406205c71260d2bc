// Package idalloc hands out the lowest free integer index in a range, the way
// the kernel allocates file descriptors, interface indexes and the %d of
// device name templates.
//
// Two allocators implement the same Allocator interface:
//
//   - Bitmap keeps one bit per index plus summary levels in which one bit
//     stands for one full 64-bit word of the level below (the fd table's
//     "full_fds_bits" technique, applied recursively until the top level
//     has at most 8 words), a next-free hint like the fd table's next_fd,
//     and a second run hint: the last stretch of indexes known to be in
//     use. Finding the lowest free index costs O(log64 n) word operations
//     even when every low index is taken; the seed's hole-punching loop
//     (free a low index, take it back, allocate) costs O(1) per step
//     because the run hint remembers the stretch that the freed index
//     split off, and because a word at or below the hint's word updates
//     its summary bits lazily (searches climb from the hint and never
//     read them).
//   - Linear is the naive allocator: the next-free hint, then a scan of
//     the bitmap word by word. The hole-punching pattern defeats the hint and
//     makes every allocation O(n/64).
//
// Invariants, for both allocators:
//   - an index is handed out (by AllocFrom, Alloc or Reserve) only while it is
//     not in use, and AllocFrom returns the lowest free index >= start,
//     wrapping around to min;
//   - every index below the hint (and in the Bitmap's run) is in use;
//   - memory is bits: storage grows on demand with the highest index ever
//     used, never with max, and no per-index structure is kept;
//   - a failed call changes nothing.
//
// Neither allocator is safe for concurrent use: the owner holds its lock.
package idalloc

import (
	"errors"
	"fmt"
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

// startOffset checks that an index is free somewhere and turns AllocFrom's
// start into an offset from min (a start outside [min, max] means min).
func (s *span) startOffset(start int) (int, error) {
	if s.n == s.size {
		return 0, ErrFull
	}
	off := start - s.min
	if off < 0 || off >= s.size {
		off = 0
	}
	return off, nil
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
