package vmrig

import (
	"bytes"
	"context"
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

// runPredict runs vm-predict.sh (see runRigScript).
func runPredict(t *testing.T, ctx context.Context, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runRigScript(t, ctx, "vm-predict.sh", "", env, args...)
}

// TestVMPredictBadInput: usage errors exit 2 with the reason, before
// anything boots, and leave nothing behind.
func TestVMPredictBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cpus zero", []string{"--netns", "--cpus", "0"}, "--cpus '0': want an integer from 1 to 64"},
		{"cpus missing", []string{"--cpus"}, "--cpus needs a value"},
		{"preempt", []string{"--netns", "--preempt", "fast"}, "--preempt 'fast'"},
		{"runs zero", []string{"--netns", "--runs", "0"}, "--runs '0': want real runs per cell from 1 to 100"},
		{"runs not a number", []string{"--netns", "--runs", "3x"}, "--runs '3x'"},
		{"runs without netns", []string{"--runs", "2"}, "--runs is for --netns"},
		{"batched runs zero", []string{"--param", "rcu_nocbs=all", "--batched-runs", "0"}, "--batched-runs '0': want batched deletes per boot from 1 to 100"},
		{"batched runs without param", []string{"--batched-runs", "9"}, "--batched-runs is for --param"},
		{"batched runs with netns", []string{"--netns", "--batched-runs", "9"}, "--batched-runs is for --param"},
		{"count empty item", []string{"--netns", "--count", "10,,100"}, "--count '10,,100': want namespace counts from 1 to 10000"},
		{"count zero", []string{"--netns", "--count", "0,10"}, "--count '0,10'"},
		{"count too big", []string{"--netns", "--count", "10,20000"}, "20000 namespaces is more than 10000"},
		{"count twice", []string{"--netns", "--count", "100,100"}, "100 is listed twice"},
		{"device count", []string{"--count", "100,x"}, "--count '100,x'"},
		{"timeout", []string{"--netns", "--timeout", "0"}, "--timeout '0'"},
		{"log folder missing", []string{"--netns", "--log", filepath.Join(dir, "no", "t.log")}, "no folder"},
		{"log is a folder", []string{"--netns", "--log", dir}, "is a folder"},
		{"unknown option", []string{"--netns", "--smp", "2"}, "unknown argument '--smp'"},
		{"rig option", []string{"--netns", "--", "--smp", "2"}, "unknown option '--smp'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, errOut, code := runPredict(t, ctx, []string{"TMPDIR=" + dir}, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("vm-predict.sh %q = exit %d, stdout %q, stderr %q; want exit 2 and a message containing %q", tc.args, code, out, errOut, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("usage errors left %d entries in TMPDIR, want none", len(ents))
	}
}

// TestVMPredictNetns runs the namespace prediction in a 1-CPU guest at its
// smallest (N = 10, one real run): calibrate and predict --netns both run
// in the guest, whose veth.ko makes the veth cells possible; the JSON
// report must hold all four cells with the real times observed.
func TestVMPredictNetns(t *testing.T) {
	needVM(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	log := filepath.Join(dir, "transcript")
	out, errOut, code := runPredict(t, ctx, []string{"TMPDIR=" + dir}, "--netns", "--cpus", "1", "--count", "10", "--json", "--log", log)
	t.Logf("vm-predict.sh --netns: %v wall; stderr:\n%s", time.Since(start).Round(time.Second), errOut)
	if code != 0 {
		t.Fatalf("vm-predict.sh --netns = exit %d, want 0; stdout:\n%s", code, out)
	}
	var p struct {
		Kernel string `json:"kernel"`
		Rows   []struct {
			Namespaces     int    `json:"namespaces"`
			Veth           bool   `json:"veth"`
			Style          string `json:"style"`
			MeasuredGoneNS int64  `json:"measured_gone_ns"`
			MeasuredDoneNS int64  `json:"measured_done_ns"`
			Predicted      struct {
				DoneNS int64 `json:"done_ns"`
			} `json:"predicted"`
		} `json:"rows"`
		Within int `json:"within"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("vm-predict.sh --netns --json: %v: %q", err, out)
	}
	if p.Kernel != fetchKernel.Release {
		t.Errorf("prediction kernel = %q, want the guest's %s", p.Kernel, fetchKernel.Release)
	}
	veth := 0
	for _, r := range p.Rows {
		if r.Namespaces != 10 || r.MeasuredGoneNS <= 0 || r.MeasuredDoneNS < r.MeasuredGoneNS || r.Predicted.DoneNS <= 0 {
			t.Errorf("row %+v: want 10 namespaces, the real gone and done times and an emulated done time", r)
		}
		if r.Veth {
			veth++
		}
	}
	if len(p.Rows) != 4 || veth != 2 {
		t.Errorf("%d rows (%d with veth), want 4: without and with veth, all at once and one at a time", len(p.Rows), veth)
	}
	if !strings.Contains(errOut, "vm-predict: guest: veth loaded") && !strings.Contains(errOut, "vm-predict: guest: veth built in") {
		t.Errorf("stderr lacks the guest's veth line:\n%s", errOut)
	}
	if b, err := os.ReadFile(log); err != nil || !bytes.Contains(b, []byte("@@ndst-vm begin 2 --json predict --netns")) {
		t.Errorf("--log %s: %v; want the guest's transcript with the predict command", log, err)
	}
	if left := ownProcesses(t, dir); len(left) > 0 {
		t.Errorf("processes left running: %q, want none", left)
	}
}

// TestVMPredictStopped stops vm-predict.sh --netns with SIGTERM while its
// guest runs: it must exit 143 at once and leave no qemu and no scratch
// folder behind.
func TestVMPredictStopped(t *testing.T) {
	needVM(t)
	dir := t.TempDir()
	cmd := exec.Command("bash", rigScript(t, "vm-predict.sh"), "--netns", "--cpus", "1", "--count", "10")
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if procs := ownProcesses(t, dir); strings.Contains(strings.Join(procs, "\n"), "qemu") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no qemu after 2 minutes; stderr:\n%s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 {
			t.Errorf("vm-predict.sh after SIGTERM: %v, want exit 143; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("vm-predict.sh still running 30 s after SIGTERM")
	}
	assertNothingLeft(t, dir)
}
