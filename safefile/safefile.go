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
//   - ndst's link policy: its state file and lock, and every file replaced
//     by a rename (Replace: cost tables from calibrate -o and predict
//     --save-costs), refuse links (NoLinks); inputs (--costs, --from-guest,
//     /proc) and exports written in place (bench --export-*, --plot)
//     follow them, their target checked like any file.
//   - ReadFile never returns more than its limit: a larger file is a
//     *TooLargeError wrapping ErrTooLarge, found from fstat before reading,
//     or while reading for files whose size is not known in advance (/proc).
//     Reads stop with ctx.Err() when ctx is done (SIGINT, SIGTERM).
//   - Create and WriteFile change nothing when they refuse a path: an
//     existing regular file is truncated only after its checks pass.
//   - Replace never writes through or replaces a link, a directory or a
//     device: it writes a temporary file beside path, syncs it and renames
//     it over path (which must be missing or a regular file), then syncs
//     the directory; a crash leaves the old file or the new one.
package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// Create opens path for writing in place: a missing file is created with perm
// (less the umask), an existing regular file is truncated once it has passed
// the checks; anything else is refused unchanged.
func Create(path string, perm fs.FileMode, links Links) (*os.File, error) {
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE, perm, links)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile creates path with Create and fills it with write; a failed write
// names the path.
func WriteFile(path string, perm fs.FileMode, links Links, write func(io.Writer) error) error {
	f, err := Create(path, perm, links)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CheckWritable reports whether Create(path) would succeed, changing nothing:
// an existing path must be a regular file this process may write; for a
// missing one, its directory must exist and take a new file (tried with a
// temporary file that is removed at once).
func CheckWritable(path string, links Links) error {
	switch err := Check(path, links); {
	case err == nil:
		f, err := OpenFile(path, os.O_WRONLY, 0, links)
		if err != nil {
			return err
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot create %s: directory %s does not exist: %w", path, dir, fs.ErrNotExist)
	} else if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("cannot create %s: %s is %s", path, dir, Describe(fi.Mode()))
	}
	f, err := os.CreateTemp(dir, ".ndst-check-*")
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, unwrapPath(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReplaceOptions tunes Replace; the zero value is the default.
type ReplaceOptions struct {
	// TempPattern is the temporary file's name pattern (os.CreateTemp) in
	// path's directory; default "." + base + ".tmp-*".
	TempPattern string
	// BeforeRename, if set, runs after the temporary file is written and
	// synced, just before the rename (crash tests use it).
	BeforeRename func(tmp string)
}

// Replace writes data to path atomically with mode perm: path must be missing
// or a regular file (never a link, which the rename would replace while its
// target stayed stale, nor a directory or a device, which it would
// replace with a file). path's directory must exist.
func Replace(path string, perm fs.FileMode, data []byte, o *ReplaceOptions) error {
	if err := Check(path, NoLinks); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return fmt.Errorf("%q names a directory, not a file", path)
	}
	if o == nil {
		o = &ReplaceOptions{}
	}
	pattern := o.TempPattern
	if pattern == "" {
		pattern = "." + base + ".tmp-*"
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if o.BeforeRename != nil {
		o.BeforeRename(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s was replaced, but syncing its directory failed: %w", path, err)
	}
	return nil
}

// MaxKernelFile bounds ReadKernelFile: /proc and /sys files are small, the
// largest ndst reads (/proc/locks on a busy host) a few MiB.
const MaxKernelFile = 4 << 20

// ReadKernelFile reads a file the kernel provides (/proc, /sys, /boot): a
// regular file, links followed, at most MaxKernelFile bytes.
func ReadKernelFile(path string) ([]byte, error) {
	return ReadFile(context.Background(), path, MaxKernelFile, FollowLinks)
}
