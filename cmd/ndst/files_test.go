//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ndst-project/ndst/statefile"
)

// fileTimeout bounds every command below: none may wait on a file, so each
// returns in well under a second; a hang shows as this timeout.
const fileTimeout = 30 * time.Second

// runBin runs the ndst binary with args in a private XDG_STATE_HOME and
// returns its output and exit code, failing the test if it had to be killed.
func runBin(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ndst %s hung: killed after %v (stderr %q)", strings.Join(args, " "), fileTimeout, e.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("ndst %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// TestNoFileHangsOrIsOverwritten runs every command and flag that takes a
// file against every kind of path that is not a regular file: a FIFO (which
// used to hang for ever, ignoring SIGINT and SIGTERM), a directory, a
// character device and a symbolic link to a FIFO. Each must answer at once
// with exit 1 or 2 and a message saying what the path is, and leave the path
// as it was, with no lock file beside it.
func TestNoFileHangsOrIsOverwritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	flags := []struct {
		name string
		args func(p string) []string
	}{
		{"--state add", func(p string) []string { return []string{"--state", p, "add", "1"} }},
		{"--state del", func(p string) []string { return []string{"--state", p, "del", "1", "1"} }},
		{"--state list", func(p string) []string { return []string{"--state", p, "list"} }},
		{"--state reset", func(p string) []string { return []string{"--state", p, "reset"} }},
		{"--trace add", func(p string) []string { return []string{"--trace", p, "--state", p + "-state", "add", "1"} }},
		{"--costs add", func(p string) []string { return []string{"--costs", p, "--state", p + "-state", "add", "1"} }},
		{"--costs costs", func(p string) []string { return []string{"--costs", p, "costs"} }},
		{"--costs bench", func(p string) []string { return []string{"--costs", p, "bench", "--count", "1", "--runs", "1"} }},
		{"bench --export-csv", func(p string) []string { return []string{"bench", "--count", "1", "--runs", "1", "--export-csv", p} }},
		{"bench --export-json", func(p string) []string { return []string{"bench", "--count", "1", "--runs", "1", "--export-json", p} }},
		{"bench --export-markdown", func(p string) []string {
			return []string{"bench", "--count", "1", "--runs", "1", "--export-markdown", p}
		}},
		{"bench --plot", func(p string) []string { return []string{"bench", "--count", "1", "--runs", "1", "--plot", p} }},
		{"calibrate -o", func(p string) []string { return []string{"calibrate", "-o", p} }},
		{"calibrate --refit", func(p string) []string { return []string{"calibrate", "--refit", p} }},
		{"predict --save-costs", func(p string) []string { return []string{"predict", "--save-costs", p} }},
		{"predict --from-guest", func(p string) []string { return []string{"predict", "--from-guest", p} }},
	}
	kinds := []struct {
		name, says string
		make       func(t *testing.T, p string)
		mode       fs.FileMode
	}{
		{"fifo", "is a FIFO (named pipe)", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, fs.ModeNamedPipe},
		{"directory", "is a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, fs.ModeDir},
		{"character device", "is a character device", func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("mknod needs root")
			}
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil { // like /dev/null
				t.Skipf("mknod: %v", err)
			}
		}, fs.ModeDevice | fs.ModeCharDevice},
		{"symlink to a fifo", "", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p+"-fifo", 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p+"-fifo", p); err != nil {
				t.Fatal(err)
			}
		}, fs.ModeSymlink},
	}
	for _, f := range flags {
		for _, k := range kinds {
			t.Run(f.name+"/"+k.name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "target")
				if f.name == "bench --plot" {
					p += ".png"
				}
				k.make(t, p)
				out, errOut, code := runBin(t, bin, f.args(p)...)
				if code != 1 && code != 2 {
					t.Fatalf("exit %d, want 1 or 2; stdout %q stderr %q", code, out, errOut)
				}
				says := k.says
				if says == "" { // a link: refused as a link (state, replaced files) or its target as a FIFO
					says = "is a FIFO (named pipe)"
					if strings.Contains(errOut, "is a symbolic link (to "+p+"-fifo)") {
						says = "is a symbolic link"
					}
				}
				if !strings.Contains(errOut, p) || !strings.Contains(errOut, says) {
					t.Errorf("stderr %q; want it to name %s and say it %s", errOut, p, says)
				}
				if strings.Contains(errOut, "corrupt") {
					t.Errorf("stderr %q calls a path that is not a state file corrupt", errOut)
				}
				if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != k.mode {
					t.Errorf("%s is now %v, %v; want it left as it was (%v)", p, fi.Mode(), err, k.mode)
				}
				if _, err := os.Lstat(p + ".lock"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a lock file %s.lock was created beside a path that is not ndst's (%v)", p, err)
				}
			})
		}
	}
}

