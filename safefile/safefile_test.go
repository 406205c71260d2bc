//go:build unix

package safefile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kinds makes one path of every file type in a fresh directory.
func kinds(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if err := os.WriteFile(p("regular"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p("regular"), p("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p("fifo"), p("link-to-fifo")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", p("socket"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return map[string]string{
		"regular": p("regular"), "fifo": p("fifo"), "dir": p("dir"), "link": p("link"),
		"link-to-fifo": p("link-to-fifo"), "socket": p("socket"), "chardev": "/dev/null",
		"missing": p("missing"),
	}
}

// within fails the test if f does not return within d: nothing here may
// block on a file.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestEveryKindEveryCall: every call on every file type either works on a
// regular file or refuses with an error that says what the path is, and
// none blocks.
func TestEveryKindEveryCall(t *testing.T) {
	k := kinds(t)
	calls := map[string]func(path string, links Links) error{
		"Open": func(p string, l Links) error {
			f, err := Open(p, l)
			if err == nil {
				f.Close()
			}
			return err
		},
		"ReadFile": func(p string, l Links) error {
			_, err := ReadFile(context.Background(), p, 1<<20, l)
			return err
		},
		"WriteOutput": func(p string, _ Links) error {
			return WriteOutput(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "hello\n"); return err }, nil)
		},
		"CheckOutput": func(p string, _ Links) error { return CheckOutput(p) },
		"Replace": func(p string, _ Links) error {
			return Replace(p, 0o644, []byte("hello\n"), nil)
		},
	}
	// The writers never follow a link, whatever the policy of reads.
	writes := map[string]bool{"WriteOutput": true, "CheckOutput": true, "Replace": true}
	want := map[string]string{ // substring of the refusal; "" = accepted
		"regular": "", "fifo": "is a FIFO (named pipe), not a regular file", "dir": "is a directory",
		"socket": "is a socket", "chardev": "is a character device",
	}
	for call, f := range calls {
		for kind, path := range k {
			for _, links := range []Links{FollowLinks, NoLinks} {
				w, ok := want[kind]
				switch {
				case kind == "link" && (links == NoLinks || writes[call]):
					w, ok = "is a symbolic link (to "+k["regular"]+")", true
				case kind == "link":
					w, ok = "", true
				case kind == "link-to-fifo" && (links == NoLinks || writes[call]):
					w, ok = "is a symbolic link", true
				case kind == "link-to-fifo":
					w, ok = "is a FIFO", true
				case kind == "missing":
					ok = true
					w = ""
					if call == "Open" || call == "ReadFile" {
						w = "no such file"
					}
				}
				if !ok {
					t.Fatalf("no expectation for %s", kind)
				}
				var err error
				within(t, 5*time.Second, call+"("+kind+")", func() { err = f(path, links) })
				if w == "" {
					if err != nil {
						t.Errorf("%s(%s, links=%d) = %v, want success", call, kind, links, err)
					}
				} else if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s(%s, links=%d) = %v, want an error containing %q", call, kind, links, err, w)
				} else if kind != "missing" && !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s(%s, links=%d) = %v, want it to wrap ErrNotRegular", call, kind, links, err)
				}
				// Put the regular file and the missing path back.
				os.WriteFile(k["regular"], []byte("hello\n"), 0o644)
				os.Remove(k["missing"])
			}
		}
	}
	// The refusals changed nothing: the FIFO is still a FIFO, the link a
	// link, /dev/null a device.
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{{k["fifo"], fs.ModeNamedPipe}, {k["link"], fs.ModeSymlink}, {"/dev/null", fs.ModeDevice | fs.ModeCharDevice}} {
		if fi, err := os.Lstat(c.path); err != nil || fi.Mode().Type() != c.mode {
			t.Errorf("after the refusals, %s is %v, %v; want type %v", c.path, fi.Mode(), err, c.mode)
		}
	}
}

// TestReadFileBounded: a file over the limit is refused before reading, and
// a /proc file (size 0 in fstat) is bounded while reading.
func TestReadFileBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(context.Background(), p, 4096, NoLinks); err != nil || len(b) != 4096 {
		t.Errorf("ReadFile(4096 bytes, limit 4096) = %d bytes, %v", len(b), err)
	}
	var tl *TooLargeError
	if _, err := ReadFile(context.Background(), p, 4095, NoLinks); !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Size != 4096 {
		t.Errorf("ReadFile(4096 bytes, limit 4095) = %v, want *TooLargeError of size 4096", err)
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	b, err := ReadFile(context.Background(), "/proc/self/status", 1<<20, FollowLinks)
	if err != nil || !bytes.Contains(b, []byte("Pid:")) {
		t.Errorf("ReadFile(/proc/self/status) = %q, %v", b, err)
	}
	if _, err := ReadFile(context.Background(), "/proc/self/status", 16, FollowLinks); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile(/proc/self/status, limit 16) = %v, want ErrTooLarge", err)
	}
}

// TestReadFileCancelled: a done context stops the read.
func TestReadFileCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFile(ctx, p, 1<<20, NoLinks); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFile(cancelled) = %v, want context.Canceled", err)
	}
}

// TestReplace: the content and mode are replaced atomically, no temporary
// file is left, and the hook runs before the rename.
// TestReplace: the old content stays until the rename, the new one is
// there whole after it, with its mode and no temporary file left, whether
// or not the file is volatile (synced).
func TestReplace(t *testing.T) {
	for _, volatile := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "table.json")
		os.WriteFile(p, []byte("old"), 0o644)
		var sawOld bool
		err := Replace(p, 0o600, []byte("new"), &ReplaceOptions{Volatile: volatile, BeforeRename: func(tmp string) {
			b, _ := os.ReadFile(p)
			sawOld = string(b) == "old"
		}})
		if err != nil || !sawOld {
			t.Fatalf("volatile %v: Replace = %v (old content before rename: %v)", volatile, err, sawOld)
		}
		fi, _ := os.Stat(p)
		if b, _ := os.ReadFile(p); string(b) != "new" || fi.Mode().Perm() != 0o600 {
			t.Errorf("volatile %v: after Replace: %q, mode %v; want \"new\", 0600", volatile, b, fi.Mode())
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("volatile %v: directory after Replace has %d entries, want 1 (no temporary file left)", volatile, len(ents))
		}
		if err := Replace(filepath.Join(dir, "no", "such"), 0o600, nil, &ReplaceOptions{Volatile: volatile}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("volatile %v: Replace in a missing directory = %v, want ErrNotExist", volatile, err)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 29: "1.5 GiB", 1 << 40: "1.0 TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
