package idalloc

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

type ctor struct {
	name string
	new  func(min, max int) Allocator
}

var ctors = []ctor{
	{"Bitmap", func(min, max int) Allocator { return NewBitmap(min, max) }},
	{"Linear", func(min, max int) Allocator { return NewLinear(min, max) }},
}

// newBitmapNoRun returns a Bitmap without the second run hint: the
// kernel's design (summary bits and next_fd).
func newBitmapNoRun(min, max int) *Bitmap {
	b := NewBitmap(min, max)
	b.noRun = true
	return b
}

// modelCtors adds Bitmaps with deep levels at small sizes and without the
// run hint.
var modelCtors = append(ctors[:len(ctors):len(ctors)],
	ctor{"DeepBitmap", func(min, max int) Allocator { return newDeepBitmap(min, max) }},
	ctor{"BitmapNoRun", func(min, max int) Allocator { return newBitmapNoRun(min, max) }})

// model is the trivially correct allocator the real ones are checked against.
type model struct {
	min, max int
	used     []bool // index i - min
	n        int
}

func newModel(min, max int) *model {
	return &model{min: min, max: max, used: make([]bool, max-min+1)}
}

func (m *model) inUse(i int) bool { return i >= m.min && i <= m.max && m.used[i-m.min] }

func (m *model) set(i int, v bool) {
	if m.used[i-m.min] != v {
		m.used[i-m.min] = v
		if v {
			m.n++
		} else {
			m.n--
		}
	}
}

func (m *model) allocFrom(start int) (int, bool) {
	if start < m.min || start > m.max {
		start = m.min
	}
	for i := start; i <= m.max; i++ {
		if !m.inUse(i) {
			m.set(i, true)
			return i, true
		}
	}
	for i := m.min; i < start; i++ {
		if !m.inUse(i) {
			m.set(i, true)
			return i, true
		}
	}
	return 0, false
}

// check verifies the summary levels of a Bitmap against its level 0, once
// the dirty word, which may be stale, is propagated in a copy.
func (b *Bitmap) check() error {
	if b.dirty > b.hint>>6 {
		return fmt.Errorf("dirty word %d above the hint's word %d", b.dirty, b.hint>>6)
	}
	if b.dirty >= 0 {
		c := *b
		c.bm = append([]uint64(nil), b.bm...)
		c.sync(c.dirty)
		c.dirty = -1
		b = &c
	}
	for lv := 1; lv <= b.top; lv++ {
		below, cur := b.level(lv-1), b.level(lv)
		if len(below) <= b.topMax {
			return fmt.Errorf("level %d has %d words but is not the top", lv-1, len(below))
		}
		if want := (len(below) + 63) / 64; len(cur) != want {
			return fmt.Errorf("len(level %d) = %d, want %d", lv, len(cur), want)
		}
		for w := range below {
			full := below[w] == allOnes
			bit := cur[w>>6]&(1<<(uint(w)&63)) != 0
			if full != bit {
				return fmt.Errorf("level %d bit %d = %v, want %v", lv, w, bit, full)
			}
		}
		for w := len(below); w < 64*len(cur); w++ {
			if cur[w>>6]&(1<<(uint(w)&63)) != 0 {
				return fmt.Errorf("level %d bit %d past the end is set", lv, w)
			}
		}
	}
	if top := b.level(b.top); len(top) > b.topMax {
		return fmt.Errorf("top level has %d words, want <= %d", len(top), b.topMax)
	}
	for r := 0; r < b.hint; r++ {
		if !b.inUse(r) {
			return fmt.Errorf("index %d below hint %d is free", b.min+r, b.min+b.hint)
		}
	}
	for r := b.runA; r < b.runB; r++ {
		if !b.inUse(r) {
			return fmt.Errorf("index %d in run [%d, %d) is free", b.min+r, b.min+b.runA, b.min+b.runB)
		}
	}
	if b.runA < b.runB && b.runA <= b.hint {
		return fmt.Errorf("run [%d, %d) touches the hint %d", b.runA, b.runB, b.hint)
	}
	return nil
}

// newDeepBitmap returns a Bitmap whose top level has one word, so that
// small ranges already have several levels.
func newDeepBitmap(min, max int) *Bitmap {
	b := NewBitmap(min, max)
	b.topMax = 1
	return b
}

