package statefile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// The tests that need real processes re-execute the test binary with
// helperEnv naming a helper; TestMain runs that helper instead of the tests.
const (
	helperEnv = "NDST_STATEFILE_TEST_HELPER"
	pathEnv   = "NDST_STATEFILE_TEST_PATH"
	countEnv  = "NDST_STATEFILE_TEST_COUNT"
	waitEnv   = "NDST_STATEFILE_TEST_WAIT"
	tagEnv    = "NDST_STATEFILE_TEST_TAG"
)

// lockedExit is the exit code of the "try" helper when the lock was busy.
const lockedExit = 3

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	os.Exit(m.Run())
}

func runHelper(name string) int {
	path := os.Getenv(pathEnv)
	wait, _ := time.ParseDuration(os.Getenv(waitEnv))
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch name {
	case "incr":
		// count read-modify-write increments, each adding one device.
		n, _ := strconv.Atoi(os.Getenv(countEnv))
		tag := os.Getenv(tagEnv)
		for i := range n {
			l, err := Lock(path, wait)
			if err != nil {
				return fail(err)
			}
			st, err := Load(path)
			if err != nil {
				return fail(err)
			}
			// Widen the window between read and write, so that a
			// missing lock would lose updates.
			time.Sleep(200 * time.Microsecond)
			st.NextIfindex++
			st.Devices = append(st.Devices, Device{Ifindex: st.NextIfindex, Name: fmt.Sprintf("%s%d", tag, i)})
			if err := Save(path, st); err != nil {
				return fail(err)
			}
			if err := l.Unlock(); err != nil {
				return fail(err)
			}
		}
		return 0
	case "hold":
		// Take the lock, announce it, hold it until stdin closes.
		l, err := Lock(path, wait)
		if err != nil {
			return fail(err)
		}
		fmt.Printf("locked %d\n", os.Getpid())
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // never outlive a broken test
		}
		if err := l.Unlock(); err != nil {
			return fail(err)
		}
		return 0
	case "try":
		start := time.Now()
		fmt.Println("start")
		l, err := Lock(path, wait)
		if errors.Is(err, ErrLocked) {
			fmt.Println(err)
			return lockedExit
		}
		if err != nil {
			return fail(err)
		}
		fmt.Printf("acquired after %d ms\n", time.Since(start).Milliseconds())
		if err := l.Unlock(); err != nil {
			return fail(err)
		}
		return 0
	case "readonly":
		// Lock, load and try to save where the directory takes no new
		// files; print what happened, one line each.
		l, err := Lock(path, wait)
		if err != nil {
			return fail(err)
		}
		defer l.Unlock()
		fmt.Printf("readonly: %s\n", l.ReadOnly())
		st, err := Load(path)
		if err != nil {
			return fail(err)
		}
		fmt.Printf("loaded %d\n", len(st.Devices))
		fmt.Printf("save: %v\n", Save(path, manyDevices(1)))
		return 0
	case "crash-save":
		// Save a new state but die, as if killed, just before the rename.
		beforeRename = func(string) {
			self, _ := os.FindProcess(os.Getpid())
			self.Kill() // SIGKILL on Unix
			time.Sleep(10 * time.Second)
		}
		if err := Save(path, manyDevices(500)); err != nil {
			return fail(err)
		}
		return 0
	}
	return fail(fmt.Errorf("unknown helper %q", name))
}

// helper returns a command that runs the named helper on path.
func helper(t *testing.T, name, path string, env ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, pathEnv+"="+path)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// startHolder starts a "hold" helper, waits until it holds the lock and
// returns it with its stdin (close it to release the lock).
func startHolder(t *testing.T, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := helper(t, "hold", path, waitEnv+"=10s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if want := fmt.Sprintf("locked %d\n", cmd.Process.Pid); s != want {
			t.Fatalf("holder said %q, want %q", s, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("holder did not take the lock within 20 s")
	}
	return cmd, stdin
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
