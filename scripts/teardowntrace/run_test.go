package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRunWritesWorkloadAndStackMarkers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	marker := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if rc := runMain([]string{"-marker", marker, "-stack-interval", "20ms", "-timeout", "20s", "--", "sleep", "0.3"}); rc != 0 {
		t.Fatalf("exit %d", rc)
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.HasPrefix(lines[0], workloadMarker+" pid=") || !strings.HasSuffix(lines[0], " comm=sleep") {
		t.Fatalf("first marker %q", lines[0])
	}
	pid, _ := markerInt(lines[0], "pid")
	if os.Geteuid() != 0 {
		t.Logf("not root: /proc/PID/stack is unreadable, so no stack samples (%d marker lines)", len(lines))
		return
	}
	if len(lines) < 3 {
		t.Fatalf("only %d marker lines in 0.3 s at 20 ms", len(lines))
	}
	s, ok := parseStackMarker(lines[1])
	if !ok || s.TID != int(pid) || s.State == "" {
		t.Fatalf("stack marker %q -> %+v %v", lines[1], s, ok)
	}
}

func TestRunTimeoutAndUsage(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	if rc := runMain([]string{"-timeout", "100ms", "--", "sleep", "10"}); rc != 124 {
		t.Fatalf("timeout: exit %d, want 124", rc)
	}
	if rc := runMain([]string{"-timeout", "1s"}); rc != 2 {
		t.Fatalf("no command: exit %d, want 2", rc)
	}
	if rc := runMain([]string{"-marker", t.TempDir(), "--", "true"}); rc != 2 {
		t.Fatalf("directory as marker: exit %d, want 2", rc)
	}
	if rc := runMain([]string{"--", "/nonexistent/cmd"}); rc != 1 {
		t.Fatalf("missing command: exit %d, want 1", rc)
	}
}
