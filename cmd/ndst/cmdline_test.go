package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// TestBadCommandLines: every command line that cannot do what it says exits
// with the right status and one line naming the problem; with --json it also
// answers with exactly one JSON error object on stdout.
func TestBadCommandLines(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string // substring of the error
	}{
		// Missing and unknown commands.
		{[]string{}, 2, "missing command"},
		{[]string{"--", "add", "1"}, 2, `"add" after "--" is not taken as a command`},
		{[]string{""}, 2, `unknown command ""`},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"completion", "foo"}, 2, `unknown command "foo" for "ndst completion"`},
		{[]string{"completion"}, 2, "needs one of bash"},
		{[]string{"help", "foo"}, 2, `no help topic "foo"`},
		// Unknown flags are called flags, wherever they stand.
		{[]string{"--bogus", "add", "1"}, 2, "unknown flag: --bogus"},
		{[]string{"add", "--bogus", "1"}, 2, "unknown flag: --bogus"},
		// Limits name the real limit; a bad combination names its cause.
		{[]string{"add", "99999999999999999999"}, 2, "at most 16777216"},
		{[]string{"add", "16777217"}, 2, "at most 16777216"},
		{[]string{"--profile", "2.6.33", "--rcu", "tiny", "--cpus", "2", "add", "1"}, 2, "needs a kernel without SMP: one CPU, not --cpus 2"},
		{[]string{"--profile", "2.6.33", "--rcu", "tiny", "--preempt", "full", "add", "1"}, 2, "is not preemptible: not --preempt full"},
		// An RCU the kernel line did not have names the line and what it had.
		{[]string{"--rcu", "tiny", "add", "1"}, 2, "--rcu tiny: kernel 2.6.32 has no tiny RCU (it has tree, tree-preempt)"},
		{[]string{"--profile", "2.6.31", "--rcu", "tree-preempt", "add", "1"}, 2, "--rcu tree-preempt: kernel 2.6.31 has no tree-preempt RCU (it has tree, classic)"},
		{[]string{"--rcu", "bogus", "add", "1"}, 2, "--rcu bogus: unknown RCU implementation"},
		{[]string{"--profile", "2.6.32", "--rcu", "tree-preempt", "add", "1"}, 2, "needs CONFIG_PREEMPT in kernel 2.6.32: --preempt full"},
		{[]string{"--profile", "2.6.31", "--strategy", "expedited", "del", "1", "1"}, 2, "kernel 2.6.31 does not have"},
		// Flags of one backend given to the other.
		{[]string{"--backend", "netlink", "--hz", "0", "--cpus", "0", "--strategy", "foo", "--profile", "bogus", "add", "1"}, 2,
			"--profile, --strategy, --hz, and --cpus would be ignored: --backend netlink runs this host's kernel"},
		{[]string{"--backend", "netlink", "--seed", "3", "del", "1", "2"}, 2, "--seed would be ignored"},
		{[]string{"--backend", "netlink", "--state", "/tmp/x", "list"}, 2, "--state would be ignored"},
		{[]string{"--backend", "netlink", "--watchdog", "30s", "reset"}, 2, "--watchdog would be ignored"},
		{[]string{"--kind", "veth", "add", "1"}, 2, "--kind veth: the emulated kernel adds dummy, ifb, vlan and macvlan devices"},
		{[]string{"--kind", "ifb", "del", "1", "1"}, 2, "--kind would be ignored: --backend sim (the default) runs the emulated kernel"},
		{[]string{"--profile", "2.6.32", "add", "1", "--addr6", "1"}, 2, "kernel line 2.6.32 is modelled without addresses"},
		{[]string{"add", "1", "--addr4", "255"}, 2, "--addr4 255: want 0..254"},
		{[]string{"--backend", "module", "--cpus", "2", "add", "1"}, 2, "--cpus would be ignored: --backend module runs this host's kernel"},
		{[]string{"--backend", "module", "--kind", "ifb", "add", "1"}, 2, "--kind would be ignored: the module makes devices of its own kind"},
		{[]string{"--backend", "module", "reset"}, 2, "reset does not apply to --backend module"},
		{[]string{"--netns", "x", "reset"}, 2, "--netns would be ignored"},
		{[]string{"--netns", "x/y", "list"}, 2, `network namespace name "x/y": it contains '/'`},
		{[]string{"--netns", "x", "netns", "list"}, 2, "--netns would be ignored: netns list works on namespaces of its own"},
		{[]string{"--kind", "ifb", "netns", "list"}, 2, "--kind would be ignored"},
		{[]string{"--backend", "netlink", "--hz", "250", "netns", "list"}, 2, "--hz would be ignored"},
		{[]string{"--i-really-mean-the-root-namespace", "reset"}, 2, "--i-really-mean-the-root-namespace would be ignored"},
		{[]string{"--kind", "ifb", "costs"}, 2, "--kind would be ignored"},
		{[]string{"--backend", "netlink", "costs"}, 2, "--backend would be ignored"},
		{[]string{"--profile", "6.18", "churn", "-l", "1"}, 2, "--profile would be ignored: churn drives its own"},
		{[]string{"--netns", "x", "churn", "-l", "1"}, 2, "churn's --netns is a switch"},
		// The global namespace and the emulator's flags in the commands with
		// throwaway namespaces of their own.
		{[]string{"--netns", "x", "bench"}, 2, "--netns would be ignored: bench runs netlink cells in a throwaway namespace of its own; name it with --bench-netns"},
		{[]string{"--netns", "x", "predict"}, 2, "predict --netns takes no value (got \"x\"); the namespace predict works in is named with --predict-netns"},
		{[]string{"--netns", "x", "calibrate"}, 2, "--netns would be ignored: calibrate measures in a throwaway namespace of its own"},
		{[]string{"--hz", "250", "calibrate"}, 2, "--hz would be ignored: calibrate measures this host's kernel"},
		{[]string{"--backend", "sim", "calibrate"}, 2, "calibrate measures this host's kernel through netlink; --backend sim does not apply"},
		{[]string{"--profile", "2.6.31", "predict"}, 2, "--profile would be ignored: predict runs throwaway emulated kernels of the 6.18 profile"},
		{[]string{"--backend", "sim", "predict"}, 2, "--backend would be ignored"},
		{[]string{"--backend", "netlink", "predict", "--netns", "--count", "20000"}, 2, "--count 20000: want 1..10000 namespaces"},
		{[]string{"predict", "--count", "200000"}, 2, "--count: 200000 is out of range"}, // checked before calibrating
		{[]string{"predict", "--from-guest", "x.log", "--runs", "3"}, 2, "--runs would be ignored: --from-guest"},
		{[]string{"--state", "/tmp/x", "calibrate"}, 2, "--state would be ignored: calibrate measures this host's kernel"},
		{[]string{"bench", "--backend", "netlink", "--strategy", "tick", "--hz", "250"}, 2, "--strategy and --hz would be ignored: --backend netlink has no emulated cells"},
		{[]string{"--costs", "x.json", "bench", "--backend", "netlink"}, 2, "--costs would be ignored"},
		{[]string{"--kind", "ifb", "bench"}, 2, "--kind would be ignored: this bench has no netlink cells"},
		{[]string{"bench", "--bench-netns", "x"}, 2, "--bench-netns would be ignored"},
		// --json is the one answer on stdout.
		{[]string{"--json", "bench", "--export-csv", "-"}, 2, "--json prints the report as JSON on stdout, and --export-csv - would print there too"},
		// JSON has no form of a completion script.
		{[]string{"--json", "completion", "bash"}, 2, "--json: a completion script is shell code"},
		// --hold rules name the holders known and the durations allowed.
		{[]string{"--hold", "bogus=1s", "add", "1"}, 2, `unknown holder "bogus" (holders: in_device, arp_parms, inet6_dev, nd_parms, dst, route, socket, xfrm)`},
		{[]string{"--hold", "dst=1parsec", "add", "1"}, 2, `"1parsec" is not a duration between 0 and 24h, nor forever`},
		{[]string{"--hold", "dst=-1s", "add", "1"}, 2, `"-1s" is not a duration`},
		{[]string{"--hold", "dst", "add", "1"}, 2, "want HOLDER[@DEVICE]=DURATION"},
		// Failures before the run that are not usage errors exit 1.
		{[]string{"del", "1", "10"}, 1, "no device in range"},
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the commands give no --state
	for _, tc := range tests {
		for _, asJSON := range []bool{false, true} {
			args := tc.args
			switch {
			case len(args) > 0 && args[0] == "--json":
				if !asJSON {
					continue
				}
			case asJSON:
				args = append([]string{"--json"}, args...)
			}
			name := "ndst " + strings.Join(args, " ")
			out, errOut, code := ndstRunArgs(args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Errorf("%s = exit %d, stderr %q; want exit %d and an error containing %q", name, code, errOut, tc.code, tc.msg)
				continue
			}
			if n := strings.Count(strings.TrimSpace(errOut), "\n"); n > 0 && len(tc.args) > 0 {
				t.Errorf("%s: stderr has %d lines, want one: %q", name, n+1, errOut)
			}
			if !asJSON {
				if len(tc.args) > 0 && out != "" {
					t.Errorf("%s printed %q on stdout, want nothing", name, out)
				}
				continue
			}
			var obj errorJSON
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&obj); err != nil || dec.More() {
				t.Errorf("%s: stdout %q is not exactly one JSON error object (%v)", name, out, err)
				continue
			}
			if obj.Result != ndst.ResultError || obj.ExitCode != tc.code || !strings.Contains(obj.Error, tc.msg) || obj.Op == "" {
				t.Errorf("%s: JSON %+v; want result error, exit_code %d, an op, and an error containing %q", name, obj, tc.code, tc.msg)
			}
		}
	}
}

