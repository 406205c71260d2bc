//go:build linux

package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile suite, bounds: sizes and durations that would take hours or
// all the memory are refused before anything runs, and every long command
// ends within a second of SIGTERM.

// TestBoundsRefused: each size or duration past what can run is a usage
// error (exit 2) that says the bound, before anything runs.
func TestBoundsRefused(t *testing.T) {
	for _, c := range []struct{ args, says string }{
		{"bench --jobs 99999999999 --count 2 --runs 1", "--jobs: 99999999999 is out of range; want 0 (one per core) to 1024"},
		{"bench --jobs 1025 --count 2 --runs 1", "want 0 (one per core) to 1024"},
		{"--give-up 25h add 1", "--give-up: at most 24h0m0s"},
		{"--give-up 8760h del 1 1", "--give-up: at most 24h0m0s"},
		{"--watchdog 121s add 1", "--watchdog: at most 2m0s"},
		{"--wait-lock 25h add 1", "--wait-lock: at most 24h0m0s"},
		{"--hold dst=25h add 1", "is not a duration between 0 and 24h"},
		{"--backend netlink --give-up 25h del 1 1", "--give-up: at most 24h0m0s"},
	} {
		args := strings.Fields(c.args)
		if args[0] != "--backend" {
			args = append([]string{"--state", tempState(t)}, args...)
		}
		out, errOut, code := ndstRunArgs(args...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("ndst %s = exit %d, stderr %q (stdout %q); want exit 2 saying %q", c.args, code, errOut, out, c.says)
		}
	}
}

// TestSIGTERMEndsEveryLongCommand: commands that would run for minutes (a
// long churn, a bench of many cells, a delete of a million devices, a stuck
// delete allowed a day of waiting with the soft-lockup detector off) end
// within a second of SIGTERM, exit 1 and say they were interrupted.
func TestSIGTERMEndsEveryLongCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	stuck := filepath.Join(dir, "stuck")
	for _, setup := range [][]string{{"--state", big, "--watchdog", "0", "add", "1000000"}, {"--state", stuck, "add", "10"}} {
		if out, err := exec.Command(bin, setup...).CombinedOutput(); err != nil {
			t.Fatalf("setup %v: %v %s", setup, err, out)
		}
	}
	for _, args := range [][]string{
		{"churn", "-t", "2", "-n", "1000", "-l", "600"},
		{"bench", "--count", "20000,40000", "--cpus", "1,2,4", "--hz", "100,250,1000", "--runs", "3"},
		{"--state", big, "--watchdog", "0", "del", "1", "1000000", "--one-by-one"},
		{"--state", stuck, "--profile", "6.18", "--cpus", "2", "--preempt", "full", "--strategy", "expedited", "--watchdog", "0",
			"--hold", "dst=forever", "--give-up", "24h", "del", "1", "10"},
		{"--state", filepath.Join(dir, "netns"), "--profile", "6.18", "netns", "add", "200000"},
	} {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		sent := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		took := time.Since(sent)
		name := strings.Join(args, " ")
		t.Logf("%s: %v after %v", name, err, took.Round(time.Millisecond))
		// The bound is a second; 3 s leaves room for a loaded CI machine.
		if took > 3*time.Second {
			t.Errorf("%s: took %v to end after SIGTERM", name, took)
		}
		if exitOf(err) != 1 || !strings.Contains(out.String(), "interrupted") {
			t.Errorf("%s: exit %d, output %q; want exit 1 saying it was interrupted", name, exitOf(err), tail(out.String()))
		}
	}
}

func tail(s string) string {
	if len(s) > 600 {
		return "..." + s[len(s)-600:]
	}
	return s
}
