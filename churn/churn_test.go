package churn

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

func tmpl(t *testing.T, s string) ndst.Template {
	t.Helper()
	tp, err := ndst.ParseTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func base(t *testing.T) Config {
	return Config{
		Threads: 4, Count: 200, Duration: 60 * time.Millisecond, Locking: LockRTNL,
		Namespaces: 1, Alloc: AllocBitmap, Work: 0, Template: tmpl(t, "churn%d"),
	}
}

func TestRunAddsUp(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"rtnl", func(c *Config) {}},
		{"rtnl over 3 namespaces", func(c *Config) { c.Namespaces = 3 }},
		{"netns over 2 namespaces", func(c *Config) { c.Locking = LockNetns; c.Namespaces = 2 }},
		{"split with work", func(c *Config) { c.Locking = LockSplit; c.Work = 2 * time.Microsecond }},
		{"linear allocators", func(c *Config) { c.Alloc = AllocLinear }},
		{"listers", func(c *Config) { c.Listers = 2; c.Count = 2000 }},
		{"count equals threads", func(c *Config) { c.Count = 5; c.Threads = 5 }},
		{"one thread", func(c *Config) { c.Threads = 1 }},
		{"tiny name space", func(c *Config) { c.Template = tmpl(t, "abcdefghijklm%d"); c.Count = 100; c.Threads = 8 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base(t)
			tt.mod(&c)
			r, err := Run(context.Background(), c)
			if err != nil {
				t.Fatalf("Run(%+v) = %v", c, err)
			}
			var sum int64
			for _, n := range r.PerThread {
				sum += n
			}
			if r.Ops == 0 || r.Ops != sum || r.Ops != r.Creates+r.Destroys {
				t.Errorf("Run() ops %d, per-thread sum %d, creates+destroys %d; want equal and > 0", r.Ops, sum, r.Creates+r.Destroys)
			}
			if r.Creates < r.Destroys {
				t.Errorf("Run() creates %d < destroys %d", r.Creates, r.Destroys)
			}
			if c.Listers > 0 && r.Listings == 0 {
				t.Errorf("Run() listings = 0 with %d listers", c.Listers)
			}
			if r.LockHeldFrac < 0 || r.LockHeldFrac > 1.01 {
				t.Errorf("Run() LockHeldFrac = %v, want in [0, 1]", r.LockHeldFrac)
			}
			if r.Limit() == "" {
				t.Errorf("Limit() is empty")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"threads 0", func(c *Config) { c.Threads = 0 }},
		{"threads too many", func(c *Config) { c.Threads = MaxThreads + 1 }},
		{"count 0", func(c *Config) { c.Count = 0 }},
		{"count too big", func(c *Config) { c.Count = MaxCount + 1 }},
		{"duration 0", func(c *Config) { c.Duration = 0 }},
		{"duration negative", func(c *Config) { c.Duration = -time.Second }},
		{"namespaces 0", func(c *Config) { c.Namespaces = 0 }},
		{"work negative", func(c *Config) { c.Work = -1 }},
		{"listers negative", func(c *Config) { c.Listers = -1 }},
		{"locking unknown", func(c *Config) { c.Locking = "giant" }},
		{"alloc unknown", func(c *Config) { c.Alloc = "tree" }},
		{"template too small", func(c *Config) { c.Template = tmpl(t, "abcdefghijklmn%d"); c.Count = 11 }},
		{"count below threads", func(c *Config) { c.Count = 2; c.Threads = 5 }},
		{"namespaces above threads", func(c *Config) { c.Namespaces = 5 }},
	}
	for _, tt := range tests {
		c := base(t)
		tt.mod(&c)
		r, err := Run(context.Background(), c)
		if !ndst.IsUsage(err) || r != nil {
			t.Errorf("%s: Run() = %v, %v; want nil, usage error", tt.name, r, err)
		}
	}
	if err := base(t).Validate(); err != nil {
		t.Errorf("Validate(base) = %v, want nil", err)
	}
}

// TestCancel checks that a run ends when its context does, and fails saying
// it was interrupted (it once exited 0 as if it had run its duration).
func TestCancel(t *testing.T) {
	c := base(t)
	c.Duration = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, c); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "churn interrupted after") {
			t.Fatalf("Run(cancelled) = %v, want the interruption", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end within 10s of its context's end")
	}
}

// TestNamespaceOps checks the registry's create and destroy directly:
// lowest free names, cyclic ifindexes, and refusal of a stale destroy.
func TestNamespaceOps(t *testing.T) {
	ns := &namespace{lk: &lock{}, tmpl: tmpl(t, "d%d"), wrap: 100}
	c := base(t)
	ns.table, ns.ifindex, ns.names = newTable(), newAllocator(c.Alloc, 1, 100), newAllocator(c.Alloc, 0, 99)
	var devs []*device
	for i := 0; i < 3; i++ {
		d := &device{}
		if err := ns.create(d); err != nil {
			t.Fatalf("create() = %v", err)
		}
		devs = append(devs, d)
	}
	if err := ns.destroy(devs[0]); err != nil {
		t.Fatalf("destroy(%s) = %v", devs[0].name, err)
	}
	d := &device{}
	if err := ns.create(d); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(d.name, " ", d.ifindex), "d0 4"; got != want {
		t.Errorf("create() after destroying d0 = %s, want %s (lowest free name, next ifindex)", got, want)
	}
	if err := ns.destroy(devs[0]); !errors.Is(err, ErrInconsistent) {
		t.Errorf("destroy(already destroyed) = %v, want ErrInconsistent", err)
	}
	if err := ns.check(); err != nil {
		t.Errorf("check() = %v", err)
	}
}