// ndstRunArgs runs the CLI in-process with exactly args.
func ndstRunArgs(args ...string) (stdout, stderr string, code int) {
	var o, e strings.Builder
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// TestMissingCommandPrintsHelp: a bare "ndst" shows what it can do, on
// stderr, and still exits 2.
func TestMissingCommandPrintsHelp(t *testing.T) {
	out, errOut, code := ndstRunArgs()
	if code != 2 || out != "" || !strings.Contains(errOut, "Available Commands") {
		t.Errorf("ndst = exit %d, stdout %q, stderr %.100q...; want exit 2 with the help on stderr", code, out, errOut)
	}
	if out, _, code := ndstRunArgs("--help"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("ndst --help = exit %d, %.100q; want exit 0 and the help", code, out)
	}
	if out, _, code := ndstRunArgs("help", "del"); code != 0 || !strings.Contains(out, "del START STOP") {
		t.Errorf("ndst help del = exit %d, %.100q; want exit 0 and del's help", code, out)
	}
}

// TestJSONEveryCommand: with --json, each command prints exactly one JSON
// object, whatever its outcome.
func TestJSONEveryCommand(t *testing.T) {
	state := tempState(t)
	for _, args := range [][]string{
		{"reset"}, // no state file yet
		{"add", "3"},
		{"list"},
		{"del", "1", "3"},
		{"add", "3"},
		{"reset"},
		{"costs"},
		{"--watchdog", "1s", "bench", "--strategy", "tick", "--count", "5", "--runs", "1"},
		{"churn", "-l", "0.05", "-t", "1", "-n", "10"},
		{"--strategy", "expedited", "--watchdog", "2s", "del", "1", "1"}, // nothing there: an error
	} {
		full := append([]string{"--json"}, args...)
		out, errOut, _ := ndstRun(t, state, full...)
		dec := json.NewDecoder(strings.NewReader(out))
		var v map[string]any
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Errorf("ndst %s: stdout %q (stderr %q) is not exactly one JSON object: %v", strings.Join(full, " "), out, errOut, err)
		}
	}
}

