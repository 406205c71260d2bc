package churn

import (
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/ndst-project/ndst/safefile"
)

// The memory bound of a run. Run refuses a Config whose Memory estimate is
// above MaxMemory before it starts, and stops a run whose process memory
// reaches MaxMemory (an *OverMemoryError, never an out-of-memory death):
// the estimate is checked once, the real figure every memPoll.
//
// The figures per device and per namespace are measured by
// TestMemoryEstimateCovers: a namespace keeping n devices alive holds about
// 190 bytes per device (the device with its 64-byte private area, its
// name, its table entry and name hash slot, the thread's FIFO slot), and
// the garbage collector lets the heap reach twice the live data before it
// collects (GOGC=100); the name hash and the FIFOs double when they grow,
// which the factor two covers too. Each namespace also has its ifindex bitmap over IndexSpace.

const (
	bytesPerDevice    = 400
	bytesPerNamespace = 16 << 10 // the table's 256 buckets, allocators, lock
	bytesPerThread    = 16 << 10 // goroutine stack and bookkeeping
	memPoll           = 50 * time.Millisecond
)

// Memory estimates the most memory a run of c holds, in bytes: every
// namespace keeps c.Count devices alive (Validate makes sure each has a
// thread).
func (c Config) Memory() uint64 {
	perNS := uint64(c.Count)*bytesPerDevice + uint64(IndexSpace(c.Count))/8*65/64 + uint64(c.Count)/8
	return uint64(c.Namespaces)*(perNS+bytesPerNamespace) + uint64(c.Threads)*bytesPerThread
}

// OverMemoryError is a run refused (Used == 0) or stopped because it needs
// more than Config.MaxMemory.
type OverMemoryError struct {
	Config   Config
	Estimate uint64        // Config.Memory()
	Used     uint64        // the process's memory when a run was stopped; 0 when refused
	After    time.Duration // how long the run had churned when stopped
}

func (e *OverMemoryError) Error() string {
	c := e.Config
	if e.Used == 0 {
		return fmt.Sprintf("%d devices (%d in each of %d namespace(s)) need about %s of memory, more than the %s allowed",
			int64(c.Count)*int64(c.Namespaces), c.Count, c.Namespaces, safefile.Bytes(int64(e.Estimate)), safefile.Bytes(int64(c.MaxMemory)))
	}
	return fmt.Sprintf("stopped after %v: the process's memory reached %s, more than the %s allowed (the estimate was %s)",
		e.After.Round(time.Millisecond), safefile.Bytes(int64(e.Used)), safefile.Bytes(int64(c.MaxMemory)), safefile.Bytes(int64(e.Estimate)))
}

// checkMemory refuses c when its estimate is above c.MaxMemory.
func checkMemory(c Config) error {
	if est := c.Memory(); c.MaxMemory > 0 && est > c.MaxMemory {
		return &OverMemoryError{Config: c, Estimate: est}
	}
	return nil
}

// processMemory is the memory the Go runtime has mapped and not returned to
// the system: what the kernel charges this process for.
func processMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// watchMemory sets the runtime's soft memory limit to c.MaxMemory (so the
// collector works harder before the bound is reached) and, until ctx is
// done, stops the run through stop when the process goes above it. It
// returns a function that restores the limit and reports the overrun, if
// any.
func watchMemory(ctx context.Context, c Config, start time.Time, stop *atomic.Bool) func() error {
	if c.MaxMemory == 0 {
		return func() error { return nil }
	}
	old := debug.SetMemoryLimit(int64(min(c.MaxMemory, 1<<62)))
	var over atomic.Pointer[OverMemoryError]
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(memPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if used := processMemory(); used > c.MaxMemory {
					over.Store(&OverMemoryError{Config: c, Estimate: c.Memory(), Used: used, After: time.Since(start)})
					stop.Store(true)
					return
				}
			}
		}
	}()
	return func() error {
		<-done
		debug.SetMemoryLimit(old)
		if e := over.Load(); e != nil {
			return e
		}
		return nil
	}
}