// TestResetDeletesOnlyNdstState: reset refuses a user's file and a device
// node, keeps a copy of a corrupt state, and removes a valid one.
func TestResetDeletesOnlyNdstState(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("my notes\n"), 0o644)
	_, e, c := ndstRun(t, notes, "reset")
	if c != 1 || !strings.Contains(e, "is not an ndst state file") || strings.Contains(e, "reset'") {
		t.Errorf("reset of a text file = exit %d, %q; want exit 1 refusing it, without suggesting a reset", c, e)
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes\n" {
		t.Errorf("reset changed the text file: %q", b)
	}
	if _, err := os.Lstat(notes + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reset of a text file created %s.lock", notes)
	}
	if _, e, c := ndstRun(t, "/dev/null", "reset"); c != 1 || !strings.Contains(e, "is a character device") {
		t.Errorf("reset of /dev/null = exit %d, %q; want exit 1: a character device", c, e)
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v %v", fi.Mode(), err)
	}
	if _, err := os.Lstat("/dev/null.lock"); err == nil {
		t.Errorf("/dev/null.lock exists")
	}

	state := filepath.Join(dir, "state")
	ndstRun(t, state, "add", "3")
	link := filepath.Join(dir, "link")
	os.Symlink(state, link)
	if _, e, c := ndstRun(t, link, "list"); c != 1 || !strings.Contains(e, "is a symbolic link (to "+state+")") {
		t.Errorf("list through a symlinked state = exit %d, %q; want exit 1 naming the target", c, e)
	}
	if out, e, c := ndstRun(t, state, "reset"); c != 0 || !strings.Contains(out, "removed "+state+" (3 devices)") {
		t.Errorf("reset of a valid state = exit %d, %q %q", c, out, e)
	}
}

// TestLockWaitIsInterruptible: waiting for another command's lock ends at
// once on SIGTERM or SIGINT, with nothing changed.
func TestLockWaitIsInterruptible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	state := filepath.Join(t.TempDir(), "state")
	l, err := statefile.Lock(state, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "--state", state, "--wait-lock", "10m", "add", "1")
		var e bytes.Buffer
		cmd.Stderr = &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(e.String(), "stopped waiting for the lock") {
				t.Errorf("after %v: %v, stderr %q; want a failure saying the wait stopped", sig, err, e.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("ndst waiting for the lock ignored %v", sig)
		}
	}
	if _, err := os.Lstat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("interrupted adds created the state file: %v", err)
	}
}

// roState makes a world-readable directory with a 3-device state and no
// lock file, and a copy of the ndst binary that every user may run.
func roState(t *testing.T) (dir, state, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ndst-files-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	state = filepath.Join(dir, "state")
	if _, e, c := ndstRun(t, state, "add", "3"); c != 0 {
		t.Fatalf("add 3 = %d: %s", c, e)
	}
	os.Remove(state + ".lock")
	os.Chmod(state, 0o644)
	b, err := os.ReadFile(buildNdst(t))
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "ndst")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, state, bin
}

// checkReadOnlyRun checks list and add where the state's directory takes no
// new files: list shows the devices, add fails with exit 1 saying why, and
// no lock file appears.
func checkReadOnlyRun(t *testing.T, run func(args ...string) (string, int), state, why string) {
	t.Helper()
	out, code := run("--state", state, "list")
	if code != 0 || !strings.Contains(out, "dummy2") || !strings.Contains(out, "3 devices") {
		t.Errorf("list = exit %d, %q; want the 3 devices", code, out)
	}
	out, code = run("--state", state, "add", "1")
	if code != 1 || !strings.Contains(out, "its directory takes no new files") || !strings.Contains(out, why) {
		t.Errorf("add = exit %d, %q; want exit 1 saying the directory takes no new files (%s)", code, out, why)
	}
	if _, err := os.Lstat(state + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file appeared: %v", err)
	}
}

// TestListOnReadOnlyFileSystem: list works on a read-only mount (a read
// takes no lock file) and add says why it cannot write. Needs root for a
// private mount namespace.
func TestListOnReadOnlyFileSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount in a private mount namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1)")
	}
	dir, state, bin := roState(t)
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"`
	checkReadOnlyRun(t, func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), fileTimeout)
		defer cancel()
		full := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", dir, bin}, args...)
		out, err := exec.CommandContext(ctx, unshare, full...).CombinedOutput()
		return string(out), exitOf(err)
	}, state, "read-only file system")
}

// TestListAsUnprivilegedUser: nobody may list a state it can read in a
// directory it cannot write (no lock file needed), and add says why not.
func TestListAsUnprivilegedUser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run ndst as nobody")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv(1)")
	}
	_, state, bin := roState(t)
	checkReadOnlyRun(t, func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), fileTimeout)
		defer cancel()
		full := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)
		cmd := exec.CommandContext(ctx, setpriv, full...)
		cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return string(out), exitOf(err)
	}, state, "permission denied")
}
