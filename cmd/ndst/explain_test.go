package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const waitLine = "unregister_netdevice: waiting for lo to become free. Usage count = 2"

// TestExplainInputs: the lines as arguments, a file, and stdin give the same
// explanation; --json is one object; no input and a bad --profile are usage
// errors.
func TestExplainInputs(t *testing.T) {
	argOut, _, code := ndstRunArgs("explain", "--profile", "6.18", waitLine)
	if code != 0 || !strings.Contains(argOut, "2 = 1 holder + the device's own reference") {
		t.Fatalf("explain LINE = exit %d:\n%s", code, argOut)
	}
	file := filepath.Join(t.TempDir(), "kern.log")
	if err := os.WriteFile(file, []byte("[ 5.0] "+waitLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fileOut, _, code := ndstRunArgs("explain", "--profile", "6.18", file)
	if code != 0 || !strings.Contains(fileOut, "2 = 1 holder") {
		t.Errorf("explain FILE = exit %d:\n%s", code, fileOut)
	}
	old := explainStdin
	defer func() { explainStdin = old }()
	explainStdin = strings.NewReader("Nov 24 09:12:05 h kernel: [ 5.0] " + waitLine + "\n")
	stdinOut, _, code := ndstRunArgs("--json", "explain", "--profile", "5.10", "-")
	var r struct {
		Op      string `json:"op"`
		Line    string `json:"kernel_line"`
		Devices []struct {
			Name    string `json:"device"`
			Holders int    `json:"holders"`
		} `json:"devices"`
	}
	if code != 0 || json.Unmarshal([]byte(stdinOut), &r) != nil || r.Op != "explain" || r.Line != "5.10" || len(r.Devices) != 1 || r.Devices[0].Holders != 2 {
		t.Errorf("--json explain - (5.10) = exit %d, %+v:\n%s; want lo with 2 holders (ready at 0 on 5.10)", code, r, stdinOut)
	}
	if strings.Count(strings.TrimSpace(stdinOut), "\n") != 0 {
		t.Errorf("--json printed more than one line:\n%s", stdinOut)
	}
	for _, args := range [][]string{{"explain"}, {"explain", "--profile", "9.9", waitLine}} {
		if _, errOut, code := ndstRunArgs(args...); code != 2 || errOut == "" {
			t.Errorf("%v = exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
}
