package main

import (
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
	if code != 1 || !strings.Contains(out, "kernel log: 8 messages (-v prints them)") || strings.Contains(out, "soft lockup - CPU#0 stuck for 60s! [ndst:") {
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
