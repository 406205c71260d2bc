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
