package nlbackend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ndst-project/ndst/safefile"
)

// The namespace lock: an exclusive flock(2) on the namespace's own nsfs
// inode, taken by every command that changes the namespace (add, del,
// reset) for the whole of its listing and its requests, so that two ndst
// processes never interleave in one namespace. It is keyed by the
// namespace's identity, not its name: two names bound to one namespace
// share one lock, and a namespace deleted and made again under the same
// name has a new one. No file is created for it. The kernel drops the lock
// when its holder exits, however it exits. Listing takes no lock.

// Poll intervals while waiting for the lock: doubling from the first to
// the last, so a short hold costs little latency and a long one little CPU.
const (
	lockPollFirst = time.Millisecond
	lockPollMax   = 50 * time.Millisecond
)

// errNetnsLocked is wrapped by the error of a lock wait that ran out.
var errNetnsLocked = errors.New("network namespace is locked")

// lockNetns takes the exclusive lock on the namespace open as fd, waiting
// up to wait (0: try once) and no longer than ctx. The returned function
// releases it.
func lockNetns(ctx context.Context, fd int, name string, wait time.Duration) (func(), error) {
	return flockWait(ctx, fd, "network namespace "+name, wait, func() int {
		id, err := fdID(fd)
		if err != nil {
			return 0
		}
		return lockHolder(id)
	})
}

// flockWait takes an exclusive flock on fd (what names it in messages),
// waiting up to wait (0: try once) and no longer than ctx; holder returns
// the PID that holds it, 0 when unknown. The returned function releases it.
func flockWait(ctx context.Context, fd int, what string, wait time.Duration, holder func() int) (func(), error) {
	start := time.Now()
	deadline := start.Add(max(wait, 0))
	delay := lockPollFirst
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return func() { _ = unix.Flock(fd, unix.LOCK_UN) }, nil
		case err == unix.EINTR:
			continue
		case err != unix.EWOULDBLOCK:
			return nil, fmt.Errorf("lock %s: %w", what, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waiting for the lock of %s: %w", what, err)
		}
		now := time.Now()
		if !now.Before(deadline) {
			who := "another process"
			if pid := holder(); pid > 0 {
				who = describePID(pid)
			}
			return nil, fmt.Errorf("%w: %s holds the lock of %s; gave up after waiting %v; let that command finish, or raise --wait-lock",
				errNetnsLocked, who, what, now.Sub(start).Round(time.Millisecond))
		}
		t := time.NewTimer(min(delay, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay = min(2*delay, lockPollMax)
	}
}

// procLocks lists the kernel's file locks; tests point it elsewhere.
var procLocks = "/proc/locks"

// maxProcLocks bounds how much of /proc/locks is read.
const maxProcLocks = 4 << 20

// lockHolder returns the PID holding a FLOCK on the inode id, from
// /proc/locks, or 0 when none is listed.
func lockHolder(id nsID) int {
	f, err := safefile.Open(procLocks, safefile.FollowLinks)
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseLockHolder(io.LimitReader(f, maxProcLocks), id)
}

// parseLockHolder reads /proc/locks lines such as
//
//	1: FLOCK  ADVISORY  WRITE 29185 00:04:4026532177 0 EOF
//
// (the device in hexadecimal major:minor) and returns the PID of the first
// active FLOCK on id; lines of blocked waiters ("1: -> FLOCK ...") are not
// holders.
func parseLockHolder(r io.Reader, id nsID) int {
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(id.dev), unix.Minor(id.dev), id.ino)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// describePID names a process for a message: "ndst (pid 123)".
func describePID(pid int) string {
	b, err := safefile.ReadKernelFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if comm := strings.TrimSpace(string(b)); err == nil && comm != "" {
		return fmt.Sprintf("%s (pid %d)", comm, pid)
	}
	return fmt.Sprintf("pid %d", pid)
}