// checkAlloc allocates from a and from the model, fails t on any
// difference, and reports whether an index was handed out.
func checkAlloc(t *rapid.T, a Allocator, m *model, min int) bool {
	got, err := a.Alloc()
	want, ok := m.allocFrom(min)
	if !ok {
		if !errors.Is(err, ErrFull) {
			t.Fatalf("Alloc() = %d, %v, want ErrFull", got, err)
		}
		return false
	}
	if err != nil || got != want {
		t.Fatalf("Alloc() = %d, %v, want %d, nil", got, err, want)
	}
	return true
}

func TestAllocatorsAgainstModel(t *testing.T) {
	for _, c := range modelCtors {
		t.Run(c.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				min := rapid.IntRange(0, 3).Draw(t, "min")
				// Up to ~10000 indexes: three levels in the Bitmap.
				max := min + rapid.SampledFrom([]int{0, 1, 63, 64, 65, 200, 4095, 4096, 4100, 10000}).Draw(t, "span")
				a := c.new(min, max)
				m := newModel(min, max)
				idx := rapid.IntRange(min-3, max+3)
				t.Repeat(map[string]func(*rapid.T){
					"AllocFrom": func(t *rapid.T) {
						start := idx.Draw(t, "start")
						got, err := a.AllocFrom(start)
						want, ok := m.allocFrom(start)
						if !ok {
							if !errors.Is(err, ErrFull) {
								t.Fatalf("AllocFrom(%d) = %d, %v, want ErrFull", start, got, err)
							}
							return
						}
						if err != nil || got != want {
							t.Fatalf("AllocFrom(%d) = %d, %v, want %d, nil", start, got, err, want)
						}
					},
					"Alloc": func(t *rapid.T) {
						checkAlloc(t, a, m, min)
					},
					"AllocRun": func(t *rapid.T) {
						// Many allocations at once, to fill words and levels.
						k := rapid.IntRange(1, 1500).Draw(t, "k")
						for i := 0; i < k && checkAlloc(t, a, m, min); i++ {
						}
					},
					"Reserve": func(t *rapid.T) {
						n := idx.Draw(t, "n")
						err := a.Reserve(n)
						switch {
						case n < min || n > max:
							if !errors.Is(err, ErrRange) {
								t.Fatalf("Reserve(%d) = %v, want ErrRange", n, err)
							}
						case m.inUse(n):
							if !errors.Is(err, ErrInUse) {
								t.Fatalf("Reserve(%d) = %v, want ErrInUse", n, err)
							}
						default:
							if err != nil {
								t.Fatalf("Reserve(%d) = %v, want nil", n, err)
							}
							m.set(n, true)
						}
					},
					"Free": func(t *rapid.T) {
						n := idx.Draw(t, "n")
						if m.n > 0 && rapid.Bool().Draw(t, "pickUsed") {
							// Prefer an index in use, found deterministically.
							for i := n; i <= max; i++ {
								if m.inUse(i) {
									n = i
									break
								}
							}
						}
						err := a.Free(n)
						switch {
						case n < min || n > max:
							if !errors.Is(err, ErrRange) {
								t.Fatalf("Free(%d) = %v, want ErrRange", n, err)
							}
						case !m.inUse(n):
							if !errors.Is(err, ErrNotInUse) {
								t.Fatalf("Free(%d) = %v, want ErrNotInUse", n, err)
							}
						default:
							if err != nil {
								t.Fatalf("Free(%d) = %v, want nil", n, err)
							}
							m.set(n, false)
						}
					},
					"InUse": func(t *rapid.T) {
						n := idx.Draw(t, "n")
						if got, want := a.InUse(n), m.inUse(n); got != want {
							t.Fatalf("InUse(%d) = %v, want %v", n, got, want)
						}
					},
					"": func(t *rapid.T) {
						if got, want := a.Len(), m.n; got != want {
							t.Fatalf("Len() = %d, want %d", got, want)
						}
						if b, ok := a.(*Bitmap); ok {
							if err := b.check(); err != nil {
								t.Fatal(err)
							}
						}
					},
				})
			})
		})
	}
}

