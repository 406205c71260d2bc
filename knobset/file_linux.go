package knobset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// sysRoot prefixes every knob path; tests point it at a folder of plain
// files, which then need not be on sysfs or procfs.
var sysRoot = ""

// file is the file a knob path names.
func file(path string) string { return sysRoot + path }

// kernelFS reports whether the file at p is on sysfs or procfs, where the
// kernel's knobs are: a knob path on another file system (a bind mount over
// /sys, a planted file) is never written.
func kernelFS(p string) error {
	if sysRoot != "" {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	switch st.Type {
	case unix.SYSFS_MAGIC, unix.PROC_SUPER_MAGIC:
		return nil
	}
	return fmt.Errorf("%s is not on sysfs or procfs (file system magic %#x)", p, st.Type)
}

// checkKnob says why the knob at path cannot be written, changing nothing;
// nil when it can be tried.
func checkKnob(path string) error {
	if !Allowed(path) {
		return fmt.Errorf("%q is not a knob ndst changes", path)
	}
	p := file(path)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &NotWritableError{path, "this kernel has no such knob (no file)"}
	case err != nil:
		return &NotWritableError{path, err.Error()}
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is %s, not a knob file", path, safefile.Describe(fi.Mode()))
	}
	if err := kernelFS(p); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return &NotWritableError{path, fmt.Sprintf("read-only at runtime (mode %04o): the kernel takes it at boot only", fi.Mode().Perm())}
	}
	if os.Geteuid() != 0 && sysRoot == "" {
		return &NotWritableError{path, fmt.Sprintf("changing it needs root (running as uid %d)", os.Geteuid())}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return &NotWritableError{path, "its file system is mounted read-only (a container's /sys or /proc?)"}
	}
	return nil
}

// readKnob is the knob's current value.
func readKnob(path string) (string, error) {
	b, err := safefile.ReadFile(context.Background(), file(path), 4096, safefile.NoLinks)
	if err != nil {
		return "", err
	}
	return trim(b), nil
}

// writeKnob writes v to the knob: one write of v and a newline, as echo
// does (safefile.WriteKernelFile: no link followed, nothing created).
func writeKnob(path, v string) error {
	p := file(path)
	if err := kernelFS(p); err != nil {
		return err
	}
	write := safefile.WriteKernelFile
	if sysRoot != "" {
		write = writePlain
	}
	if err := write(p, []byte(v+"\n")); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return &NotWritableError{path, fmt.Sprintf("the kernel refused the value %q (EINVAL)", v)}
		}
		return notWritable(path, err)
	}
	return nil
}

// writePlain writes a test's stand-in for a knob, which is an ordinary file.
func writePlain(p string, data []byte) error { return os.WriteFile(p, data, 0) }

// notWritable turns a refused open or write into a reason.
func notWritable(path string, err error) error {
	switch {
	case errors.Is(err, unix.EROFS):
		return &NotWritableError{path, "its file system is mounted read-only (a container's /sys or /proc?)"}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &NotWritableError{path, "permission denied (needs root with CAP_SYS_ADMIN in the initial user namespace)"}
	}
	return fmt.Errorf("write %s: %w", path, err)
}

// bootID identifies this boot of the kernel.
func bootID() string {
	b, err := safefile.ReadKernelFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return trim(b)
}

// ensureDir makes Dir (mode 0755) or checks the one there: a directory, not
// a link, owned by root or this user and writable by no one else, so that
// no one else can plant a record there.
func ensureDir() error {
	if err := os.Mkdir(Dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return checkOwned(Dir, true)
}

// checkOwned refuses a path another user could have written: a link, a
// file of the wrong type, an owner other than root or this user, or write
// permission for group or others.
func checkOwned(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if dir && !fi.IsDir() || !dir && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is %s", p, safefile.Describe(fi.Mode()))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner", p)
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to root or this user", p, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (mode %04o)", p, fi.Mode().Perm())
	}
	return nil
}

// lockFile opens and flocks Dir/knobs.lock without waiting; held false when
// another process holds it.
func lockFile() (f *os.File, held bool, err error) {
	p := filepath.Join(Dir, lockName)
	f, err = safefile.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600, safefile.NoLinks)
	if err != nil {
		return nil, false, err
	}
	if err := checkOwned(p, false); err != nil {
		f.Close()
		return nil, false, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, true, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, false, nil
}
