//go:build linux

package main

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestOutOfMemoryIsNotAUsageError runs the binary under an address-space
// limit too small for the devices it is asked for: the Go runtime dies (out
// of memory, or no memory for a thread), and the exit status must not be 2,
// which means a bad command line. (Under some limits the runtime dies before
// main; that run says nothing about ndst and is not counted.)
func TestOutOfMemoryIsNotAUsageError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	tried := 0
	for _, limitKB := range []string{"1000000", "2000000", "3000000"} {
		// Every size of ndst's own is bounded by a memory estimate, so
		// the run that dies of memory is one whose bound the user turned
		// off: churn with --max-memory 0, keeping ten million devices.
		cmd := exec.Command("bash", "-c", "ulimit -v "+limitKB+" && exec \"$0\" churn -t 2 -n 10000000 -l 30 --max-memory 0", bin)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("ulimit -v %s; ndst churn -n 10000000 --max-memory 0 = %v, want it to die of memory\n%.300s", limitKB, err, out)
		}
		if !strings.Contains(string(out), "main.main(") {
			// No main.main frame: the runtime died before main (in its
			// own start or a package's init), before ndst could set
			// its traceback level; or ndst refused the add itself
			// (its memory guard sees RLIMIT_AS).
			continue
		}
		tried++
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Exited() && ws.ExitStatus() == exitUsage {
			t.Errorf("ulimit -v %s; ndst churn died of memory with exit status 2, the usage code:\n%.300s", limitKB, out)
		}
		if ws.Signaled() && ws.Signal() != syscall.SIGABRT {
			t.Errorf("ulimit -v %s: killed by %v, want SIGABRT from the runtime", limitKB, ws.Signal())
		}
		break
	}
	if tried == 0 {
		t.Skip("under every limit tried the Go runtime failed before main; nothing to check")
	}
}