// TestIndexSpaceBoundsMemory: a namespace's steady create-destroy cycle
// wraps its ifindex cursor at IndexSpace, so its allocators stay the size of
// that space however many devices it has made, and every ifindex handed out
// stays unique among the devices alive.
func TestIndexSpaceBoundsMemory(t *testing.T) {
	for _, alloc := range []string{AllocBitmap, AllocLinear} {
		c := base(t)
		c.Alloc, c.Count = alloc, 1000
		ns := newNamespace(c, &lock{})
		wrap := IndexSpace(c.Count)
		var fifo []*device
		for i := range 5 * wrap {
			if len(fifo) == c.Count {
				if err := ns.destroy(fifo[0]); err != nil {
					t.Fatal(err)
				}
				fifo = fifo[1:]
			}
			d := &device{}
			if err := ns.create(d); err != nil {
				t.Fatalf("%s: create #%d: %v", alloc, i, err)
			}
			if d.ifindex < 1 || d.ifindex > wrap {
				t.Fatalf("%s: create #%d got ifindex %d, outside [1, %d]", alloc, i, d.ifindex, wrap)
			}
			fifo = append(fifo, d)
		}
		if err := ns.check(); err != nil {
			t.Fatal(err)
		}
		type sized interface{ Bytes() int }
		if b := ns.ifindex.(sized).Bytes(); b > 2*wrap/8+4096 {
			t.Errorf("%s: ifindex allocator holds %d bytes after %d creates, want about %d (the index space)", alloc, b, 5*wrap, wrap/8)
		}
	}
}

// TestMemoryEstimateCovers measures the live heap of a namespace keeping n
// devices alive, as a run's threads keep them, and checks that the estimate
// per device leaves the collector its headroom (twice the live data).
func TestMemoryEstimateCovers(t *testing.T) {
	const n = 200000
	c := base(t)
	c.Count = n
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ns := newNamespace(c, &lock{})
	var mine []*device
	for range n {
		d := &device{}
		if err := ns.create(d); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, d)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(mine)
	runtime.KeepAlive(ns)
	t.Logf("live heap: %.1f bytes per device; the estimate charges %d", live, bytesPerDevice)
	if 2*live > bytesPerDevice {
		t.Errorf("a device alive holds %.1f bytes; twice that (GOGC=100 headroom) is above bytesPerDevice = %d: raise it", live, bytesPerDevice)
	}
}

// TestMemoryBoundRefusesUpFront: 10 million devices in each of 1024
// namespaces are refused before anything is allocated, with the estimate.
func TestMemoryBoundRefusesUpFront(t *testing.T) {
	c := base(t)
	c.Count, c.Namespaces, c.Threads, c.MaxMemory = 10_000_000, 1024, 1024, 4<<30
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	r, err := Run(context.Background(), c)
	var oe *OverMemoryError
	if r != nil || !errors.As(err, &oe) || oe.Used != 0 || oe.Estimate != c.Memory() || oe.Estimate < 1024*10_000_000*100 {
		t.Fatalf("Run(-n 10M, 1024 namespaces, max 4 GiB) = %v, %v; want an *OverMemoryError refusing it with the estimate", r, err)
	}
	for _, want := range []string{"10240000000 devices (10000000 in each of 1024 namespace(s))", "need about 3.7 TiB", "more than the 4.0 GiB allowed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to contain %q", err, want)
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the refusal took %v", time.Since(start))
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.TotalAlloc-before.TotalAlloc > 1<<20 {
		t.Errorf("the refusal allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
	}
}

// TestMemoryBoundStopsARun: a run whose process goes above MaxMemory stops
// within a poll with an *OverMemoryError, its namespaces emptied as usual.
func TestMemoryBoundStopsARun(t *testing.T) {
	c := base(t)
	c.Duration = time.Minute
	c.MaxMemory = 1 << 20 // the runtime alone maps more: the first poll stops the run
	if c.Memory() > c.MaxMemory {
		t.Skipf("estimate %d above the bound %d; the refusal would be tested instead", c.Memory(), c.MaxMemory)
	}
	start := time.Now()
	r, err := Run(context.Background(), c)
	var oe *OverMemoryError
	if r == nil || !errors.As(err, &oe) || oe.Used <= c.MaxMemory || !strings.Contains(err.Error(), "stopped after") {
		t.Fatalf("Run above MaxMemory = %v, %v; want the result and an *OverMemoryError saying it stopped", r, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopping took %v, want about one poll (%v)", d, memPoll)
	}
	if r.Ops == 0 || errors.Is(err, ErrInconsistent) {
		t.Errorf("the stopped run: %d ops, %v; want a consistent, emptied registry", r.Ops, err)
	}
}

// TestInterruptedRunFails: a run the context ends before its duration
// returns its figures marked interrupted, with an error saying how far it
// got; the namespaces are still checked and emptied.
func TestInterruptedRunFails(t *testing.T) {
	c := Config{Threads: 2, Count: 100, Duration: time.Minute, Locking: LockRTNL, Namespaces: 1, Alloc: AllocBitmap, Template: tmpl(t, "churn%d")}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	r, err := Run(ctx, c)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted after") || r == nil || !r.Interrupted {
		t.Fatalf("Run cancelled after 100 ms = %+v, %v; want its figures marked interrupted and an error", r, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v to stop after the cancel", took)
	}
}
