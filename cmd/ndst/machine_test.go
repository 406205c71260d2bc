package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMachineHostFromTable: --machine host with a cost table takes the
// table's host for every setting the command line leaves, and says where
// each came from; a flag given wins; knobs recorded in the table reach the
// emulated kernel.
func TestMachineHostFromTable(t *testing.T) {
	table := filepath.Join(t.TempDir(), "host.json")
	b, err := os.ReadFile("../../calibrate/testdata/closure/host-6.18-quiet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	host := raw["host"].(map[string]any)
	host["knobs_read"] = true
	host["knobs"] = []map[string]string{{"name": "rcutree.jiffies_till_first_fqs", "value": "0", "source": "/sys/module/rcutree/parameters/jiffies_till_first_fqs"}}
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(table, b, 0o644); err != nil {
		t.Fatal(err)
	}
	state := tempState(t)
	out, errOut, code := ndstRun(t, state, "--machine", "host", "--costs", table, "--json", "add", "3")
	if code != 0 {
		t.Fatalf("add = exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"hz":250`, `"cpus":2`, `"profile":"6.18"`, "hz 250 (the cost table", "rcutree.jiffies_till_first_fqs"} {
		if !strings.Contains(out, want) {
			t.Errorf("--machine host --costs: output lacks %q:\n%s", want, out)
		}
	}
	_, _, code = ndstRun(t, state, "--machine", "host", "--costs", table, "--cpus", "1", "--param", "rcutree.jiffies_till_first_fqs=1", "list")
	if code != 0 {
		t.Fatalf("list = exit %d", code)
	}
	out, _, _ = ndstRun(t, state, "--machine", "host", "--costs", table, "--cpus", "1", "del", "1", "3")
	if !strings.Contains(out, "cpus 1 (the command line)") || !strings.Contains(out, "1 CPU") {
		t.Errorf("--cpus with --machine host: the flag must win and say so:\n%s", out)
	}
	_, errOut, code = ndstRun(t, state, "--machine", "guest", "list")
	if code != 2 || !strings.Contains(errOut, "--machine \"guest\"") {
		t.Errorf("--machine guest = exit %d, %q; want exit 2 naming it", code, errOut)
	}
}
