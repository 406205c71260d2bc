package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// ndstRun runs the CLI in-process with a private state file.
func ndstRun(t *testing.T, state string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	full := append([]string{"--state", state}, args...)
	code = run(full, &o, &e)
	return o.String(), e.String(), code
}

func tempState(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state")
}

var wallRE = regexp.MustCompile(`(?m)^wall:.*$|"wall_ns":\d+`)

// maskWall removes the only non-deterministic figure from the output.
func maskWall(s string) string {
	return wallRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "wall:") {
			return "wall:    <masked>"
		}
		return `"wall_ns":0`
	})
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run go test -update)", path, err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test ./cmd/ndst -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestReproduce2009Defaults(t *testing.T) {
	state := tempState(t)
	out, errOut, code := ndstRun(t, state, "add", "1000")
	if code != 0 {
		t.Fatalf("add 1000 = exit %d, stderr %q", code, errOut)
	}
	golden(t, "add1000.txt", maskWall(out))
	out, errOut, code = ndstRun(t, state, "del", "1", "1000")
	if code != 0 {
		t.Fatalf("del 1 1000 = exit %d, stderr %q", code, errOut)
	}
	golden(t, "del1-1000.txt", maskWall(out))
	if strings.Contains(out, "counters") || strings.Contains(out, "kernel log") {
		t.Errorf("del 1 1000 without -v shows counters or a kernel log:\n%s", out)
	}
	ndstRun(t, state, "add", "1000")
	out, _, _ = ndstRun(t, state, "-v", "del", "1", "1000")
	golden(t, "del1-1000-v.txt", maskWall(out))
}

func TestJSONContract(t *testing.T) {
	state := tempState(t)
	if _, e, c := ndstRun(t, state, "add", "50"); c != 0 {
		t.Fatalf("add 50 = %d %s", c, e)
	}
	out, _, code := ndstRun(t, state, "--json", "--strategy", "tick", "del", "1", "50")
	if code != 0 {
		t.Fatalf("del = exit %d", code)
	}
	golden(t, "del-tick.json", maskWall(out))
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("del --json printed %q: %v", out, err)
	}
	for _, k := range []string{"op", "backend", "count", "virtual_ns", "wall_ns", "strategy", "profile", "hz", "cpus", "preempt", "result"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON result lacks %q: %s", k, out)
		}
	}
	if m["result"] != "ok" || m["count"] != float64(50) || m["strategy"] != "tick" {
		t.Errorf("JSON result = %v, want result ok, count 50, strategy tick", m)
	}
}

func TestSameSeedSameOutput(t *testing.T) {
	outs := make([]string, 2)
	for i := range outs {
		state := tempState(t)
		ndstRun(t, state, "--cpus", "2", "--profile", "6.18", "add", "300")
		o, _, _ := ndstRun(t, state, "--cpus", "2", "--profile", "6.18", "--seed", "42", "--json", "del", "1", "300", "--one-by-one")
		outs[i] = maskWall(o)
	}
	if outs[0] != outs[1] {
		t.Errorf("two runs with seed 42 differ:\n%s\n%s", outs[0], outs[1])
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	state := tempState(t)
	if _, e, c := ndstRun(t, state, "add", "10"); c != 0 {
		t.Fatalf("add 10 = %d %s", c, e)
	}
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		msg  string // substring of stderr
	}{
		{[]string{"add", "0"}, 2, "at least 1"},
		{[]string{"add", "-5"}, 2, "negative"},
		{[]string{"add", "abc"}, 2, "not a decimal"},
		{[]string{"add", "99999999999"}, 2, "at most 16777216"},
		{[]string{"add", "12x"}, 2, "not a decimal"},
		{[]string{"add"}, 2, "want one argument"},
		{[]string{"del", "5", "1"}, 2, "reversed"},
		{[]string{"del", "1"}, 2, "want two arguments"},
		{[]string{"del", "0", "3"}, 2, "at least 1"},
		{[]string{"del", "500", "600"}, 1, "no device in range"},
		{[]string{"--name", "eth", "add", "1"}, 2, "no %d"},
		{[]string{"--name", "a%d%d", "add", "1"}, 2, "exactly one %d"},
		{[]string{"--name", "averyverylongname%d", "add", "1"}, 2, "at most 15"},
		{[]string{"--name", "bad/%d", "add", "1"}, 2, "refuses"},
		{[]string{"--strategy", "bogus", "del", "1", "10"}, 2, "unknown strategy"},
		{[]string{"--profile", "2.4", "add", "1"}, 2, "unknown profile"},
		{[]string{"--preempt", "sometimes", "add", "1"}, 2, "unknown preemption model"},
		{[]string{"--hz", "0", "add", "1"}, 2, "--hz"},
		{[]string{"--cpus", "0", "add", "1"}, 2, "--cpus"},
		{[]string{"--rcu", "tiny", "--cpus", "2", "add", "1"}, 2, "tiny"},
		{[]string{"--backend", "carrier-pigeon", "add", "1"}, 2, "unknown backend"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"--costs", "/nonexistent/costs.json", "add", "1"}, 2, "cost table"},
		{[]string{"--netns", "", "add", "1"}, 2, "--netns"},
		{[]string{"--watchdog", "10ms", "add", "1"}, 2, "--watchdog"},
	}
	for _, tc := range tests {
		_, errOut, code := ndstRun(t, state, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("ndst %s = exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.msg)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("ndst %s printed more than one line on stderr: %q", strings.Join(tc.args, " "), errOut)
		}
		after, _ := os.ReadFile(state)
		if !bytes.Equal(before, after) {
			t.Fatalf("ndst %s changed the state file", strings.Join(tc.args, " "))
		}
	}
}

