// Package safefile opens, reads and writes the files ndst is pointed at
// (state files, cost tables, exports, plots, guest logs, the kernel's /proc
// and /sys files) so that no file can make ndst hang, read without bound, or
// overwrite something that is not a plain file.
//
// Invariants:
//   - Only regular files are opened for I/O. The type is checked with lstat
//     (or stat, when links are followed) before the open, so a device node
//     is never opened at all, and again with fstat on the opened descriptor,
//     so a file swapped in between is caught. The open itself is
//     non-blocking (O_NONBLOCK): a FIFO can never block it. Anything else
//     is a *NotRegularError wrapping ErrNotRegular that says what the path
//     is (a directory, a FIFO, a character device, a symbolic link, ...).
//   - With NoLinks, a path whose last component is a symbolic link is
//     refused (O_NOFOLLOW where the system has it), and the error names
//     the link's target. Links in the directories above are followed.
//   - ndst's link policy: every file it writes refuses a link as its last
//     component (see WriteOutput); inputs (--costs, --from-guest, /proc)
//     follow links, their target checked like any file.
//   - ReadFile never returns more than its limit: a larger file is a
//     *TooLargeError wrapping ErrTooLarge, found from fstat before reading,
//     or while reading for files whose size is not known in advance (/proc).
//     Reads stop with ctx.Err() when ctx is done (SIGINT, SIGTERM).
//   - Every file ndst produces (state files, cost tables, exports, plots,
//     traces, ownership records, journals) is written by WriteOutput, and
//     nothing else writes in place: never through a link, never on a
//     kernel pseudo file system (procfs, sysfs, ...: a "file" there is a
//     kernel setting), always to a temporary file beside the path that is
//     synced and renamed over it, so a failure leaves the old file as it
//     was and a crash leaves the old file or the new one (see output.go).
//   - Kernel settings are written only through WriteKernelFile, which
//     requires the path to be on a kernel pseudo file system: the two kinds
//     of write cannot be mistaken for each other.
package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Links says what to do with a path whose last component is a symbolic link.
type Links int

const (
	// FollowLinks opens the link's target, which is checked like any file.
	FollowLinks Links = iota
	// NoLinks refuses the link.
	NoLinks
)

// Errors wrapped by this package's errors; test with errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file is too large")
)

// NotRegularError reports a path that exists but is not a regular file (or,
// with NoLinks, is a symbolic link).
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits of what the path is
	// Target is a symbolic link's target, when Mode is fs.ModeSymlink.
	Target string
}

func (e *NotRegularError) Error() string {
	if e.Mode&fs.ModeSymlink != 0 {
		return fmt.Sprintf("%s is a symbolic link (to %s), not a regular file", e.Path, e.Target)
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, Describe(e.Mode))
}

// Unwrap returns ErrNotRegular.
func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// Describe names a file type for a person: "a directory", "a FIFO (named
// pipe)", "a character device", ...
func Describe(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a plain file (" + mode.Type().String() + ")"
}

// TooLargeError reports a file above a read limit.
type TooLargeError struct {
	Path  string
	Size  int64 // the size seen: from fstat, or the bytes read so far
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the %s ndst reads from it (%s or more)", e.Path, Bytes(e.Limit), Bytes(e.Size))
}

// Unwrap returns ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// Bytes formats a byte count for a person: "512 B", "3.0 KiB", "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// classify returns what path is without opening it: nil for a regular file,
// a *NotRegularError otherwise, or the stat error (fs.ErrNotExist for a
// missing path).
func classify(path string, links Links) (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if links == NoLinks {
		fi, err = os.Lstat(path)
	} else {
		fi, err = os.Stat(path)
	}
	if err != nil {
		return nil, err
	}
	return fi, checkRegular(path, fi)
}

func checkRegular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	e := &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	if e.Mode&fs.ModeSymlink != 0 {
		e.Target, _ = os.Readlink(path)
	}
	return e
}

// Check reports what path is, opening nothing: nil for a regular file, an
// error wrapping fs.ErrNotExist for a missing one, a *NotRegularError for
// anything else.
func Check(path string, links Links) error {
	_, err := classify(path, links)
	return err
}

// OpenFile opens path with flag (os.O_RDONLY, os.O_RDWR|os.O_CREATE, ...; never
// os.O_TRUNC, which Create applies after the checks) and perm, refusing
// anything but a regular file as the package documentation says. The open
// never blocks. The returned file is in ordinary blocking mode.
func OpenFile(path string, flag int, perm fs.FileMode, links Links) (*os.File, error) {
	if flag&os.O_TRUNC != 0 {
		return nil, fmt.Errorf("safefile.OpenFile(%s): O_TRUNC would truncate before the checks; use Create", path)
	}
	if _, err := classify(path, links); err != nil && !(errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0) {
		return nil, err
	}
	f, err := openNonblock(path, flag, perm, links)
	if err != nil {
		// A FIFO or link swapped in after classify; say what it is.
		if _, cerr := classify(path, links); cerr != nil && !errors.Is(cerr, fs.ErrNotExist) {
			return nil, cerr
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens a regular file for reading.
func Open(path string, links Links) (*os.File, error) {
	return OpenFile(path, os.O_RDONLY, 0, links)
}

// ReadFile reads the regular file at path, at most limit bytes (a larger
// file is a *TooLargeError), stopping early when ctx is done.
func ReadFile(ctx context.Context, path string, limit int64, links Links) ([]byte, error) {
	f, err := Open(path, links)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Limit: limit}
	}
	// The size is a hint only: /proc and /sys files say 0 or 4096.
	buf := make([]byte, 0, min(max(fi.Size(), 512)+1, limit+1))
	r := NewReader(ctx, io.LimitReader(f, limit+1))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &TooLargeError{Path: path, Size: int64(len(buf)), Limit: limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// chunk is the most one Read through NewReader's reader asks for, so that a
// cancelled context is noticed within one chunk's time.
const chunk = 1 << 20

// NewReader returns a reader of r that fails with ctx.Err() once ctx is done,
// checked before every read of at most 1 MiB.
func NewReader(ctx context.Context, r io.Reader) io.Reader { return &ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	return c.r.Read(p)
}

// MaxKernelFile bounds ReadKernelFile: /proc and /sys files are small, the
// largest ndst reads (/proc/locks on a busy host) a few MiB.
const MaxKernelFile = 4 << 20

// ReadKernelFile reads a file the kernel provides (/proc, /sys, /boot): a
// regular file, links followed, at most MaxKernelFile bytes.
func ReadKernelFile(path string) ([]byte, error) {
	return ReadFile(context.Background(), path, MaxKernelFile, FollowLinks)
}
