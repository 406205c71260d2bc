package nlbackend

import (
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

func TestJudge(t *testing.T) {
	gp := 8 * time.Millisecond
	for _, tc := range []struct {
		name string
		e    evidence
		kind string
		why  []string
	}{
		{"wait loop, long", evidence{waited: 5 * time.Second, gp: gp, gpSamples: 5, state: phase.WaitLoop}, ndst.VerdictLeak,
			[]string{"leak:", "5.000 s", "625 times the 8.00 ms", "netdev_wait_allrefs"}},
		{"wait loop, short", evidence{waited: 500 * time.Millisecond, gp: gp, gpSamples: 5, state: phase.WaitLoop}, ndst.VerdictSlow,
			[]string{"slow:", "only 62 times", "longer --give-up"}},
		{"kernel lines, barrier at the instant", evidence{waited: 12 * time.Second, gp: gp, gpSamples: 5, state: phase.Barrier, waiting: 1}, ndst.VerdictLeak,
			[]string{"leak:", "the kernel said 1 time"}},
		{"still unregistering", evidence{waited: 5 * time.Second, gp: gp, gpSamples: 5, state: phase.Unregister}, ndst.VerdictSlow,
			[]string{"slow:", "still in unregister", "not waiting for a reference"}},
		{"RTNL", evidence{waited: 5 * time.Second, gp: gp, gpSamples: 5, state: phase.RTNL}, ndst.VerdictSlow,
			[]string{"waiting for RTNL"}},
		{"no stack, long", evidence{waited: 5 * time.Second, gp: gp, gpSamples: 5}, ndst.VerdictLeak,
			[]string{"could not be read"}},
		{"no grace period, kernel lines", evidence{waited: 11 * time.Second, gpErr: "membarrier is not available", waiting: 1}, ndst.VerdictLeak,
			[]string{"could not be timed here (membarrier is not available)"}},
		{"one CPU", evidence{waited: 3 * time.Second, gp: 4 * time.Millisecond, state: phase.WaitLoop}, ndst.VerdictLeak,
			[]string{"750 times the 4.00 ms", "one CPU"}},
		{"no grace period, no lines", evidence{waited: 5 * time.Second, gpErr: "no", state: phase.WaitLoop}, ndst.VerdictSlow,
			[]string{"could not be timed"}},
	} {
		v := judge(tc.e)
		if v.Kind != tc.kind || v.WaitedNS != int64(tc.e.waited) || v.LeakRatio != LeakRatio {
			t.Errorf("%s: judge = %+v, want %s", tc.name, v, tc.kind)
		}
		for _, w := range tc.why {
			if !strings.Contains(v.Why, w) {
				t.Errorf("%s: why %q lacks %q", tc.name, v.Why, w)
			}
		}
		if (tc.e.gp > 0) != (v.GracePeriodNS != nil) {
			t.Errorf("%s: grace period %v, want it exactly when measured", tc.name, v.GracePeriodNS)
		}
	}
}

func TestState(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{phase.Barrier, phase.Barrier, phase.WaitLoop}, phase.WaitLoop},
		{[]string{phase.Barrier, "", phase.Barrier, phase.Unregister}, phase.Barrier},
		{[]string{"", ""}, ""},
		{nil, ""},
	} {
		if got := state(tc.in); got != tc.want {
			t.Errorf("state(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
