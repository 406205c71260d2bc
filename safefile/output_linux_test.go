package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOutputNeverOnAPseudoFileSystem: an output named on procfs or sysfs is
// refused before anything is opened there, by both the check and the
// write, and the kernel file keeps its value. /proc/thread-self/comm is the
// target because writing it would only rename this thread.
func TestOutputNeverOnAPseudoFileSystem(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	comm := "/proc/thread-self/comm"
	before, err := os.ReadFile(comm)
	if err != nil {
		t.Skipf("no %s: %v", comm, err)
	}
	for _, p := range []string{comm, "/proc/sys/kernel/hostname", "/sys/kernel/new-file", "/proc/self/fd/new"} {
		for name, f := range map[string]func(string) error{
			"CheckOutput": CheckOutput,
			"WriteOutput": func(p string) error {
				return WriteOutput(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "ndst-was-here\n"); return err }, nil)
			},
			"Replace": func(p string) error { return Replace(p, 0o644, []byte("ndst-was-here\n"), nil) },
		} {
			err := f(p)
			if !errors.Is(err, ErrPseudoFS) {
				t.Errorf("%s(%s) = %v, want a refusal wrapping ErrPseudoFS", name, p, err)
			}
		}
	}
	if after, _ := os.ReadFile(comm); string(after) != string(before) {
		t.Errorf("%s changed from %q to %q", comm, before, after)
	}
	if err := CheckOutput("/proc/sys/kernel/hostname"); err == nil || !strings.Contains(err.Error(), "procfs, a kernel pseudo file system") {
		t.Errorf("CheckOutput(/proc/sys/kernel/hostname) = %v, want it to name procfs", err)
	}
}

// TestOutputNeverThroughALink: a link as the output is refused, naming its
// target; its target keeps its content, the link stays a link, and no
// temporary file is left.
func TestOutputNeverThroughALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "hostname")
	link := filepath.Join(dir, "trace.json")
	os.WriteFile(target, []byte("keep me\n"), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"CheckOutput": func() error { return CheckOutput(link) },
		"WriteOutput": func() error {
			return WriteOutput(link, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "trace"); return err }, nil)
		},
	} {
		err := f()
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "(to "+target+")") || !strings.Contains(err.Error(), "give the file itself") {
			t.Errorf("%s(link) = %v, want a refusal naming the target and what to do", name, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target is now %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is now %v, %v", fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("directory has %d entries after the refusals, want 2", len(ents))
	}
}

// TestOutputFailureKeepsTheOldFile: a write that fails half way (the
// producer's error, as a full disk gives) leaves the old file whole, no
// temporary file, and an error that says the old file was kept; a hard link
// to the old file elsewhere never sees the new content.
func TestOutputFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "export.csv")
	os.WriteFile(p, []byte("old,content\n"), 0o644)
	boom := errors.New("no space left on device")
	err := WriteOutput(p, 0o644, func(w io.Writer) error {
		w.Write([]byte(strings.Repeat("new,", 100000)))
		return boom
	}, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "left as it was") {
		t.Errorf("WriteOutput with a failing producer = %v, want the error and that the old file was kept", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old,content\n" {
		t.Errorf("after a failed write the file holds %d bytes, want the old content", len(b))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory has %d entries after a failed write, want 1 (no temporary file)", len(ents))
	}
	other := filepath.Join(dir, "elsewhere")
	if err := os.Link(p, other); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, 0o644, []byte("new\n"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(other); string(b) != "old,content\n" {
		t.Errorf("a hard link to the old file now holds %q; the rename must replace the name only", b)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("the output holds %q, want the new content", b)
	}
}

// TestWriteKernelFile: a kernel setting is written in place, and an
// ordinary file is refused as a kernel setting (so a planted or mistyped
// path cannot take a write meant for the kernel).
func TestWriteKernelFile(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	comm := "/proc/thread-self/comm"
	before, err := os.ReadFile(comm)
	if err != nil {
		t.Skipf("no %s: %v", comm, err)
	}
	defer os.WriteFile(comm, before, 0)
	if err := WriteKernelFile(comm, []byte("ndst-test")); err != nil {
		t.Fatalf("WriteKernelFile(%s) = %v", comm, err)
	}
	if b, _ := os.ReadFile(comm); string(b) != "ndst-test\n" {
		t.Errorf("%s = %q after the write", comm, b)
	}
	plain := filepath.Join(t.TempDir(), "rcu_expedited")
	os.WriteFile(plain, []byte("0\n"), 0o644)
	if err := WriteKernelFile(plain, []byte("1\n")); !errors.Is(err, ErrNotKernelFile) {
		t.Errorf("WriteKernelFile(an ordinary file) = %v, want ErrNotKernelFile", err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "0\n" {
		t.Errorf("the ordinary file now holds %q", b)
	}
}
