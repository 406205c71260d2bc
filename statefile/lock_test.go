package statefile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLockRaceIncrements races two real processes doing read-modify-write
// cycles under the lock: every increment must survive.
func TestLockRaceIncrements(t *testing.T) {
	const perProc = 150
	path := filepath.Join(t.TempDir(), "state")
	tags := []string{"a", "b"}
	var wg sync.WaitGroup
	errs := make([]error, len(tags))
	for i, tag := range tags {
		cmd := helper(t, "incr", path, countEnv+"="+strconv.Itoa(perProc), waitEnv+"=30s", tagEnv+"="+tag)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("incr helper %s: %v", tags[i], err)
		}
	}
	st, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s) error = %v, want nil", path, err)
	}
	if got, want := len(st.Devices), len(tags)*perProc; got != want || st.NextIfindex != int32(want) {
		t.Fatalf("after racing increments: %d devices, NextIfindex %d; want %d and %d (lost updates)",
			got, st.NextIfindex, want, want)
	}
	seen := map[string]bool{}
	for i, d := range st.Devices {
		if d.Ifindex != int32(i+1) {
			t.Errorf("Devices[%d].Ifindex = %d, want %d", i, d.Ifindex, i+1)
		}
		seen[d.Name] = true
	}
	for _, tag := range tags {
		for i := range perProc {
			if name := fmt.Sprintf("%s%d", tag, i); !seen[name] {
				t.Errorf("device %s missing after racing increments", name)
			}
		}
	}
}

// TestLockWaitsThenSucceeds: a second process waits while the first holds
// the lock and gets it once the first lets go.
func TestLockWaitsThenSucceeds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	_, release := startHolder(t, path)
	try := helper(t, "try", path, waitEnv+"=20s")
	stdout, err := try.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := try.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 2)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			s, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSpace(s)
		}
	}()
	// The helper says "start" just before it asks for the lock; holding the
	// lock for hold after that makes it wait at least hold.
	if s := <-lines; s != "start" {
		t.Fatalf("try helper said %q first, want \"start\"", s)
	}
	const hold = 300 * time.Millisecond
	time.Sleep(hold)
	release.Close()
	got := <-lines
	if err := try.Wait(); err != nil {
		t.Fatalf("try helper (wait 20s) = %q, %v; want success", got, err)
	}
	var ms int
	if _, err := fmt.Sscanf(got, "acquired after %d ms", &ms); err != nil || ms < int(hold/time.Millisecond) {
		t.Errorf("try helper said %q; want \"acquired after N ms\" with N >= %d", got, hold/time.Millisecond)
	}
}

// TestLockTimesOutNamingHolder: with a short wait, a second process (and
// this one) fail with a message naming the holder's PID.
func TestLockTimesOutNamingHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	holder, _ := startHolder(t, path)
	pid := holder.Process.Pid
	wantPID := fmt.Sprintf("pid %d", pid)

	b, err := helper(t, "try", path, waitEnv+"=200ms").Output()
	if code := exitCode(err); code != lockedExit || !strings.Contains(string(b), wantPID) || !strings.Contains(string(b), path) {
		t.Errorf("try helper (wait 200ms) = %q, exit %d; want exit %d and a message naming %s and %s",
			b, code, lockedExit, path, wantPID)
	}

	start := time.Now()
	l, err := Lock(path, 150*time.Millisecond)
	waited := time.Since(start)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.PID != pid {
		t.Fatalf("Lock(%s, 150ms) = %v, %v; want *LockedError wrapping ErrLocked with PID %d", path, l, err, pid)
	}
	if waited < 150*time.Millisecond || waited > 5*time.Second {
		t.Errorf("Lock(%s, 150ms) returned after %v, want about 150ms", path, waited)
	}
	for _, want := range []string{"state file " + path + " is locked by another ndst, " + wantPID, "--wait-lock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Lock(%s, 150ms) error = %q, want it to contain %q", path, err, want)
		}
	}

	// Wait 0 tries exactly once.
	if _, err := Lock(path, 0); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock(%s, 0) error = %v, want ErrLocked", path, err)
	}
}

// TestLockStaleFromDeadProcess: a holder killed with SIGKILL leaves its lock
// file and PID behind; neither blocks the next locker.
func TestLockStaleFromDeadProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	holder, _ := startHolder(t, path)
	pid := holder.Process.Pid
	holder.Process.Kill()
	holder.Wait()
	if b, err := os.ReadFile(path + ".lock"); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Fatalf("lock file after the holder died = %q, %v; want the dead holder's pid %d", b, err, pid)
	}
	l, err := Lock(path, 0)
	if err != nil {
		t.Fatalf("Lock(%s, 0) after the holder died = %v, want success", path, err)
	}
	defer l.Unlock()
	if b, _ := os.ReadFile(path + ".lock"); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file while held = %q, want this process's pid %d", b, os.Getpid())
	}
}

// TestLockCreatesDirectory: locking a state path in a missing directory
// creates it with mode 0700, and the lock file with 0600.
func TestLockCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "state")
	l, err := Lock(path, time.Second)
	if err != nil {
		t.Fatalf("Lock(%s) error = %v, want nil", path, err)
	}
	defer l.Unlock()
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, os.ModeDir | 0o700}, {filepath.Dir(dir), os.ModeDir | 0o700}, {path + ".lock", 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil || fi.Mode() != c.want {
			t.Errorf("Stat(%s) = %v, %v; want mode %v", c.path, fi.Mode(), err, c.want)
		}
	}
	if l.Path() != path {
		t.Errorf("Lock(%s).Path() = %s, want %s", path, l.Path(), path)
	}
}

// TestLockInProcess: the lock is exclusive between two lockers of one
// process too, Unlock releases it, and a second Unlock is harmless.
func TestLockInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	l1, err := Lock(path, 0)
	if err != nil {
		t.Fatalf("Lock(%s, 0) error = %v, want nil", path, err)
	}
	if _, err := Lock(path, 20*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock(%s) while held = %v, want ErrLocked", path, err)
	}
	if err := l1.Unlock(); err != nil {
		t.Fatalf("Unlock() = %v, want nil", err)
	}
	if err := l1.Unlock(); err != nil {
		t.Errorf("second Unlock() = %v, want nil", err)
	}
	if b, _ := os.ReadFile(path + ".lock"); len(b) != 0 {
		t.Errorf("lock file after Unlock = %q, want empty", b)
	}
	l2, err := Lock(path, 0)
	if err != nil {
		t.Fatalf("Lock(%s, 0) after Unlock = %v, want nil", path, err)
	}
	l2.Unlock()
}

// TestLockContextCancel: cancelling the context ends the wait early.
func TestLockContextCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	l, err := Lock(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = LockContext(ctx, path, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("LockContext(50ms ctx, %s, 1m) = %v after %v; want DeadlineExceeded soon", path, err, time.Since(start))
	}
}

// TestResetRemovesTheLock: reset leaves neither the state file nor its lock
// file, and a process that waited for the lock while reset held it gets a
// lock on what the path names afterwards, not on the removed file.
func TestResetRemovesTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := Save(path, &State{}); err != nil {
		t.Fatal(err)
	}
	held, err := Lock(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *FileLock, 1)
	go func() {
		l, err := Lock(path, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(50 * time.Millisecond) // the waiter is waiting
	if err := held.Remove(); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil || !same(l.f, path+".lock") {
		t.Fatalf("the waiter holds a lock on a file the path does not name")
	}
	l.Unlock()
	if _, err := Reset(context.Background(), path, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".lock"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left after reset (%v)", p, err)
		}
	}
}
