package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/knobset"
	"github.com/ndst-project/ndst/knobset/knobsettest"
	"github.com/ndst-project/ndst/safefile"
)

// verifyWorkload is the smallest advise workload whose --verify sets a
// knob: a few devices deleted one by one (each run takes a few jiffies).
var verifyWorkload = []string{"advise", "--count", "40", "--one-by-one"}

// setRE is the line advise --verify prints as it sets a knob.
var setRE = regexp.MustCompile(`^ndst: advise --verify: set (\S+) \((\S+)\) (\S+) -> (\S+)$`)

func readKnob(t *testing.T, path string) string {
	t.Helper()
	b, err := safefile.ReadKernelFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// needVerify skips unless this test may change the machine's RCU knobs:
// root, Linux, and the machine's real-kernel lock held for the test.
func needVerify(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds ndst and changes kernel knobs: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skipf("advise --verify changes kernel knobs: needs root (uid %d)", os.Geteuid())
	}
	if err := knobset.Check("/sys/kernel/rcu_normal"); err != nil {
		t.Skipf("this kernel's RCU knobs cannot be changed here: %v", err)
	}
	knobsettest.HoldRealKernelLock(t, 20*time.Minute)
	return buildNdst(t)
}

// startVerify starts advise --verify and returns once it has set its first
// knob, with that knob's file and its values before and after.
func startVerify(t *testing.T, bin string) (cmd *exec.Cmd, path, before, after string, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"--backend", "netlink"}, append(verifyWorkload, "--verify", "--verify-runs", "50")...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// What a killed run left: its throwaway namespace (and the devices
		// or namespaces in it).
		_ = exec.Command(bin, "--backend", "netlink", "--netns", fmt.Sprintf("ndst-advise-%d", cmd.Process.Pid), "reset").Run()
	})
	stderr = &bytes.Buffer{}
	sc := bufio.NewScanner(pipe)
	deadline := time.AfterFunc(5*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if m := setRE.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(stderr, pipe) }()
			return cmd, m[2], m[3], m[4], stderr
		}
	}
	t.Fatalf("advise --verify set no knob; it said:\n%s", stderr)
	return
}

// SIGINT and SIGTERM in the middle of a verification: the knob reads its
// value from before on sysfs once the process has ended, the command says
// it put it back, and nothing is left (no restore record, no namespace).
func TestVerifyRestoredOnSignal(t *testing.T) {
	bin := needVerify(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, path, before, after, stderr := startVerify(t, bin)
			if got := readKnob(t, path); got != after {
				t.Errorf("%s reads %s while verifying, want %s", path, got, after)
			}
			sent := time.Now()
			_ = cmd.Process.Signal(sig)
			err := cmd.Wait()
			took := time.Since(sent)
			if got := readKnob(t, path); got != before {
				t.Errorf("after %v %s reads %s, want %s (restored)", sig, path, got, before)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
				t.Errorf("after %v: exit %v, want status 1", sig, err)
			}
			out := stderr.String()
			if !strings.Contains(out, "("+path+") "+after+" -> "+before) || !strings.Contains(out, "interrupted") {
				t.Errorf("after %v stderr does not say the knob was put back:\n%s", sig, out)
			}
			if took > 30*time.Second {
				t.Errorf("%v took %v to end the verification", sig, took)
			}
			if knobset.Pending() {
				t.Errorf("after %v a restore record is left", sig)
			}
			if _, err := os.Stat(fmt.Sprintf("/run/netns/ndst-advise-%d", cmd.Process.Pid)); err == nil {
				t.Errorf("after %v the throwaway namespace is left", sig)
			}
		})
	}
}

