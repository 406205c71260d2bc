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

// TestMachineTableElsewhere: a calibrated table used without --machine host
// runs on the flags' machine, and the run says that this is not the
// table's; on the table's own machine, or with --machine host, it says
// nothing of the kind.
func TestMachineTableElsewhere(t *testing.T) {
	table := "../../calibrate/testdata/closure/host-6.18-quiet-a.json"
	const note = "the cost table was calibrated on kernel"
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--costs", table, "add", "3"}, true},
		{[]string{"--costs", table, "--profile", "6.18", "--hz", "250", "--cpus", "2", "add", "3"}, false},
		{[]string{"--costs", table, "--machine", "host", "add", "3"}, false},
	} {
		out, errOut, code := ndstRun(t, tempState(t), c.args...)
		if code != 0 {
			t.Fatalf("%v = exit %d: %s", c.args, code, errOut)
		}
		if got := strings.Contains(out, note); got != c.want {
			t.Errorf("%v: note %q shown %v, want %v:\n%s", c.args, note, got, c.want, out)
		}
		if c.want && !strings.Contains(out, "this run emulates line 2.6.32, HZ 1000, 1 CPU,") {
			t.Errorf("%v: the note must name the machine the run emulates:\n%s", c.args, out)
		}
	}
}

// TestMachineHostTableStalls: --machine host with a calibrated table runs
// its machine's stalls (as ndst predict does); the same table on the flags'
// machine does not.
func TestMachineHostTableStalls(t *testing.T) {
	// A 2-vCPU guest's calibration report; its table is what calibrate -o
	// writes.
	b, err := os.ReadFile("../../calibrate/testdata/closure/guest-6.1-2-none-stalls.json")
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Table json.RawMessage `json:"table"`
	}
	if err := json.Unmarshal(b, &report); err != nil || len(report.Table) == 0 {
		t.Fatalf("the report has no table: %v", err)
	}
	table := filepath.Join(t.TempDir(), "guest.json")
	if err := os.WriteFile(table, report.Table, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		machine []string
		want    bool
	}{{[]string{"--machine", "host"}, true}, {nil, false}} {
		state := tempState(t)
		args := append([]string{"--costs", table}, c.machine...)
		if _, e, code := ndstRun(t, state, append(args, "add", "20")...); code != 0 {
			t.Fatalf("add = exit %d: %s", code, e)
		}
		out, e, code := ndstRun(t, state, append(args, "-v", "del", "1", "20", "--one-by-one")...)
		if code != 0 {
			t.Fatalf("del = exit %d: %s", code, e)
		}
		if got := strings.Contains(out, "machine_stalls"); got != c.want {
			t.Errorf("%v: machine_stalls counted %v, want %v:\n%s", c.machine, got, c.want, out)
		}
	}
}
