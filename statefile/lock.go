package statefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ndst-project/ndst/safefile"
)

// FileLock is an exclusive lock on a state file, held from Lock to Unlock.
type FileLock struct {
	f        *os.File
	path     string
	readOnly string
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

// maxLockContent is the most a lock file may hold: a PID and a newline.
const maxLockContent = 24

// Lock takes the exclusive lock for the state file at path, for a whole
// read-modify-write command. It is LockContext without cancellation.
func Lock(path string, wait time.Duration) (*FileLock, error) {
	return LockContext(context.Background(), path, wait)
}

// LockContext takes the exclusive lock for the state file at path: an
// advisory lock (flock(2); LockFileEx on Windows) on path+".lock", created
// with mode 0600 (and its directory with 0700) if missing. It retries for up
// to wait (0: try once), then returns a *LockedError naming the holder's
// PID. It stops early, with an error wrapping ctx.Err(), when ctx is done.
// On success the lock file holds this process's PID.
//
// Before creating anything it checks that path may be ndst's: a missing
// file, or a regular file that is (or was, if corrupt) an ndst state file.
// A directory, a symbolic link, a FIFO, a device or another program's file
// is refused with an error wrapping ErrForeign, and no lock file is made
// beside it. An existing lock file must itself be a regular file holding
// nothing but a PID.
//
// When the directory does not let this process create the lock file (a
// read-only file system, or no write permission), nothing can be locked,
// but nothing needs to be: this process cannot write the state there either
// (Save creates its temporary file in the same directory), and a reader
// needs no lock because Save replaces the file by an atomic rename. The
// returned lock then holds nothing and ReadOnly says why; Load works, Save
// fails.
//
// The kernel releases the lock when the holder's file is closed, including
// when the holder dies, so a lock file left behind never blocks anyone.
func LockContext(ctx context.Context, path string, wait time.Duration) (*FileLock, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := checkOwned(path); err != nil {
		return nil, err
	}
	lp := path + ".lock"
	if err := os.MkdirAll(filepath.Dir(lp), 0o700); err != nil {
		if cannotWrite(err) {
			return &FileLock{path: path, readOnly: "cannot create the state directory: " + unwrapPath(err).Error()}, nil
		}
		return nil, fmt.Errorf("cannot create the state directory: %w", err)
	}
	start := time.Now()
	deadline := start.Add(max(wait, 0))
	delay := pollFirst
	var f *os.File
	for {
		var err error
		f, err = openLockFile(lp)
		if err != nil {
			if ro, ok := err.(readOnlyDir); ok {
				return &FileLock{path: path, readOnly: string(ro)}, nil
			}
			return nil, err
		}
		err = tryLock(f)
		if err == nil {
			// The lock is the file's: one that reset removed (with its
			// state) while this process waited is no lock at all, and the
			// path may already name a new one. Lock what the path names.
			if same(f, lp) {
				break
			}
			unlock(f)
			f.Close()
			continue
		}
		if !errors.Is(err, errBusy) {
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
		f.Close() // reopened on the next try: the file may be a new one by then
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("stopped waiting for the lock on state file %s: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, pollMax)
	}
	// Record the holder for anyone who waits on us. Best effort (a lock
	// file opened read-only cannot take it): without it a waiter's message
	// says "pid unknown", nothing worse.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &FileLock{f: f, path: path}, nil
}

// same reports whether the open file f is the file lp names now.
func same(f *os.File, lp string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(lp)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// readOnlyDir is openLockFile's answer when the directory takes no new file.
type readOnlyDir string

func (r readOnlyDir) Error() string { return string(r) }

// openLockFile opens (or creates) the lock file: a regular file, never
// through a link, holding at most a PID. An existing lock file this process
// may not write is opened read-only, which is enough to lock it.
func openLockFile(lp string) (*os.File, error) {
	f, err := safefile.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600, safefile.NoLinks)
	if err != nil && cannotWrite(err) {
		if _, serr := os.Lstat(lp); errors.Is(serr, fs.ErrNotExist) {
			return nil, readOnlyDir(fmt.Sprintf("cannot create lock file %s (%v)", lp, unwrapPath(err)))
		}
		f, err = safefile.OpenFile(lp, os.O_RDONLY, 0, safefile.NoLinks)
	}
	if err != nil {
		var nr *safefile.NotRegularError
		if errors.As(err, &nr) {
			return nil, &ForeignError{Path: lp, What: "lock file", err: err,
				Hint: "ndst keeps its lock in a regular file beside the state file; move " + lp + " away"}
		}
		return nil, fmt.Errorf("cannot open lock file: %w", err)
	}
	buf := make([]byte, maxLockContent+1)
	n, rerr := f.ReadAt(buf, 0)
	if rerr != nil && rerr != io.EOF {
		f.Close()
		return nil, fmt.Errorf("cannot read lock file %s: %w", lp, rerr)
	}
	if !isPIDContent(buf[:n]) {
		f.Close()
		return nil, &ForeignError{Path: lp, What: "lock file", Hint: "it holds something other than an ndst PID, so ndst leaves it alone; move it away if it is not yours"}
	}
	return f, nil
}

// isPIDContent reports whether b is what ndst writes to a lock file: nothing,
// or a decimal PID and a newline.
func isPIDContent(b []byte) bool {
	if len(b) > maxLockContent {
		return false
	}
	s := strings.TrimSuffix(string(b), "\n")
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// cannotWrite reports whether err says the file system or the permissions
// forbid writing.
func cannotWrite(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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

// ReadOnly is empty when the lock is held; otherwise it says why nothing
// could be locked (the directory takes no new files), in which case this
// process can read the state but not save it.
func (l *FileLock) ReadOnly() string { return l.readOnly }

// Remove deletes the lock file and releases the lock: reset's end, when the
// state it guards is gone. A process that was waiting for it finds, once it
// has the lock, that the path no longer names its file and takes the lock
// again on the path (LockContext), so no two hold it.
func (l *FileLock) Remove() error {
	if l == nil || l.f == nil {
		return nil
	}
	lp := l.path + ".lock"
	var err error
	if same(l.f, lp) {
		err = os.Remove(lp)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if uerr := l.Unlock(); err == nil {
		err = uerr
	}
	return err
}

// Unlock clears the recorded PID and releases the lock. Calling it again does
// nothing.
func (l *FileLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	f.Truncate(0) // best effort: a stale PID is harmless, the lock is what counts
	err := unlock(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot unlock state file %s: %w", l.path, err)
	}
	return nil
}
