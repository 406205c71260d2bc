package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ndst-project/ndst/internal/sandboxtest"
	"github.com/ndst-project/ndst/statefile"
)

// The CLI compiled once per test binary run (buildNdst), removed by TestMain.
var (
	builtOnce sync.Once
	builtDir  string
	builtBin  string
	builtErr  error
)

// buildNdst compiles the CLI once per test binary run and returns its path.
func buildNdst(t *testing.T) string {
	t.Helper()
	builtOnce.Do(func() {
		if builtDir, builtErr = os.MkdirTemp("", "ndst-cli-test-"); builtErr != nil {
			return
		}
		builtBin = filepath.Join(builtDir, "ndst")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			builtErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := sandboxtest.Run(m)
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// TestSignalsLeaveAConsistentState interrupts long emulated commands at
// random points with SIGINT or SIGTERM. The process must stop promptly and
// leave the state file either exactly as before or as after a complete run.
func TestSignalsLeaveAConsistentState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	rng := rand.New(rand.NewPCG(1, 2))
	// Both commands take 6-8 s of wall time uninterrupted, so a run that
	// ignored the signal could not stop within the bound. The bound is 2 s
	// so that a loaded CI machine does not fail it; the requirement is 1 s,
	// and the latencies logged here are typically 10-100 ms.
	const n = 1000000
	seed := filepath.Join(t.TempDir(), "seed")
	if _, e, c := ndstRun(t, seed, "--watchdog", "0", "add", "1000000"); c != 0 {
		t.Fatalf("setup add = %d: %s", c, e)
	}
	before, _ := os.ReadFile(seed)
	for i := range 4 {
		state := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(state, before, 0o600); err != nil {
			t.Fatal(err)
		}
		sig := []os.Signal{syscall.SIGINT, syscall.SIGTERM}[i/2]
		args := []string{"--state", state, "--watchdog", "0", "del", "1", "1000000"}
		if i%2 == 1 {
			args = []string{"--state", state, "--watchdog", "0", "add", "2000000"}
		}
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rng.IntN(600)) * time.Millisecond)
		sent := time.Now()
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		took := time.Since(sent)
		if took > 2*time.Second {
			t.Errorf("run %d: %v took %v to stop", i, sig, took)
		}
		op := args[4]
		t.Logf("run %d: %s %v: exit %v after %v", i, strings.Join(args[4:], " "), sig, err, took.Round(time.Millisecond))

		s, lerr := statefile.Load(state)
		if lerr != nil {
			t.Fatalf("run %d: state after %v is unreadable: %v", i, sig, lerr)
		}
		after, _ := os.ReadFile(state)
		var ee *exec.ExitError
		switch {
		case err == nil: // finished before the signal: a complete run
			if want := map[string]int{"del": 0, "add": n + 2000000}[op]; len(s.Devices) != want {
				t.Errorf("run %d: completed %s left %d devices, want %d", i, op, len(s.Devices), want)
			}
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			if !bytes.Equal(before, after) {
				t.Errorf("run %d: interrupted %s changed the state file (%d devices)", i, op, len(s.Devices))
			}
			if out := stdout.String() + stderr.String(); !strings.Contains(out, "interrupted") {
				t.Errorf("run %d: output does not say it was interrupted: %q", i, out)
			}
		default:
			t.Errorf("run %d: exit %v, stderr %q", i, err, stderr.String())
		}
	}
}

// TestConcurrentProcessesShareTheStateSafely races two real ndst processes on
// one state file: the second waits for the lock and either fails after
// --wait-lock naming the holder's PID, or runs after the first, and the
// final state reflects every command that succeeded.
func TestConcurrentProcessesShareTheStateSafely(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	state := filepath.Join(t.TempDir(), "state")
	if _, e, c := ndstRun(t, state, "--watchdog", "0", "add", "300000"); c != 0 {
		t.Fatalf("setup = %d %s", c, e)
	}
	// A long del holds the lock for about a second.
	long := exec.Command(bin, "--state", state, "--watchdog", "0", "del", "1", "300000")
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)

	out, err := exec.Command(bin, "--state", state, "--wait-lock", "100ms", "add", "5").CombinedOutput()
	var ee *exec.ExitError
	pid := strconv.Itoa(long.Process.Pid)
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "pid "+pid) {
		t.Errorf("second ndst with --wait-lock 100ms = %v %q; want exit 1 naming pid %s", err, out, pid)
	}
	out, err = exec.Command(bin, "--state", state, "--wait-lock", "30s", "--json", "add", "5").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"count":5`) {
		t.Errorf("second ndst with --wait-lock 30s = %v %q; want it to wait and succeed", err, out)
	}
	if err := long.Wait(); err != nil {
		t.Fatalf("the long del failed: %v", err)
	}
	s, err := statefile.Load(state)
	if err != nil || len(s.Devices) != 5 {
		t.Errorf("final state: %v devices, %v; want the 5 added after the del", len(s.Devices), err)
	}
}
