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

// model is the trivially correct allocator the real ones are checked against.
type model struct {
	min, max int
	used     map[int]bool
}

func (m *model) allocFrom(start int) (int, bool) {
	if start < m.min || start > m.max {
		start = m.min
	}
	for i := start; i <= m.max; i++ {
		if !m.used[i] {
			m.used[i] = true
			return i, true
		}
	}
	for i := m.min; i < start; i++ {
		if !m.used[i] {
			m.used[i] = true
			return i, true
		}
	}
	return 0, false
}

// check verifies the summary levels of a Bitmap against its level 0.
func (b *Bitmap) check() error {
	for lv := 1; lv < len(b.levels); lv++ {
		below, cur := b.levels[lv-1], b.levels[lv]
		if want := (len(below) + 63) / 64; len(cur) != want {
			return fmt.Errorf("len(levels[%d]) = %d, want %d", lv, len(cur), want)
		}
		for w := range below {
			full := below[w] == allOnes
			bit := cur[w>>6]&(1<<(uint(w)&63)) != 0
			if full != bit {
				return fmt.Errorf("levels[%d] bit %d = %v, want %v", lv, w, bit, full)
			}
		}
		for w := len(below); w < 64*len(cur); w++ {
			if cur[w>>6]&(1<<(uint(w)&63)) != 0 {
				return fmt.Errorf("levels[%d] bit %d past the end is set", lv, w)
			}
		}
	}
	if top := b.levels[len(b.levels)-1]; len(top) != 1 {
		return fmt.Errorf("top level has %d words, want 1", len(top))
	}
	for r := 0; r < b.hint; r++ {
		if !b.inUse(r) {
			return fmt.Errorf("index %d below hint %d is free", b.min+r, b.min+b.hint)
		}
	}
	return nil
}

func TestAllocatorsAgainstModel(t *testing.T) {
	for _, c := range ctors {
		t.Run(c.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				min := rapid.IntRange(0, 3).Draw(t, "min")
				// Up to ~10000 indexes: three levels in the Bitmap.
				max := min + rapid.SampledFrom([]int{0, 1, 63, 64, 65, 200, 4095, 4096, 4100, 10000}).Draw(t, "span")
				a := c.new(min, max)
				m := &model{min: min, max: max, used: map[int]bool{}}
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
						got, err := a.Alloc()
						want, ok := m.allocFrom(min)
						if !ok {
							if !errors.Is(err, ErrFull) {
								t.Fatalf("Alloc() = %d, %v, want ErrFull", got, err)
							}
							return
						}
						if err != nil || got != want {
							t.Fatalf("Alloc() = %d, %v, want %d, nil", got, err, want)
						}
					},
					"AllocRun": func(t *rapid.T) {
						// Many allocations at once, to fill words and levels.
						k := rapid.IntRange(1, 3000).Draw(t, "k")
						for i := 0; i < k; i++ {
							got, err := a.Alloc()
							want, ok := m.allocFrom(min)
							if !ok {
								if !errors.Is(err, ErrFull) {
									t.Fatalf("Alloc() = %d, %v, want ErrFull", got, err)
								}
								return
							}
							if err != nil || got != want {
								t.Fatalf("Alloc() = %d, %v, want %d, nil", got, err, want)
							}
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
						case m.used[n]:
							if !errors.Is(err, ErrInUse) {
								t.Fatalf("Reserve(%d) = %v, want ErrInUse", n, err)
							}
						default:
							if err != nil {
								t.Fatalf("Reserve(%d) = %v, want nil", n, err)
							}
							m.used[n] = true
						}
					},
					"Free": func(t *rapid.T) {
						n := idx.Draw(t, "n")
						if len(m.used) > 0 && rapid.Bool().Draw(t, "pickUsed") {
							// Prefer an index in use, found deterministically.
							for i := n; i <= max+3; i++ {
								if m.used[i] {
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
						case !m.used[n]:
							if !errors.Is(err, ErrNotInUse) {
								t.Fatalf("Free(%d) = %v, want ErrNotInUse", n, err)
							}
						default:
							if err != nil {
								t.Fatalf("Free(%d) = %v, want nil", n, err)
							}
							delete(m.used, n)
						}
					},
					"InUse": func(t *rapid.T) {
						n := idx.Draw(t, "n")
						if got, want := a.InUse(n), m.used[n]; got != want {
							t.Fatalf("InUse(%d) = %v, want %v", n, got, want)
						}
					},
					"": func(t *rapid.T) {
						if got, want := a.Len(), len(m.used); got != want {
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

// TestHolePunchingDeep drives the seed's pattern past 262144 indexes, so the
// Bitmap has four levels, and checks every answer against the Linear one.
func TestHolePunchingDeep(t *testing.T) {
	const n = 300000
	b, l := NewBitmap(0, 1<<20), NewLinear(0, 1<<20)
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
	if len(b.levels) != 4 {
		t.Errorf("len(levels) = %d, want 4", len(b.levels))
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
