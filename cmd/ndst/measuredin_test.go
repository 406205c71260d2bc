package main

import (
	"strings"
	"testing"
)

// predict --from-guest A --measured-in B predicts B's deletes with A's
// calibration, and refuses B when it is another kernel or machine.
func TestPredictMeasuredIn(t *testing.T) {
	const dir = "../../bench/testdata/guests/"
	out, errOut, code := ndstRunArgs("predict", "--from-guest", dir+"6.1-1-cpu-none.log", "--measured-in", dir+"6.1-1-cpu-none.log")
	if code != 0 || !strings.Contains(out, "del  1000    one-by-one") {
		t.Errorf("predict --measured-in the same guest = exit %d, %q, %q; want its table", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--from-guest", dir + "6.1-1-cpu-none.log", "--measured-in", dir + "6.1-1-cpu-full.log"},
			"its guest has preempt=full, the calibrated one preempt=none"},
		{[]string{"predict", "--from-guest", dir + "6.1-1-cpu-none.log", "--measured-in", dir + "6.1-2-cpu-none.log"},
			"its guest has cpus=2, the calibrated one cpus=1"},
		{[]string{"predict", "--measured-in", dir + "6.1-1-cpu-none.log"}, "--measured-in goes with --from-guest"},
		{[]string{"predict", "--from-guest", dir + "6.1-1-cpu-none.log", "--measured-in", dir + "no-such.log"}, "--measured-in: "},
	} {
		out, errOut, code := ndstRunArgs(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ndst %q = exit %d, %q, %q; want exit 2 and one line containing %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// With --param, --measured-in is a lever's second boot: both boots are
// predicted with the first one's calibration, the second with the knob set,
// and the table compares them; a knob the guest's machine cannot take, or
// --param without a second boot, is a usage error.
func TestPredictLever(t *testing.T) {
	const dir = "../../bench/testdata/guests/"
	g := dir + "6.1-1-cpu-none.log"
	out, errOut, code := ndstRunArgs("--param", "rcu_nocbs=all", "predict", "--from-guest", g, "--measured-in", g)
	if code != 0 || !strings.Contains(out, "lever: rcu_nocbs=all") || !strings.Contains(out, "1000  one-by-one") || !strings.Contains(out, "deletes predicted within 20% with the lever") {
		t.Errorf("predict --param --measured-in = exit %d, %q, %q; want the lever table", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--param", "rcu_nocbs=all", "predict", "--from-guest", g}, "--param would be ignored: predict emulates the calibrated host as it was"},
		{[]string{"--param", "rcu_nocbs=all", "predict"}, "--param would be ignored"},
		{[]string{"--param", "rcu_nocbs=5", "predict", "--from-guest", g, "--measured-in", g}, "CPU 5 does not exist on 1 CPU(s)"},
		{[]string{"--param", "rcu_nocbz=5", "predict", "--from-guest", g, "--measured-in", g}, `unknown knob "rcu_nocbz"`},
	} {
		out, errOut, code := ndstRunArgs(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ndst %q = exit %d, %q, %q; want exit 2 and one line containing %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
