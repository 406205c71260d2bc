package statefile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// FileLock is an exclusive lock on a state file, held from Lock to Unlock.
type FileLock struct {
	f    *os.File
	path string
}

// LockedError reports that another process held the lock for the whole wait.
// It wraps ErrLocked.
type LockedError struct {
	Path   string        // the state file
	PID    int           // the holder's PID, 0 if it could not be read
	Waited time.Duration // how long Lock waited
}

func (e *LockedError) Error() string {
	holder := "another process (pid unknown)"
	if e.PID > 0 {
		holder = "another ndst, pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("state file %s is locked by %s; gave up after waiting %v; let that command finish, or raise --wait-lock",
		e.Path, holder, e.Waited)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Poll intervals while waiting for the lock: doubling from the first to the
// last, so a short hold costs little latency and a long one little CPU.
const (
	pollFirst = time.Millisecond
	pollMax   = 50 * time.Millisecond
)

// Lock takes the exclusive lock for the state file at path, for a whole
// read-modify-write command. It is LockContext without cancellation.
func Lock(path string, wait time.Duration) (*FileLock, error) {
	return LockContext(context.Background(), path, wait)
}

// LockContext takes the exclusive lock for the state file at path: flock(2)
// on path+".lock", created with mode 0600 (and its directory with 0700) if
// missing. It retries for up to wait (0: try once), then returns a
// *LockedError naming the holder's PID. It stops early, with an error
// wrapping ctx.Err(), when ctx is done. On success the lock file holds this process's PID.
//
// The kernel releases the lock when the holder's file is closed, including
// when the holder dies, so a lock file left behind never blocks anyone.
func LockContext(ctx context.Context, path string, wait time.Duration) (*FileLock, error) {
	lp := path + ".lock"
	if err := os.MkdirAll(filepath.Dir(lp), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state directory: %w", err)
	}
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open lock file: %w", err)
	}
	start := time.Now()
	deadline := start.Add(max(wait, 0))
	delay := pollFirst
	for {
		err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %w", lp, err)
		}
		now := time.Now()
		if !now.Before(deadline) {
			pid := readPID(f)
			f.Close()
			return nil, &LockedError{Path: path, PID: pid, Waited: now.Sub(start).Round(time.Millisecond)}
		}
		t := time.NewTimer(min(delay, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("stopped waiting for the lock on state file %s: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, pollMax)
	}
	// Record the holder for anyone who waits on us. Best effort: without
	// it a waiter's message says "pid unknown", nothing worse.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &FileLock{f: f, path: path}, nil
}

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if ferr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return ferr
}

// readPID returns the PID recorded in the lock file, 0 if there is none.
func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Path returns the state file this lock guards.
func (l *FileLock) Path() string { return l.path }

// Unlock clears the recorded PID and releases the lock. Calling it again does
// nothing.
func (l *FileLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	f.Truncate(0) // best effort: a stale PID is harmless, the lock is what counts
	err := flock(f, unix.LOCK_UN)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot unlock state file %s: %w", l.path, err)
	}
	return nil
}
