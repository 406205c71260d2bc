//go:build unix

// Package knobsettest holds the lock that real-kernel tests on one machine
// share, so that a test that changes a global kernel knob never runs while
// another real-kernel measurement does.
package knobsettest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RealKernelLock is the machine's lock for real-kernel runs: whoever times
// the real kernel or changes its knobs holds it (flock(1) takes it the same
// way: flock /tmp/ndst-realkernel.lock COMMAND).
const RealKernelLock = "/tmp/ndst-realkernel.lock"

// HoldRealKernelLock holds RealKernelLock until the test ends. A test run
// under flock(1) already holds it through the descriptor it inherited; else
// it waits for the lock, at most wait, and fails after that.
func HoldRealKernelLock(t testing.TB, wait time.Duration) {
	t.Helper()
	if inherited() {
		t.Logf("%s is held by the command that started this test", RealKernelLock)
		return
	}
	f, err := os.OpenFile(RealKernelLock, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
	if err != nil {
		t.Fatalf("open %s: %v", RealKernelLock, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			t.Fatalf("flock %s: %v", RealKernelLock, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("%s stayed locked for %v (another real-kernel run)", RealKernelLock, wait)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() })
}

// inherited reports whether a descriptor this process inherited holds the
// lock: flocking an open file description that already holds it succeeds
// at once, where a new one would wait.
func inherited() bool {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || target != RealKernelLock {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			return true
		}
	}
	return false
}
