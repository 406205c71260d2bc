package calibrate

import (
	"github.com/ndst-project/ndst/ndst/nlbackend/membarrier"
	"golang.org/x/sys/unix"
)

// membarrierGlobal returns a function that issues one
// membarrier(MEMBARRIER_CMD_GLOBAL) (package membarrier), or an error
// saying why it cannot be used here.
func membarrierGlobal() (func() error, error) { return membarrier.Global() }

// monotonic is CLOCK_MONOTONIC in nanoseconds: the clock jiffies follow.
func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
