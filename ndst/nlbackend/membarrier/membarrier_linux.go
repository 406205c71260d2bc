package membarrier

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// membarrier commands (linux/membarrier.h).
const (
	cmdQuery  = 0
	cmdGlobal = 1 // MEMBARRIER_CMD_GLOBAL (formerly SHARED)
)

// Global returns a function that issues one
// membarrier(MEMBARRIER_CMD_GLOBAL), which blocks for one synchronize_rcu()
// on a kernel with more than one online CPU, or an error saying why it
// cannot be used here.
func Global() (func() error, error) {
	r, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, cmdQuery, 0, 0)
	if errno != 0 {
		return nil, fmt.Errorf("membarrier is not available (%v)", errno)
	}
	if r&(1<<cmdGlobal) == 0 {
		return nil, fmt.Errorf("membarrier(MEMBARRIER_CMD_GLOBAL) is not supported here (nohz_full?)")
	}
	return func() error {
		if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, cmdGlobal, 0, 0); errno != 0 {
			return fmt.Errorf("membarrier(MEMBARRIER_CMD_GLOBAL): %v", errno)
		}
		return nil
	}, nil
}

// probing serialises probes: each sets GOMAXPROCS and restores it.
var probing sync.Mutex

// Probe times n membarrier(MEMBARRIER_CMD_GLOBAL) calls, each after a pause
// of pause() (none when pause is nil), and returns each call's start and end
// on CLOCK_MONOTONIC, the clock jiffies follow.
//
// It keeps the Go runtime from lengthening the grace periods it times. While
// a goroutine blocks in a system call the runtime's monitor thread (sysmon)
// polls every 20 µs, for a millisecond after it last slept and then at
// doubling intervals, to hand the call's P to other work; each poll wakes
// an idle CPU, and on this project's 6.18 host (HZ=250) grace periods timed
// so took 12.7-13.7 ms at the median against 6.5 ms for the same loop in a
// C program (300 calls each, interleaved, 4 December 2026). So the loop
// runs on one locked OS thread with GOMAXPROCS 1, and the pauses and the
// clock reads are raw system calls, which the runtime does not see: to it
// one goroutine runs, and its monitor backs off to polling every 10 ms. The
// membarrier call itself is an ordinary system call, so that a grace period
// that does not end lets the runtime hand the P to the rest of the process
// (a raw one would keep it, and the garbage collector's stop-the-world with
// it). Timed so, the medians were 6.2-6.7 ms. The other goroutines run
// while a call blocks, or when the runtime preempts the loop.
func Probe(ctx context.Context, n int, pause func() time.Duration) (starts, ends []int64, err error) {
	call, err := Global()
	if err != nil {
		return nil, nil, err
	}
	probing.Lock()
	defer probing.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	starts, ends = make([]int64, 0, n), make([]int64, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return starts, ends, err
		}
		if pause != nil {
			rawSleep(pause())
		}
		t0 := rawMonotonic()
		if err := call(); err != nil {
			return starts, ends, err
		}
		starts, ends = append(starts, t0), append(ends, rawMonotonic())
	}
	return starts, ends, nil
}

// rawMonotonic reads CLOCK_MONOTONIC by a raw system call (Probe).
func rawMonotonic() int64 {
	var ts unix.Timespec
	unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// rawSleep sleeps for d by raw nanosleep calls (Probe); a signal that
// interrupts one (the runtime's preemption) resumes it for what is left.
func rawSleep(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	for {
		var rem unix.Timespec
		_, _, errno := unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&rem)), 0)
		if errno != unix.EINTR {
			return
		}
		ts = rem
	}
}
