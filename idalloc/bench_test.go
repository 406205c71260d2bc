package idalloc

import (
	"fmt"
	"testing"
	"time"
)

// Each benchmark iteration performs n allocations from a fresh allocator,
// so ns/op of the different patterns and allocators compare directly.
// scripts/bench-registry.sh prints the ratios.

var benchSizes = []int{100000, 1000000}

// benchCtors: the allocator, the same without its run hint (the kernel's
// design: summary bits and next_fd), and the naive one.
var benchCtors = []ctor{
	ctors[0],
	{"BitmapNoRun", func(min, max int) Allocator { return newBitmapNoRun(min, max) }},
	ctors[1],
}

// BenchmarkSequential: n plain allocations of the lowest free index.
func BenchmarkSequential(b *testing.B) {
	for _, c := range benchCtors {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				for b.Loop() {
					a := c.new(0, 1<<30)
					for i := 0; i < n; i++ {
						if _, err := a.Alloc(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/alloc")
			})
		}
	}
}

// holePunch is the seed's loop: fds 0-2 and 3 are open, then n times
// close(3); dup2(0, 3); dup(0) — free a low index, take it back, allocate
// the lowest free one (which lies past every index in use).
func holePunch(b *testing.B, a Allocator, n int) {
	for i := 0; i < 4; i++ {
		if _, err := a.Alloc(); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if err := a.Free(3); err != nil {
			b.Fatal(err)
		}
		if err := a.Reserve(3); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Alloc(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHolePunch: n allocations in the hole-punching pattern.
func BenchmarkHolePunch(b *testing.B) {
	for _, c := range benchCtors {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				for b.Loop() {
					holePunch(b, c.new(0, 1<<30), n)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/alloc")
			})
		}
	}
}

// BenchmarkMemory reports the bytes the Bitmap holds for n indexes in use.
func BenchmarkMemory(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("Bitmap/n=%d", n), func(b *testing.B) {
			var bm *Bitmap
			for b.Loop() {
				bm = NewBitmap(0, 1<<30)
				for i := 0; i < n; i++ {
					_, _ = bm.Alloc()
				}
			}
			b.ReportMetric(float64(bm.Bytes())/float64(n), "bytes/index")
		})
	}
}

// timeMin runs f rounds times and returns the fastest run: on a shared
// machine the minimum is the run least disturbed by other work.
func timeMin(rounds int, fs ...func()) []time.Duration {
	best := make([]time.Duration, len(fs))
	for r := 0; r < rounds; r++ {
		for i, f := range fs {
			t0 := time.Now()
			f()
			if d := time.Since(t0); r == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	return best
}

// BenchmarkTargets measures, interleaved in one run, the ratios of issue 5:
// n = 1,000,000 allocations in the hole-punching pattern against the naive
// allocator (target >= 100) and against n sequential allocations (target
// <= 3). Run it with -benchtime=1x; the ratios are the reported metrics.
func BenchmarkTargets(b *testing.B) {
	const n = 1000000
	run := func(a Allocator, hole bool) func() {
		return func() {
			if hole {
				holePunch(b, a, n)
				return
			}
			for i := 0; i < n; i++ {
				if _, err := a.Alloc(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for b.Loop() {
		fast := timeMin(15,
			func() { run(NewBitmap(0, 1<<30), false)() },
			func() { run(NewBitmap(0, 1<<30), true)() },
			func() { run(newBitmapNoRun(0, 1<<30), true)() },
		)
		slow := timeMin(1, func() { run(NewLinear(0, 1<<30), true)() })
		seq, hole, holeNoRun, lin := fast[0], fast[1], fast[2], slow[0]
		b.ReportMetric(float64(seq.Nanoseconds())/n, "seq-ns/alloc")
		b.ReportMetric(float64(hole.Nanoseconds())/n, "hole-ns/alloc")
		b.ReportMetric(float64(holeNoRun.Nanoseconds())/n, "hole-norun-ns/alloc")
		b.ReportMetric(float64(lin.Nanoseconds())/n, "hole-linear-ns/alloc")
		b.ReportMetric(float64(lin)/float64(hole), "linear/hole-x")
		b.ReportMetric(float64(lin)/float64(holeNoRun), "linear/hole-norun-x")
		b.ReportMetric(float64(hole)/float64(seq), "hole/seq-x")
		b.ReportMetric(float64(holeNoRun)/float64(seq), "hole-norun/seq-x")
	}
}
