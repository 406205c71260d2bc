//go:build windows

package statefile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errBusy is tryLock's error when another open file holds the lock.
var errBusy = errors.New("lock is held")

// The locked range lies far beyond the PID the file holds: LockFileEx locks
// are mandatory, and a waiter must still be able to read who holds it.
const (
	lockOffsetHigh = 0x40000000
	lockBytes      = 1
)

// tryLock takes an exclusive LockFileEx lock on f without waiting.
func tryLock(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, lockBytes, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return errBusy
	}
	return err
}

func unlock(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, lockBytes, 0, ol)
}