func TestHoldOutsideTheRangeChangesNothing(t *testing.T) {
	st := filepath.Join(t.TempDir(), "state")
	if _, errOut, code := ndstRunArgs("--state", st, "add", "3"); code != 0 {
		t.Fatalf("add 3 = exit %d: %s", code, errOut)
	}
	before, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"dummy9", "9", "dummy2"} { // dummy2 is ifindex 3, outside 1..2
		_, errOut, code := ndstRunArgs("--state", st, "--hold", "dst@"+dev+"=forever", "del", "1", "2")
		if code != 2 || !strings.Contains(errOut, "no device named "+dev) {
			t.Errorf("--hold dst@%s=forever del 1 2 = exit %d, %q; want exit 2 naming the device", dev, code, errOut)
		}
	}
	if after, _ := os.ReadFile(st); !bytes.Equal(before, after) {
		t.Errorf("a refused --hold changed the state file")
	}
	// By ifindex: device 2 is dummy1, held, so the run is stuck.
	out, _, code := ndstRunArgs("--state", st, "--profile", "6.18", "--hold", "dst@2=forever", "--give-up", "5s", "del", "1", "2")
	if code != 1 || !strings.Contains(out, "result:  stuck") || !strings.Contains(out, "dummy1 (usage count") {
		t.Errorf("--hold dst@2=forever = exit %d:\n%s\nwant stuck on dummy1", code, out)
	}
}