// SIGKILL leaves the knob changed and the restore record; the next ndst
// command, whatever it is, puts the knob back first and says so.
func TestVerifyKilledRestoredByNextCommand(t *testing.T) {
	bin := needVerify(t)
	cmd, path, before, after, _ := startVerify(t, bin)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	t.Cleanup(func() { // whatever happens below, the knob ends as it was
		if readKnob(t, path) != before {
			_ = safefile.WriteKernelFile(path, []byte(before+"\n"))
		}
	})
	if got := readKnob(t, path); got != after || !knobset.Pending() {
		t.Fatalf("after SIGKILL %s reads %s (record %v), want %s and a restore record", path, got, knobset.Pending(), after)
	}
	out, err := exec.Command(bin, "profiles").CombinedOutput()
	if err != nil {
		t.Fatalf("ndst profiles after the kill: %v\n%s", err, out)
	}
	if got := readKnob(t, path); got != before || knobset.Pending() {
		t.Errorf("after the next command %s reads %s (record %v), want %s and no record", path, got, knobset.Pending(), before)
	}
	for _, want := range []string{fmt.Sprintf("ndst (pid %d, advise --verify) ended with kernel knobs changed", cmd.Process.Pid), "restored "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the next command's output lacks %q:\n%.600s", want, out)
		}
	}
}

// A panic in the middle of a verification (here: as the knob is set) puts
// the knob back as it unwinds, and leaves no restore record.
func TestVerifyRestoredOnPanic(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("changes a kernel knob: needs root (uid %d)", os.Geteuid())
	}
	const stall = "/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout"
	if err := knobset.Check(stall); err != nil {
		t.Skipf("no writable knob to test with: %v", err)
	}
	knobsettest.HoldRealKernelLock(t, 20*time.Minute)
	before := readKnob(t, stall)
	n, err := strconv.Atoi(before)
	if err != nil {
		t.Fatalf("%s reads %q", stall, before)
	}
	var stderr strings.Builder
	g := &globalOptions{stdout: io.Discard, stderr: &stderr, netns: "ndst", kind: "ifb", waitLock: time.Second}
	panicked := func() (p any) {
		defer func() { p = recover() }()
		_, _ = g.verifyLevers(context.Background(), bench.Workload{Devices: 2, OneByOne: true},
			[]bench.Lever{{Name: "rcupdate.rcu_cpu_stall_timeout", Path: stall, Value: strconv.Itoa(n + 1)}}, 1,
			func(line string) {
				if strings.HasPrefix(line, "set ") {
					panic("injected after " + line)
				}
			})
		return nil
	}()
	if panicked == nil {
		t.Fatalf("no panic; stderr:\n%s", stderr.String())
	}
	if got := readKnob(t, stall); got != before {
		t.Errorf("after the panic %s reads %s, want %s", stall, got, before)
		_ = safefile.WriteKernelFile(stall, []byte(before+"\n"))
	}
	if knobset.Pending() {
		t.Error("a restore record is left after the panic")
	}
	if !strings.Contains(stderr.String(), "restored rcupdate.rcu_cpu_stall_timeout") {
		t.Errorf("stderr does not say the knob was put back:\n%s (panic: %v)", stderr.String(), panicked)
	}
}

// Bad input to --verify is a usage error, one line, before anything runs
// (no knob is read or written, no namespace is made).
func TestVerifyBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "sim", "advise", "--verify"}, "--verify measures on the real kernel; --backend sim cannot"},
		{[]string{"advise", "--verify-runs", "3"}, "--verify-runs goes with --verify"},
		{[]string{"advise", "--verify", "--verify-runs", "0"}, "--verify-runs 0: want 1..100"},
		{[]string{"advise", "--verify", "--netns-count", "20000"}, "--verify: 20000 namespaces: at most 10000 are verified on the real kernel"},
	} {
		for _, asJSON := range []bool{false, true} {
			args := tc.args
			if asJSON {
				args = append([]string{"--json"}, args...)
			}
			out, errOut, code := ndstRunArgs(args...)
			if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) || (asJSON != strings.Contains(out, `"exit_code":2`)) {
				t.Errorf("ndst %q = exit %d, %q, %q; want exit 2 and one line containing %q", args, code, out, errOut, tc.want)
			}
		}
	}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err == nil {
			bin := buildNdst(t)
			if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "advise", "--verify", "--count", "10").CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "it needs root") || strings.Count(string(out), "\n") != 1 {
				t.Errorf("advise --verify as uid 65534 = %v, %q; want exit 2 and one line saying it needs root", err, out)
			}
		}
	}
}