// TestHolePunchingDeep drives the seed's pattern past 262144 indexes, so a
// Bitmap with one-word top has four levels, and checks every answer against
// the Linear one.
func TestHolePunchingDeep(t *testing.T) {
	const n = 270000
	b, l := newDeepBitmap(0, 1<<20), NewLinear(0, 1<<20)
	for _, a := range []Allocator{b, l} {
		for i := 0; i < 4; i++ {
			if _, err := a.Alloc(); err != nil {
				t.Fatalf("Alloc() = %v", err)
			}
		}
	}
	for i := 0; i < n; i++ {
		if i%1000 == 999 {
			// An extra hole well below the top.
			h := i * 3 / 4
			for _, a := range []Allocator{b, l} {
				if err := a.Free(h); err != nil {
					t.Fatalf("Free(%d) = %v", h, err)
				}
			}
		}
		for _, a := range []Allocator{b, l} {
			if err := a.Free(3); err != nil {
				t.Fatalf("Free(3) = %v", err)
			}
			if err := a.Reserve(3); err != nil {
				t.Fatalf("Reserve(3) = %v", err)
			}
		}
		gb, err1 := b.Alloc()
		gl, err2 := l.Alloc()
		if err1 != nil || err2 != nil || gb != gl {
			t.Fatalf("iteration %d: Bitmap.Alloc() = %d, %v; Linear.Alloc() = %d, %v", i, gb, err1, gl, err2)
		}
	}
	if b.top != 3 {
		t.Errorf("levels = %d, want 4", b.top+1)
	}
	if err := b.check(); err != nil {
		t.Fatal(err)
	}
	if b.Len() != l.Len() {
		t.Errorf("Bitmap.Len() = %d, Linear.Len() = %d", b.Len(), l.Len())
	}
}

func TestEdges(t *testing.T) {
	for _, c := range ctors {
		t.Run(c.name, func(t *testing.T) {
			tests := []struct {
				name string
				run  func() (got, want string)
			}{
				{"single index fills", func() (string, string) {
					a := c.new(5, 5)
					x, err := a.Alloc()
					_, err2 := a.Alloc()
					return fmt.Sprint(x, err, errors.Is(err2, ErrFull)), "5 <nil> true"
				}},
				{"wrap to min", func() (string, string) {
					a := c.new(1, 4)
					_ = a.Reserve(3)
					_ = a.Reserve(4)
					x, err := a.AllocFrom(3)
					return fmt.Sprint(x, err), "1 <nil>"
				}},
				{"start past max wraps", func() (string, string) {
					a := c.new(1, 4)
					x, err := a.AllocFrom(100)
					return fmt.Sprint(x, err), "1 <nil>"
				}},
				{"start below min is min", func() (string, string) {
					a := c.new(10, 200)
					x, err := a.AllocFrom(-7)
					return fmt.Sprint(x, err), "10 <nil>"
				}},
				{"exactly 64 full then free", func() (string, string) {
					a := c.new(0, 63)
					for i := 0; i < 64; i++ {
						_, _ = a.Alloc()
					}
					_, full := a.Alloc()
					_ = a.Free(17)
					x, err := a.AllocFrom(40)
					return fmt.Sprint(errors.Is(full, ErrFull), x, err, a.Len()), "true 17 <nil> 64"
				}},
				{"failed calls change nothing", func() (string, string) {
					a := c.new(0, 10)
					_ = a.Reserve(2)
					e1 := a.Reserve(2)
					e2 := a.Free(3)
					e3 := a.Reserve(11)
					return fmt.Sprint(a.Len(), a.InUse(2), a.InUse(3), e1 != nil, e2 != nil, e3 != nil), "1 true false true true true"
				}},
			}
			for _, tt := range tests {
				got, want := tt.run()
				if got != want {
					t.Errorf("%s = %q, want %q", tt.name, got, want)
				}
			}
		})
	}
}

func TestGrowsOnDemand(t *testing.T) {
	b := NewBitmap(0, 1<<30)
	for i := 0; i < 1000; i++ {
		_, _ = b.Alloc()
	}
	if got := b.Bytes(); got > 1024 {
		t.Errorf("Bytes() after 1000 allocations in [0, 2^30] = %d, want <= 1024", got)
	}
	if err := b.check(); err != nil {
		t.Fatal(err)
	}
}

func TestBadRangePanics(t *testing.T) {
	for _, c := range ctors {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s(5, 4) did not panic", c.name)
				}
			}()
			c.new(5, 4)
		}()
	}
}
