package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/statefile"
)

// The hostile suite, reports: what a command says under failure is true,
// and names that the kernel takes but tools misread are refused with the
// reason.

// TestJSONErrorsNameTheirCommand: with --json, the error object of a
// subcommand names it as its successes do ("netns-add", not "add").
func TestJSONErrorsNameTheirCommand(t *testing.T) {
	state := tempState(t)
	op := func(args ...string) string {
		t.Helper()
		out, _, _ := ndstRun(t, state, append([]string{"--json"}, args...)...)
		var v struct {
			Op string `json:"op"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %q is not one JSON object: %v", args, out, err)
		}
		return v.Op
	}
	for _, c := range []struct {
		ok, bad []string
		want    string
	}{
		{[]string{"netns", "add", "2"}, []string{"netns", "add", "0"}, "netns-add"},
		{[]string{"netns", "del", "1", "2"}, []string{"netns", "del", "5", "1"}, "netns-del"},
		{[]string{"add", "2"}, []string{"add", "0"}, "add"},
		{[]string{"del", "1", "2"}, []string{"del", "2", "1"}, "del"},
	} {
		if got := op(c.ok...); got != c.want {
			t.Errorf("%v succeeded with op %q, want %q", c.ok, got, c.want)
		}
		if got := op(c.bad...); got != c.want {
			t.Errorf("%v failed with op %q, want %q, as its success says", c.bad, got, c.want)
		}
	}
	if got := op("netns", "list", "--bogus"); got != "netns-list" {
		t.Errorf("netns list --bogus: op %q, want netns-list", got)
	}
}

// TestUnknownStateFlagsRefused: a state file that decodes but whose devices
// or namespaces carry flag bits this ndst does not define is corrupt: every
// command refuses it, saying which bits, and leaves it as it was.
func TestUnknownStateFlagsRefused(t *testing.T) {
	for name, s := range map[string]*statefile.State{
		"device bit 30": {NextIfindex: 3, Devices: []statefile.Device{{Ifindex: 1, Name: "dummy0"}, {Ifindex: 2, Name: "dummy1", Flags: 1 << 30}}},
		"lo and veth":   {NextIfindex: 2, Devices: []statefile.Device{{Ifindex: 1, Name: "dummy0", Flags: 1<<1 | 1<<2}}},
		"namespace flags": {NextIfindex: 1, Namespaces: []statefile.Namespace{{Name: "ndst1", NextIfindex: 2, Flags: 4,
			Devices: []statefile.Device{{Ifindex: 1, Name: "lo", Flags: 1 << 1}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if err := statefile.Save(state, s); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(state)
			for _, args := range [][]string{{"add", "1"}, {"del", "1", "10"}, {"list"}, {"netns", "add", "1"}, {"netns", "del", "1", "1"}, {"netns", "list"}} {
				_, errOut, code := ndstRun(t, state, args...)
				if code != 1 || !strings.Contains(errOut, "corrupt") || !(strings.Contains(errOut, "flag bits") || strings.Contains(errOut, "both lo and a veth end")) {
					t.Errorf("%v on a state with %s: exit %d, %q; want exit 1 calling it corrupt and saying why", args, name, code, errOut)
				}
			}
			if after, _ := os.ReadFile(state); string(after) != string(before) {
				t.Errorf("the state file changed")
			}
		})
	}
}

// TestHostileNamesRefused: device and namespace names that begin with '-'
// or '.', and device names of digits alone, are refused with the reason,
// before anything is made.
func TestHostileNamesRefused(t *testing.T) {
	state := tempState(t)
	for _, c := range []struct{ args, says string }{
		{"--name -x%d add 1", "begin with '-', which ip(8) and most command lines read as an option"},
		{"--name .x%d add 1", "begin with '.', which hides them from a listing of /sys/class/net"},
		{"--name %d add 1", "are all digits"},
		{"--name 12%d add 1", "are all digits"},
		{"netns add 1 --template -n%d", "begins with '-'"},
		{"netns add 1 --template .n%d", "begins with '.'"},
		{"netns add 1 --veth --veth-name -v%d", "begin with '-'"},
		{"--netns -home add 1", "begins with '-'"},
		{"--netns .home add 1", "begins with '.'"},
	} {
		_, errOut, code := ndstRun(t, state, strings.Fields(c.args)...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("ndst %s: exit %d, %q; want exit 2 saying %q", c.args, code, errOut, c.says)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the refusals wrote a state file (%v)", err)
	}
}

// TestHugeCostsRefusedAndCountersBounded: a cost table with an operation
// of more than a second is refused; with one just under it, a run's CPU
// counter never exceeds its virtual time times its CPUs.
func TestHugeCostsRefusedAndCountersBounded(t *testing.T) {
	dir := t.TempDir()
	out, _, code := ndstRunArgs("costs", "--json")
	if code != 0 {
		t.Fatal(out)
	}
	var table map[string]any
	if err := json.Unmarshal([]byte(out), &table); err != nil {
		t.Fatal(err)
	}
	write := func(name string, unregister float64) string {
		table["costs_ns"].(map[string]any)["unregister"] = unregister
		b, _ := json.Marshal(table)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	state := tempState(t)
	if _, e, c := ndstRun(t, state, "add", "3"); c != 0 {
		t.Fatal(e)
	}
	huge := write("huge.json", 4e18)
	if _, errOut, code := ndstRun(t, state, "--costs", huge, "del", "1", "3"); code != 2 || !strings.Contains(errOut, "above the 1000000000 ns (1 s)") {
		t.Errorf("--costs with a 4e18 ns unregister: exit %d, %q; want exit 2 with the bound", code, errOut)
	}
	big := write("big.json", 999e6)
	for _, args := range [][]string{{"del", "1", "3"}, {"--watchdog", "1s", "add", "5"}} {
		out, _, _ := ndstRun(t, state, append([]string{"--json", "--costs", big, "--cpus", "2"}, args...)...)
		var r struct {
			VirtualNS int64            `json:"virtual_ns"`
			Counters  map[string]int64 `json:"counters"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		if busy := r.Counters["cpu_busy_ns"]; busy > 2*r.VirtualNS || busy <= 0 {
			t.Errorf("%v: cpu_busy_ns %d with virtual_ns %d on 2 CPUs; want it within the run", args, busy, r.VirtualNS)
		}
	}
}