func TestCorruptStateIsReportedNotReplaced(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"garbage after the magic", "NDSTSF\x01\x00 this is not a state file\n"},
		{"truncated", ""}, // filled below from a real file
	} {
		state := tempState(t)
		ndstRun(t, state, "add", "20")
		good, _ := os.ReadFile(state)
		bad := []byte(tc.content)
		if tc.name == "truncated" {
			bad = good[:len(good)/2]
		}
		if err := os.WriteFile(state, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := ndstRun(t, state, "add", "1")
		if code != 1 || !strings.Contains(errOut, "corrupt") || !strings.Contains(errOut, "ndst --state "+state+" reset") {
			t.Errorf("%s state: add 1 = exit %d, stderr %q; want exit 1 naming the corruption and the fix", tc.name, code, errOut)
		}
		after, _ := os.ReadFile(state)
		if !bytes.Equal(after, bad) {
			t.Errorf("%s state: the corrupt file was modified", tc.name)
		}
	}
}

func TestExpeditedLivelockIsAResult(t *testing.T) {
	state := tempState(t)
	ndstRun(t, state, "add", "100")
	before, _ := os.ReadFile(state)
	// 2.6.33: the route-cache flush, whose cond_resched() lets 2.6.31/32
	// escape once a second, is no longer in the rebroadcast.
	out, _, code := ndstRun(t, state, "--json", "--profile", "2.6.33", "--strategy", "expedited", "del", "1", "100")
	if code != 1 {
		t.Fatalf("expedited del = exit %d, want 1", code)
	}
	var r struct {
		Result    string   `json:"result"`
		Error     string   `json:"error"`
		Notes     []string `json:"notes"`
		KernelLog []string `json:"kernel_log"`
		VirtualNS int64    `json:"virtual_ns"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if r.Result != "livelock" || !strings.Contains(r.Error, "soft lockup") {
		t.Errorf("result = %q, error = %q; want livelock with the watchdog's message", r.Result, r.Error)
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "0 of 100 devices freed") {
		t.Errorf("notes = %q, want how far the teardown got", r.Notes)
	}
	joined := strings.Join(r.KernelLog, "\n")
	if !strings.Contains(joined, "waiting for dummy0 to become free. Usage count = 1") {
		t.Errorf("kernel log = %q, want the 10 s unregister_netdevice warning", joined)
	}
	after, _ := os.ReadFile(state)
	if !bytes.Equal(before, after) {
		t.Errorf("a livelocked del changed the state file")
	}
	// The same range is still there and deletes fine with a working strategy.
	if _, e, c := ndstRun(t, state, "--strategy", "tick", "del", "1", "100"); c != 0 {
		t.Errorf("del after the livelock = exit %d: %s", c, e)
	}
}

func TestListShowsDevices(t *testing.T) {
	state := tempState(t)
	ndstRun(t, state, "add", "3")
	out, _, code := ndstRun(t, state, "list", "--page-size", "2")
	if code != 0 {
		t.Fatalf("list = %d", code)
	}
	golden(t, "list3.txt", out)
}

func TestResetRemovesACorruptState(t *testing.T) {
	state := tempState(t)
	if err := os.WriteFile(state, []byte("NDSTSF garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, e, c := ndstRun(t, state, "reset"); c != 0 || !strings.Contains(out, "moved it to "+state+".corrupt") {
		t.Fatalf("reset = exit %d: %q %q; want the corrupt file moved to %s.corrupt", c, out, e, state)
	}
	if b, _ := os.ReadFile(state + ".corrupt"); string(b) != "NDSTSF garbage" {
		t.Errorf("%s.corrupt = %q, want the corrupt file's bytes", state, b)
	}
	out, e, c := ndstRun(t, state, "--json", "add", "2")
	if c != 0 || !strings.Contains(out, `"count":2`) {
		t.Errorf("add after reset = exit %d, %q %q", c, out, e)
	}
}

func TestListReadersAgree(t *testing.T) {
	state := tempState(t)
	ndstRun(t, state, "add", "700")
	ndstRun(t, state, "del", "100", "350") // 251 gone, holes in every bucket
	ndstRun(t, state, "add", "40")
	cursor, _, c1 := ndstRun(t, state, "--json", "list", "--page-size", "28")
	naive, _, c2 := ndstRun(t, state, "--json", "list", "--page-size", "28", "--reader", "naive")
	if c1 != 0 || c2 != 0 || cursor != naive || !strings.Contains(cursor, `"count":489`) {
		t.Errorf("list readers disagree or miscount (exit %d, %d):\ncursor %.200s\nnaive  %.200s", c1, c2, cursor, naive)
	}
	if _, e, c := ndstRun(t, state, "list", "--reader", "fast"); c != 2 || !strings.Contains(e, "--reader") {
		t.Errorf("list --reader fast = exit %d %q, want a usage error", c, e)
	}
}

func TestReadmeCommandsRepeat(t *testing.T) {
	// The README's first command must work again and again on one state.
	state := tempState(t)
	for i := range 3 {
		if _, e, c := ndstRun(t, state, "add", "50"); c != 0 {
			t.Fatalf("round %d: add 50 = %d %s", i, c, e)
		}
		if out, e, c := ndstRun(t, state, "--json", "--strategy", "tick", "del", "1", "50"); c != 0 || !strings.Contains(out, `"count":50`) {
			t.Fatalf("round %d: del 1 50 = %d %q %s", i, c, out, e)
		}
	}
}
