package vmrig

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rigScript is scripts/NAME beside vm-run.sh.
func rigScript(t *testing.T, name string) string {
	t.Helper()
	s, err := FindScript()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(filepath.Dir(s), name)
}

// runRigScript runs scripts/NAME (beside vm-run.sh) with args and env in the
// folder dir ("": the test's); a cancelled ctx sends it SIGTERM. It returns
// stdout, stderr and the exit status.
func runRigScript(t *testing.T, ctx context.Context, name, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", append([]string{rigScript(t, name)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return stdout.String(), stderr.String(), code
}

// runMatrix runs vm-matrix.sh (see runRigScript).
func runMatrix(t *testing.T, ctx context.Context, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runRigScript(t, ctx, "vm-matrix.sh", dir, env, args...)
}

// TestVMMatrixBadInput: usage errors exit 2 with the reason and run nothing.
func TestVMMatrixBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cpus zero", []string{"--cpus", "0"}, "--cpus '0'"},
		{"cpus list", []string{"--cpus", "1,,2"}, "--cpus '1,,2'"},
		{"count", []string{"--count", "100,x"}, "--count '100,x'"},
		{"preempt", []string{"--preempt", "none,fast"}, "--preempt 'none,fast'"},
		{"timeout over 5 min", []string{"--timeout", "301"}, "--timeout '301': want whole seconds from 1 to 300"},
		{"not a kernel", []string{"firefox"}, "'firefox': neither a kernel .deb nor a kernel image package name"},
		{"unknown option", []string{"--smp", "2"}, "unknown option '--smp'"},
		{"no value", []string{"--json"}, "--json needs a value"},
		{"json folder", []string{"--json", filepath.Join(dir, "no", "m.json")}, "no folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, errOut, code := runMatrix(t, ctx, "", []string{"TMPDIR=" + dir}, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("vm-matrix.sh %q = exit %d, stdout %q, stderr %q; want exit 2 and a message containing %q", tc.args, code, out, errOut, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("usage errors left %d entries in TMPDIR, want none", len(ents))
	}
}

// TestVMMatrixFailedCells runs the matrix where nothing can boot: a kernel
// package without dummy.ko, and a PREEMPT_DYNAMIC kernel on a host without
// qemu. Every planned boot must be a row with its reason (one per CPU count
// for the package that cannot be used, one per model the other kernel
// boots), the exports must hold them, and the exit status must be 1. It runs
// in another folder than the repository, with paths relative to it.
func TestVMMatrixFailedCells(t *testing.T) {
	dir := t.TempDir()
	noDummy := fakeDeb(t, dir, "linux-image-9.9.9-nodummy", map[string]string{"boot/config-9.9.9-nodummy": "CONFIG_HZ=100\n"})
	dynamic := fakeDeb(t, dir, "linux-image-9.9.9-dynamic", map[string]string{
		"boot/config-9.9.9-dynamic": "CONFIG_HZ=250\nCONFIG_DUMMY=y\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n"})
	env := []string{"NDST_VM_CACHE=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir, "NDST_QEMU=/nonexistent/qemu"}
	jsonOut, csvOut := filepath.Join(dir, "m.json"), filepath.Join(dir, "m.csv")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, errOut, code := runMatrix(t, ctx, dir, env, "--cpus", "1,2", "--count", "10", "--json", "m.json", "--csv", "m.csv",
		filepath.Base(noDummy), filepath.Base(dynamic))
	if code != 1 {
		t.Fatalf("vm-matrix.sh = exit %d, want 1 (no boot gave predictions)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"| " + noDummy + " | 1 | - | - | - | boot failed: exit 4: vm-run: kernel 9.9.9-nodummy in " + noDummy + " has no dummy.ko",
		"| " + noDummy + " | 2 | - |",
		"| 9.9.9-dynamic | 1 | none | - | - | boot failed: exit 3: vm-run: qemu not found",
		"| 9.9.9-dynamic | 1 | voluntary |", "| 9.9.9-dynamic | 1 | full |",
		"| 9.9.9-dynamic | 2 | none |", "| 9.9.9-dynamic | 2 | voluntary |", "| 9.9.9-dynamic | 2 | full |",
		"0 of 0 cells within 20% (errors beyond it in bold); 8 boot(s) failed; matrix wall time",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var m struct {
		Failures []struct {
			Package string `json:"package"`
			Reason  string `json:"reason"`
		} `json:"failures"`
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.Failures) != 8 {
		t.Errorf("JSON export = %d failures (%v), want 8", len(m.Failures), err)
	}
	f, err := os.Open(csvOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recs, err := csv.NewReader(f).ReadAll(); err != nil || len(recs) != 9 {
		t.Errorf("CSV export = %d records (%v), want a header and 8 failures", len(recs), err)
	}
	if left := ownProcesses(t, dir); len(left) > 0 {
		t.Errorf("processes left running: %q, want none", left)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "ndst-matrix.") || strings.HasPrefix(e.Name(), "ndst-vm.") {
			t.Errorf("scratch folder %s left behind", e.Name())
		}
	}
}

// TestVMMatrixStopped stops the matrix with SIGTERM while its first guest
// runs: it must exit at once and leave no qemu and no scratch folder behind.
func TestVMMatrixStopped(t *testing.T) {
	needVM(t)
	dir := t.TempDir()
	cmd := exec.Command("bash", rigScript(t, "vm-matrix.sh"), "--cpus", "1", "--preempt", "none", "--count", "100",
		"--json", filepath.Join(dir, "m.json"), "--csv", filepath.Join(dir, "m.csv"), "linux-image-amd64")
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the guest's qemu, then stop the matrix.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if procs := ownProcesses(t, dir); len(procs) > 0 && strings.Contains(strings.Join(procs, "\n"), "qemu") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no qemu after 2 minutes; stderr:\n%s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 {
			t.Errorf("vm-matrix.sh after SIGTERM: %v, want exit 143", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("vm-matrix.sh still running 30 s after SIGTERM")
	}
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	assertNothingLeft(t, dir)
}

// assertNothingLeft checks that a stopped script left no process of its
// own (vm-run.sh's cleanup may still be reaping qemu for a moment: up to 5 s)
// and nothing in its TMPDIR.
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	var left []string
	for range 50 {
		if left = ownProcesses(t, dir); len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("after SIGTERM: processes left running: %q, want none", left)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("after SIGTERM: %s left in TMPDIR, want nothing", e.Name())
	}
}
