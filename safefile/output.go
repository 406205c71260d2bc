package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Writing the files ndst produces. One function writes them all
// (WriteOutput), and one checks a path before a run that would end in
// writing it (CheckOutput), so that every output has the same guarantees:
//
//   - No link is followed: a path whose last component is a symbolic link
//     is refused, naming the link's target (give the target itself). The
//     rename would replace the link, not write through it, so even a link
//     planted between the check and the write cannot redirect the data.
//   - An existing path must be a regular file; a directory, FIFO, socket or
//     device is refused unchanged.
//   - The directory must not be on a kernel pseudo file system (procfs,
//     sysfs, debugfs, tracefs, cgroupfs, ...): a file there is a kernel
//     setting, not a place for output (a trace written to
//     /proc/sys/kernel/hostname would set the host name).
//   - The data goes to a temporary file in the same directory (created
//     exclusively, so nothing else is opened), which is synced and then
//     renamed over path; the directory is synced last. Any failure removes
//     the temporary file and leaves the old file as it was, and the error
//     says so; a crash leaves the old file or the new one. A hard link to
//     the old file elsewhere keeps the old content: the rename replaces
//     the name, never the inode.

// ErrPseudoFS is wrapped by the error for a path on a kernel pseudo file
// system.
var ErrPseudoFS = errors.New("on a kernel pseudo file system")

// PseudoFSError reports an output path whose directory is on a kernel
// pseudo file system.
type PseudoFSError struct {
	Path string
	FS   string // the file system's name: "procfs", "sysfs", ...
}

func (e *PseudoFSError) Error() string {
	return fmt.Sprintf("%s is on %s, a kernel pseudo file system (its files are kernel settings, not outputs); write it to an ordinary file system", e.Path, e.FS)
}

// Unwrap returns ErrPseudoFS.
func (e *PseudoFSError) Unwrap() error { return ErrPseudoFS }

// CheckNotPseudo refuses a path whose directory is on a kernel pseudo file
// system (a *PseudoFSError), for a file that is ndst's own but not written
// by WriteOutput (a state file's lock). A directory that cannot be read is
// not refused here: the open that follows says why.
func CheckNotPseudo(path string) error {
	if name := pseudoFS(filepath.Dir(path)); name != "" {
		return &PseudoFSError{Path: path, FS: name}
	}
	return nil
}

// ReplaceOptions tunes WriteOutput; the zero value is the default.
type ReplaceOptions struct {
	// TempPattern is the temporary file's name pattern (os.CreateTemp) in
	// path's directory; default "." + base + ".tmp-*".
	TempPattern string
	// BeforeRename, if set, runs after the temporary file is written and
	// synced, just before the rename (crash tests use it).
	BeforeRename func(tmp string)
	// Volatile skips the fsyncs of the file and of its directory, for a
	// file that describes what a reboot removes (ndst's records under
	// /run: namespaces, knob values). The rename still makes the
	// replacement atomic against a killed process, which loses nothing
	// the page cache holds; a machine crash may lose the file, and takes
	// what it describes with it. On a /run backed by a disk the two
	// fsyncs cost a journal commit or a device flush each (on ext4, most
	// of the time a namespace's create takes).
	Volatile bool
}

// splitOutput returns path's directory and base name, refusing a path that
// names a directory.
func splitOutput(path string) (dir, base string, err error) {
	dir, base = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return "", "", fmt.Errorf("%q names a directory, not a file", path)
	}
	return dir, base, nil
}

// checkOutput is the checks WriteOutput and CheckOutput share: path is
// missing or a regular file (not a link), and its directory exists, is a
// directory and is not on a kernel pseudo file system.
func checkOutput(path string) (dir, base string, err error) {
	dir, base, err = splitOutput(path)
	if err != nil {
		return "", "", err
	}
	if err := Check(path, NoLinks); err != nil && !errors.Is(err, fs.ErrNotExist) {
		var nr *NotRegularError
		if errors.As(err, &nr) && nr.Mode&fs.ModeSymlink != 0 {
			return "", "", fmt.Errorf("%w; ndst does not write through links: give the file itself", err)
		}
		return "", "", err
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("cannot create %s: directory %s does not exist: %w", path, dir, fs.ErrNotExist)
	case err != nil:
		return "", "", fmt.Errorf("cannot create %s: %w", path, err)
	case !fi.IsDir():
		return "", "", fmt.Errorf("cannot create %s: %s is %s", path, dir, Describe(fi.Mode()))
	}
	if name := pseudoFS(dir); name != "" {
		return "", "", &PseudoFSError{Path: path, FS: name}
	}
	return dir, base, nil
}

// CheckOutput reports, changing nothing, whether WriteOutput(path) can
// succeed: the checks above, and a temporary file created in path's
// directory and removed at once. Commands call it before the work whose
// result they will write, so that a bad path costs nothing.
func CheckOutput(path string) error {
	dir, _, err := checkOutput(path)
	if err != nil {
		return err
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

// WriteOutput writes the file at path with mode perm, its content produced
// by write, with the guarantees listed above. o may be nil.
func WriteOutput(path string, perm fs.FileMode, write func(io.Writer) error, o *ReplaceOptions) error {
	dir, base, err := checkOutput(path)
	if err != nil {
		return err
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
		return fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && !o.Volatile {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w; %s", path, unwrapPath(err), keptWhat(path))
	}
	if o.BeforeRename != nil {
		o.BeforeRename(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w; %s", path, unwrapPath(err), keptWhat(path))
	}
	if o.Volatile {
		return nil
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s was replaced, but syncing its directory failed: %w", path, err)
	}
	return nil
}

// keptWhat says what a failed WriteOutput left at path.
func keptWhat(path string) string {
	if _, err := os.Lstat(path); err == nil {
		return "the file there was left as it was"
	}
	return "nothing was written there"
}

// Replace writes data to path with WriteOutput.
func Replace(path string, perm fs.FileMode, data []byte, o *ReplaceOptions) error {
	return WriteOutput(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, o)
}

// ErrNotKernelFile is wrapped by WriteKernelFile's refusal of a path that is
// not on a kernel pseudo file system.
var ErrNotKernelFile = errors.New("not a kernel file")

// WriteKernelFile writes data to a file the kernel provides (a setting
// under /proc/sys or /sys, a control file of debugfs or tracefs), in one
// write, without creating or truncating it. It refuses a path that is not
// on a kernel pseudo file system, so that a mistyped or planted path can
// never turn a setting into an ordinary file, and a path that is a link.
// A short write is an error.
func WriteKernelFile(path string, data []byte) error {
	if name := pseudoFS(path); name == "" {
		return fmt.Errorf("%s: %w (ndst writes kernel settings only under procfs, sysfs, debugfs or tracefs)", path, ErrNotKernelFile)
	}
	f, err := OpenFile(path, os.O_WRONLY, 0, NoLinks)
	if err != nil {
		return err
	}
	n, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != len(data) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(data))
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", strings.TrimSpace(string(data)), path, err)
	}
	return nil
}
