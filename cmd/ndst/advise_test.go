package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// adviseMachine is a fixed machine, so the goldens do not depend on the
// host that runs the tests: this project's (line 6.18, HZ 250, 2 CPUs).
var adviseMachine = []string{"--profile", "6.18", "--hz", "250", "--cpus", "2", "--preempt", "none"}

// TestAdviseGolden fixes advise's answers for the workloads the README
// shows: 1000 devices one by one and in one batch, 100 pods with a veth
// deleted one at a time, and a PREEMPT_RT machine (JSON).
func TestAdviseGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"advise-1000-one-by-one.txt", []string{"advise", "--count", "1000", "--one-by-one"}},
		{"advise-1000-batched.txt", []string{"advise", "--count", "1000"}},
		{"advise-100-pods.txt", []string{"advise", "--netns-count", "100", "--veth", "--one-by-one"}},
	} {
		out, errOut, code := ndstRun(t, tempState(t), append(cloneArgs(adviseMachine), tc.args...)...)
		if code != 0 {
			t.Fatalf("%v = exit %d: %s", tc.args, code, errOut)
		}
		golden(t, tc.golden, out)
	}
	args := []string{"--json", "--profile", "6.1", "--hz", "250", "--cpus", "2", "--preempt", "rt", "advise", "--count", "100", "--one-by-one"}
	out, errOut, code := ndstRun(t, tempState(t), args...)
	if code != 0 {
		t.Fatalf("%v = exit %d: %s", args, code, errOut)
	}
	var a struct {
		Op     string `json:"op"`
		Levers []struct {
			Kind, Setting, Path, Value, Current string
			Runtime                             bool  `json:"runtime_settable"`
			Before                              int64 `json:"predicted_before_ns"`
			After                               int64 `json:"predicted_after_ns"`
		} `json:"levers"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.Op != "advise" || strings.Count(out, "\n") != 1 {
		t.Fatalf("advise --json: %v, want one JSON object:\n%s", err, out)
	}
	found := false
	for _, l := range a.Levers {
		if l.Setting == "rcupdate.rcu_normal=0" {
			found = l.Runtime && l.Path == "/sys/kernel/rcu_normal" && l.Value == "0" && l.Current == "1" && l.After < l.Before
		}
	}
	if !found {
		t.Errorf("advise on 6.1 PREEMPT_RT: want rcupdate.rcu_normal=0 as a runtime lever with its file, value, current value and a shorter time:\n%s", out)
	}
	golden(t, "advise-6.1-rt.json", maskWall(out))
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

// TestAdviseErrors: bad input is a usage error naming the problem.
func TestAdviseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"advise", "--veth"}, "--veth describes a namespace workload"},
		{[]string{"advise", "--count", "0"}, "--count: 0 is out of range"},
		{[]string{"advise", "--netns-count", "10", "--count", "5"}, "give one of them"},
		{[]string{"advise", "--runs", "0"}, "--runs: 0 is out of range"},
		{[]string{"--param", "rcutree.nosuch=1", "advise"}, `unknown knob "rcutree.nosuch"`},
		{[]string{"--param", "rcutree.blimit=0", "advise"}, "out of range"},
		{[]string{"--profile", "5.10", "--param", "rcutree.rcu_normal_wake_from_gp=1", "advise"}, "kernel 5.10 lacks it"},
		{[]string{"--backend", "sim", "advise", "--verify"}, "--verify"},
		{[]string{"--kind", "veth", "advise"}, "--kind would be ignored"},
	} {
		_, errOut, code := ndstRun(t, tempState(t), append(cloneArgs(adviseMachine), tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v = exit %d, %q; want exit 2 and one line containing %q", tc.args, code, errOut, tc.want)
		}
	}
}
