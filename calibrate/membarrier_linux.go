package calibrate

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// membarrier commands (linux/membarrier.h).
const (
	membarrierCmdQuery  = 0
	membarrierCmdGlobal = 1 // MEMBARRIER_CMD_GLOBAL (formerly SHARED)
)

// membarrierGlobal returns a function that issues one
// membarrier(MEMBARRIER_CMD_GLOBAL), which blocks for one synchronize_rcu()
// on a kernel with more than one online CPU, or an error saying why it
// cannot be used here.
func membarrierGlobal() (func() error, error) {
	r, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdQuery, 0, 0)
	if errno != 0 {
		return nil, fmt.Errorf("membarrier is not available (%v)", errno)
	}
	if r&(1<<membarrierCmdGlobal) == 0 {
		return nil, fmt.Errorf("membarrier(MEMBARRIER_CMD_GLOBAL) is not supported here (nohz_full?)")
	}
	return func() error {
		if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0); errno != 0 {
			return fmt.Errorf("membarrier(MEMBARRIER_CMD_GLOBAL): %v", errno)
		}
		return nil
	}, nil
}

// monotonic is CLOCK_MONOTONIC in nanoseconds: the clock jiffies follow.
func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
