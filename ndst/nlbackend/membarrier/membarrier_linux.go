package membarrier

import (
	"fmt"

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
