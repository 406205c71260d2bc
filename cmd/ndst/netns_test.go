package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// hostLine is this host's kernel line with the built-in cost table.
var hostLine = []string{"--profile", "6.18", "--hz", "250", "--cpus", "2"}

func netnsRun(t *testing.T, state string, args ...string) (string, string, int) {
	t.Helper()
	return ndstRun(t, state, append(append([]string{}, hostLine...), args...)...)
}

func TestNetnsGolden(t *testing.T) {
	state := tempState(t)
	out, errOut, code := netnsRun(t, state, "netns", "add", "3", "--links", "2", "--veth", "--lo-up")
	if code != 0 {
		t.Fatalf("netns add 3 = exit %d, stderr %q", code, errOut)
	}
	golden(t, "netns-add3.txt", maskWall(out))
	out, _, code = ndstRun(t, state, "netns", "list")
	if code != 0 {
		t.Fatalf("netns list = exit %d", code)
	}
	golden(t, "netns-list3.txt", out)
	out, _, code = ndstRun(t, state, "--netns", "ndst2", "list")
	if code != 0 {
		t.Fatalf("list --netns ndst2 = exit %d", code)
	}
	golden(t, "netns-list-inside.txt", out)
	out, errOut, code = netnsRun(t, state, "netns", "del", "1", "3")
	if code != 0 {
		t.Fatalf("netns del 1 3 = exit %d, stderr %q", code, errOut)
	}
	golden(t, "netns-del3.txt", maskWall(out))
	for _, want := range []string{"returned:", "gone:", "done:", "cleanup: 2 runs of cleanup_net"} {
		if !strings.Contains(out, want) {
			t.Errorf("netns del output lacks %q:\n%s", want, out)
		}
	}
	netnsRun(t, state, "netns", "add", "3", "--veth")
	out, _, code = netnsRun(t, state, "--json", "netns", "del", "1", "3", "--one-by-one")
	if code != 0 {
		t.Fatalf("netns del --one-by-one = exit %d", code)
	}
	golden(t, "netns-del3-one.json", maskWall(out))
	var m struct {
		Op    string `json:"op"`
		Count int    `json:"count"`
		Netns struct {
			Style      string `json:"style"`
			ReturnedNS int64  `json:"returned_ns"`
			GoneNS     *int64 `json:"gone_ns"`
			DoneNS     *int64 `json:"done_ns"`
			BatchSizes []int  `json:"batch_sizes"`
		} `json:"netns"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("netns del --json printed %q: %v", out, err)
	}
	if m.Op != "netns-del" || m.Count != 3 || m.Netns.Style != "one-by-one" || m.Netns.GoneNS == nil || m.Netns.DoneNS == nil ||
		len(m.Netns.BatchSizes) != 3 {
		t.Errorf("netns del --json = %+v", m)
	}
}

// TestNetnsBadInput: every refusal is exit 1 or 2 with one JSON object under
// --json, and leaves the state file as it was.
func TestNetnsBadInput(t *testing.T) {
	state := tempState(t)
	if _, e, c := ndstRun(t, state, "netns", "add", "2", "--links", "1"); c != 0 {
		t.Fatalf("netns add 2 = %d %s", c, e)
	}
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"netns", "del", "5", "9"}, 1, "no such network namespace: ndst%d numbers 5..9"},
		{[]string{"netns", "del", "2", "1"}, 2, "reversed"},
		{[]string{"netns", "del", "0", "1"}, 2, "at least 1"},
		{[]string{"netns", "del", "1"}, 2, "two arguments"},
		{[]string{"netns", "add", "0"}, 2, "at least 1"},
		{[]string{"netns", "add", "-3"}, 2, "negative"},
		{[]string{"netns", "add", "x"}, 2, "not a decimal number"},
		{[]string{"netns", "add", "1", "--template", "bad/%d"}, 2, `contains '/'`},
		{[]string{"netns", "add", "1", "--template", "nodigits"}, 2, "no %d"},
		{[]string{"netns", "add", "1", "--template", strings.Repeat("n", 64) + "%d"}, 2, "leaves no room"},
		{[]string{"netns", "add", "1", "--links", "-1"}, 2, "--links"},
		{[]string{"netns", "add", "1", "--veth", "--veth-name", "a%d%d"}, 2, "exactly one %d"},
		{[]string{"--netns", "nope", "list"}, 1, "no such network namespace: nope"},
		{[]string{"--netns", "nope", "add", "1"}, 1, "no such network namespace: nope"},
		{[]string{"--netns", "ndst1", "del", "1", "1"}, 1, "holds only lo"},
		{[]string{"--netns", "a..b", "list"}, 2, `".."`},
		{[]string{"--netns", strings.Repeat("x", 65), "list"}, 2, "at most 64"},
		{[]string{"--netns", "ndst1", "netns", "del", "1", "2"}, 2, "--netns would be ignored"},
	} {
		for _, asJSON := range []bool{false, true} {
			args := tc.args
			if asJSON {
				args = append([]string{"--json"}, args...)
			}
			out, errOut, code := ndstRun(t, state, args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("ndst %s = exit %d, stderr %q; want exit %d and an error containing %q", strings.Join(args, " "), code, errOut, tc.code, tc.want)
			}
			if asJSON {
				var m map[string]any
				if err := json.Unmarshal([]byte(out), &m); err != nil || m["result"] != "error" {
					t.Errorf("ndst %s printed %q; want one JSON object with result error", strings.Join(args, " "), out)
				}
			}
		}
	}
	after, _ := os.ReadFile(state)
	if !bytes.Equal(before, after) {
		t.Error("bad input changed the state file")
	}
}

// TestNetnsOtherBackends: the module backend has no namespace commands
// yet, and says so before opening anything.
func TestNetnsOtherBackends(t *testing.T) {
	for _, args := range [][]string{{"--backend", "module", "netns", "list"}, {"--backend", "module", "netns", "add", "1"}} {
		var o, e bytes.Buffer
		code := run(args, &o, &e)
		if code != 2 || !strings.Contains(e.String(), "has no namespace commands yet") {
			t.Errorf("ndst %s = exit %d, stderr %q; want exit 2, no namespace commands yet", strings.Join(args, " "), code, e.String())
		}
	}
}

func TestNetnsRecreateDuringAStuckCleanup(t *testing.T) {
	// The moby symptom by era: with lo held forever, the cleanup never
	// ends; on 2.6.32 it holds net_mutex meanwhile, so a new namespace
	// waits for it (and the result says so); on 6.18 new namespaces do not
	// wait. Either way the run is stuck, exit 1, and the state unchanged.
	for _, tc := range []struct {
		profile, want string
	}{
		{"2.6.32", "0 of 2 new namespaces created while the cleanup ran; the next one waited"},
		{"6.18", "2 of 2 new namespaces created while the cleanup ran"},
	} {
		state := tempState(t)
		if _, errOut, code := ndstRun(t, state, "--profile", tc.profile, "netns", "add", "3"); code != 0 {
			t.Fatalf("netns add 3 = exit %d: %s", code, errOut)
		}
		before, _ := os.ReadFile(state)
		out, _, code := ndstRun(t, state, "--profile", tc.profile, "--hold", "dst@lo=forever", "--give-up", "20s", "netns", "del", "1", "3", "--recreate", "2")
		if code != 1 || !strings.Contains(out, "result:  stuck") || !strings.Contains(out, tc.want) {
			t.Errorf("%s: netns del --recreate 2 with lo held = exit %d:\n%s\nwant stuck and %q", tc.profile, code, out, tc.want)
		}
		if tc.profile == "6.18" && !strings.Contains(out, "none waited for the cleanup") {
			t.Errorf("6.18: the creations should not wait for the cleanup:\n%s", out)
		}
		if after, _ := os.ReadFile(state); !bytes.Equal(before, after) {
			t.Errorf("%s: a stuck run changed the state file", tc.profile)
		}
	}
	state := tempState(t)
	ndstRun(t, state, "netns", "add", "1")
	if _, errOut, code := ndstRun(t, state, "netns", "del", "1", "1", "--recreate", "-1"); code != 2 || !strings.Contains(errOut, "--recreate -1") {
		t.Errorf("--recreate -1 = exit %d, %q; want a usage error", code, errOut)
	}
	// Done: the new namespaces are there afterwards.
	if _, _, code := ndstRun(t, state, "netns", "del", "1", "1", "--recreate", "2"); code != 0 {
		t.Fatalf("netns del --recreate 2 = exit %d", code)
	}
	if out, _, _ := ndstRun(t, state, "netns", "list"); !strings.Contains(out, "ndst2") || !strings.Contains(out, "ndst3") || strings.Contains(out, "ndst1 ") {
		t.Errorf("after del 1 1 --recreate 2, want ndst2 and ndst3, not ndst1:\n%s", out)
	}
}
