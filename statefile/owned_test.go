//go:build unix

package statefile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOnlyOwnFiles runs every operation that takes a state path (Lock, Load,
// Save, Reset) over every kind of path: each either works on what is ndst's
// or refuses with an error that says what the path is, changes nothing,
// creates no lock file beside it, and returns at once.
func TestOnlyOwnFiles(t *testing.T) {
	valid := validSample()
	corrupt := append([]byte(nil), valid...)
	corrupt[len(corrupt)-1] ^= 1
	type setup func(t *testing.T, path string)
	file := func(b []byte) setup {
		return func(t *testing.T, p string) {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name   string
		make   setup
		suffix string // appended to the path as given to the calls
		refuse string // substring of every refusal; "" when the path is ndst's
	}{
		{"missing", func(*testing.T, string) {}, "", ""},
		{"valid", file(valid), "", ""},
		{"corrupt", file(corrupt), "", ""},
		{"empty", file(nil), "", ""},
		{"text file", file([]byte("my notes\n")), "", "is not an ndst state file"},
		{"directory", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, "", "is a directory, not a state file"},
		{"directory spelled DIR/", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, "/", "names a directory"},
		{"fifo", func(t *testing.T, p string) { syscall.Mkfifo(p, 0o600) }, "", "is a FIFO (named pipe), not a state file"},
		{"socket", func(t *testing.T, p string) {
			fd, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			syscall.Bind(fd, &syscall.SockaddrUnix{Name: p})
			t.Cleanup(func() { syscall.Close(fd) })
		}, "", "is a socket"},
		{"symlink to valid state", func(t *testing.T, p string) {
			os.WriteFile(p+"-target", valid, 0o600)
			os.Symlink(p+"-target", p)
		}, "", "is a symbolic link (to "},
		{"dangling symlink", func(t *testing.T, p string) { os.Symlink(p+"-nowhere", p) }, "", "is a symbolic link"},
		{"lock file is a symlink", func(t *testing.T, p string) {
			os.WriteFile(p, valid, 0o600)
			os.WriteFile(p+"-other", nil, 0o600)
			os.Symlink(p+"-other", p+".lock")
		}, "", "lock file"},
		{"lock file is a FIFO", func(t *testing.T, p string) {
			os.WriteFile(p, valid, 0o600)
			syscall.Mkfifo(p+".lock", 0o600)
		}, "", "lock file"},
		{"lock file holds other data", func(t *testing.T, p string) {
			os.WriteFile(p, valid, 0o600)
			os.WriteFile(p+".lock", []byte("keep this\n"), 0o600)
		}, "", "lock file"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name   string
			make   setup
			suffix string
			refuse string
		}{"character device", func(t *testing.T, p string) {
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3); err != nil { // like /dev/null
				t.Skipf("mknod: %v", err)
			}
		}, "", "is a character device, not a state file"})
	}
	ops := []struct {
		name string
		run  func(path string) error
	}{
		{"Lock", func(p string) error {
			l, err := Lock(p, 0)
			if err == nil {
				l.Unlock()
			}
			return err
		}},
		{"Load", func(p string) error { _, err := Load(p); return err }},
		{"Save", func(p string) error { return Save(p, manyDevices(2)) }},
		{"Reset", func(p string) error { _, err := Reset(context.Background(), p, 0); return err }},
	}
	for _, c := range cases {
		for _, op := range ops {
			t.Run(c.name+"/"+op.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "state")
				c.make(t, path)
				before := snapshot(t, dir)
				var err error
				done := make(chan struct{})
				go func() { defer close(done); err = op.run(path + c.suffix) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s(%s) did not return within 10s", op.name, c.name)
				}
				refuse := c.refuse
				if strings.HasPrefix(c.name, "lock file") && (op.name == "Load" || op.name == "Save") {
					refuse = "" // they do not touch the lock file
				}
				if refuse == "" {
					// ndst's own (or no) file: only Load of a corrupt
					// one fails, as corrupt.
					if err != nil && !(op.name == "Load" && errors.Is(err, ErrCorrupt)) {
						t.Fatalf("%s(%s) = %v, want success", op.name, c.name, err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), refuse) || !errors.Is(err, ErrForeign) && c.suffix == "" {
					t.Fatalf("%s(%s) = %v, want an error wrapping ErrForeign containing %q", op.name, c.name, err, refuse)
				}
				if strings.Contains(err.Error(), "corrupt") || strings.Contains(err.Error(), "reset") {
					t.Errorf("%s(%s) = %q: a path that is not ndst's is neither corrupt nor to be reset", op.name, c.name, err)
				}
				if after := snapshot(t, dir); after != before {
					t.Errorf("%s(%s) changed the directory:\nbefore %s\nafter  %s", op.name, c.name, before, after)
				}
			})
		}
	}
}

// snapshot describes every entry of dir (and of a subdirectory "state"):
// name, type and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		b.WriteString(strings.TrimPrefix(p, dir) + ":" + fi.Mode().Type().String())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.WriteString(":" + string(c))
		}
		b.WriteString(" ")
		return nil
	})
	return b.String()
}

// TestResetKeepsCorruptCopy: Reset removes a valid file, moves a corrupt or
// other-version one aside without overwriting an earlier copy, and creates
// nothing for a missing one.
func TestResetKeepsCorruptCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	ctx := context.Background()

	rep, err := Reset(ctx, path, 0)
	if err != nil || rep.Existed || !strings.Contains(rep.String(), "nothing to do") {
		t.Fatalf("Reset(missing) = %+v, %v; want nothing to do", rep, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Reset(missing) created %v, want nothing", ents)
	}

	if err := Save(path, manyDevices(3)); err != nil {
		t.Fatal(err)
	}
	if rep, err := Reset(ctx, path, 0); err != nil || rep.Devices != 3 || rep.Kept != "" || !strings.Contains(rep.String(), "removed "+path+" (3 devices)") {
		t.Fatalf("Reset(valid) = %+v, %v; want removed with 3 devices", rep, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after Reset: %v, want it gone", err)
	}

	corrupt := validSample()
	corrupt[len(corrupt)-1] ^= 1
	for i, want := range []string{path + ".corrupt", path + ".corrupt.2"} {
		os.WriteFile(path, corrupt, 0o600)
		rep, err := Reset(ctx, path, 0)
		if err != nil || rep.Kept != want || !strings.Contains(rep.Problem, "checksum mismatch") {
			t.Fatalf("Reset(corrupt #%d) = %+v, %v; want it kept as %s with the checksum named", i+1, rep, err, want)
		}
		if b, _ := os.ReadFile(want); !bytes.Equal(b, corrupt) {
			t.Errorf("%s does not hold the corrupt file's bytes", want)
		}
		if !strings.Contains(rep.String(), "moved it to "+want) {
			t.Errorf("Reset(corrupt).String() = %q, want it to name %s", rep.String(), want)
		}
	}
	os.WriteFile(path, sealed(7, body(0, 0)), 0o600)
	if rep, err := Reset(ctx, path, 0); err != nil || rep.Kept != path+".v7" {
		t.Fatalf("Reset(version 7) = %+v, %v; want it kept as %s.v7", rep, err, path)
	}
}

// TestLockWaitsThenReset: Reset takes the lock, so it waits for a command
// holding it and gives up with ErrLocked.
func TestResetWaitsForLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := Save(path, manyDevices(1)); err != nil {
		t.Fatal(err)
	}
	startHolder(t, path)
	if _, err := Reset(context.Background(), path, 50*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("Reset while locked = %v, want ErrLocked", err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("state after a refused Reset: %v", err)
	}
}
