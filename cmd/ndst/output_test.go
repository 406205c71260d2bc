package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// sampleResult is a del result with every field the text output renders,
// so that its layout is tested apart from the emulated kernel's figures.
func sampleResult() *ndst.Result {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	virt, seed := int64(253_000_000_000), uint64(1)
	return &ndst.Result{
		Op: "del", Backend: "sim", Count: 1000, VirtualNS: &virt, WallNS: 3_571_000,
		Strategy: str("msleep250"), Profile: str("2.6.31"), HZ: num(1000), CPUs: num(1), Preempt: str("none"),
		Seed: &seed, Result: ndst.ResultOK, CostTable: str("default"),
		Latency:  &ndst.Latency{MinNS: 252_994_000, MedianNS: 253_000_000, P99NS: 253_005_000, MaxNS: 253_016_000},
		Counters: map[string]int64{"grace_periods": 1000, "sleeps": 1000, "cpu_busy_ns": 2_584_000_000, "wakeups": 1066},
		Explain: []string{
			"each device waited for one msleep(250): 253ms per device, about 4 devices/s",
			"--strategy tick would wait one jiffy at a time instead",
		},
		Notes:     []string{"a remark"},
		KernelLog: []string{"[   10.003002] unregister_netdevice: waiting for dummy0 to become free. Usage count = 2"},
	}
}

func TestResultTextLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    textDetail
	}{
		{"result-summary.txt", textDetail{}},
		{"result-counters.txt", textDetail{counters: true}},
		{"result-verbose.txt", textDetail{counters: true, kernelLog: true}},
	} {
		var b strings.Builder
		if err := writeResultText(&b, sampleResult(), tc.v); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.name, b.String())
	}
}

func TestResultTextOmitsWhatIsEmpty(t *testing.T) {
	r := sampleResult()
	r.KernelLog, r.Explain, r.Notes, r.CostTable = nil, nil, nil, nil
	var b strings.Builder
	if err := writeResultText(&b, r, textDetail{counters: true, kernelLog: true}); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"kernel log", "why:", "note:", "cost table"} {
		if strings.Contains(b.String(), absent) {
			t.Errorf("text output has %q although the result has none:\n%s", absent, b.String())
		}
	}
}

// TestKernelLogNotOnStderr: -v prints the kernel log once, in the result,
// and nothing of it on stderr; without -v the result says it exists.
func TestKernelLogNotOnStderr(t *testing.T) {
	state := tempState(t)
	ndstRun(t, state, "add", "10")
	out, _, code := ndstRun(t, state, "--profile", "2.6.33", "--strategy", "expedited", "del", "1", "10")
	if code != 1 || !strings.Contains(out, "kernel log: 9 messages (-v prints them)") || strings.Contains(out, "soft lockup - CPU#0 stuck for 61s! [ndst:") {
		t.Errorf("livelock without -v = exit %d:\n%s\nwant exit 1 and only a mention of the kernel log", code, out)
	}
	golden(t, "livelock.txt", maskWall(out))
	out, errOut, code := ndstRun(t, state, "-v", "--profile", "2.6.33", "--strategy", "expedited", "del", "1", "10")
	if code != 1 || strings.Count(out, "BUG: soft lockup") != 2 || strings.Contains(errOut, "soft lockup") {
		t.Errorf("livelock with -v = exit %d, stdout:\n%s\nstderr:\n%s\nwant the kernel log once on stdout (and the result line), none on stderr", code, out, errOut)
	}
	golden(t, "livelock-v.txt", maskWall(out))
}

// TestJSONErrorGolden fixes the shape of the JSON error object.
func TestJSONErrorGolden(t *testing.T) {
	var all strings.Builder
	for _, args := range [][]string{
		{"--json", "add", "0"},
		{"--json", "--bogus", "add", "1"},
		{"--json", "--hz", "0", "add", "1"},
		{"--json", "del", "1", "10"},
	} {
		out, _, _ := ndstRunArgs(append([]string{"--state", tempState(t)}, args...)...)
		all.WriteString(out)
	}
	golden(t, "errors.json", all.String())
}

// TestProfilesGolden fixes `ndst profiles`: every line with its changes.
func TestProfilesGolden(t *testing.T) {
	out, errOut, code := ndstRun(t, tempState(t), "profiles")
	if code != 0 {
		t.Fatalf("ndst profiles = exit %d: %s", code, errOut)
	}
	golden(t, "profiles.txt", out)
	out, _, code = ndstRun(t, tempState(t), "--json", "profiles")
	if code != 0 || !strings.Contains(out, `"name":"6.18"`) || !strings.Contains(out, `"commit":"ef885afbf8a3"`) {
		t.Errorf("ndst --json profiles = exit %d, %.300s; want every line with its commits", code, out)
	}
}

// TestStuckGolden fixes a stuck run: a held reference past --give-up is a
// result of its own (exit 1), naming the device, its usage count and its
// holders, with the kernel's warnings in the log, and the state unchanged.
func TestStuckGolden(t *testing.T) {
	state := tempState(t)
	ndstRun(t, state, "--profile", "6.18", "--hz", "250", "add", "3")
	before, _ := os.ReadFile(state)
	args := []string{"--profile", "6.18", "--hz", "250", "--hold", "dst@dummy1=forever", "--give-up", "30s"}
	out, _, code := ndstRun(t, state, append(append([]string{"-v"}, args...), "del", "1", "3")...)
	if code != 1 || !strings.Contains(out, "result:  stuck") || !strings.Contains(out, "Usage count = 2") {
		t.Errorf("stuck del = exit %d:\n%s\nwant exit 1, result stuck and the kernel's warning", code, out)
	}
	golden(t, "stuck-v.txt", maskWall(out))
	out, _, code = ndstRun(t, state, append(append([]string{"--json"}, args...), "del", "1", "3")...)
	var r struct {
		Result string `json:"result"`
		Stuck  []struct {
			Name       string `json:"name"`
			UsageCount int    `json:"usage_count"`
			Holders    string `json:"holders"`
		} `json:"stuck"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 || r.Result != "stuck" || len(r.Stuck) != 1 ||
		r.Stuck[0].Name != "dummy1" || r.Stuck[0].UsageCount != 2 || !strings.Contains(r.Stuck[0].Holders, "dst") {
		t.Errorf("stuck del --json = exit %d, %s (%v); want result stuck naming dummy1, usage count 2, held by dst", code, out, err)
	}
	if after, _ := os.ReadFile(state); !bytes.Equal(before, after) {
		t.Errorf("a stuck del changed the state file")
	}
	for _, bad := range [][]string{
		{"--hold", "bogus=1s", "del", "1", "3"},
		{"--hold", "dst=soon", "del", "1", "3"},
		{"--hold", "dst@dummy9=1s", "del", "1", "3"},
		{"--give-up", "0s", "del", "1", "3"},
	} {
		if _, errOut, code := ndstRun(t, state, bad...); code != 2 {
			t.Errorf("ndst %v = exit %d (%s), want 2", bad, code, errOut)
		}
	}
}
