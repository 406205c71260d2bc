package nlbackend

import (
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/wqtrace"
)

// TestDrainedBy: the run that takes the last namespace may start before its
// death is seen (the delete queues it, the cleanup worker starts on the
// other CPU, then the call returns); such a run ends the wait once it has
// ended and no newer run started, and a run after the death always does.
func TestDrainedBy(t *testing.T) {
	ms := int64(time.Millisecond)
	floor, last := 100*ms, 110*ms
	cases := []struct {
		name string
		runs []wqtrace.Run
		now  int64
		want bool
	}{
		{"no run", nil, 1000 * ms, false},
		{"a run after the death, ended", []wqtrace.Run{{Start: 120 * ms, End: 130 * ms}}, 131 * ms, true},
		{"a run after the death, running", []wqtrace.Run{{Start: 120 * ms}}, 500 * ms, false},
		{"started inside the call, ended after it, settled", []wqtrace.Run{{Start: 105 * ms, End: 140 * ms}}, 200 * ms, true},
		{"started inside the call, not yet settled", []wqtrace.Run{{Start: 105 * ms, End: 140 * ms}}, 150 * ms, false},
		{"started inside the call, ended before the death", []wqtrace.Run{{Start: 105 * ms, End: 108 * ms}}, 500 * ms, false},
		{"before the call", []wqtrace.Run{{Start: 90 * ms, End: 200 * ms}}, 500 * ms, false},
		{"a newer run still running", []wqtrace.Run{{Start: 105 * ms, End: 140 * ms}, {Start: 108 * ms}}, 500 * ms, false},
	}
	for _, c := range cases {
		if got := drainedBy(c.runs, last, floor, c.now); got != c.want {
			t.Errorf("%s: drainedBy = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBacklogFromRunsLastRunStartedInTheCall: the last namespace, queued by
// its delete before the call returned, is taken by the run that started
// inside that call, and the cleanup is drained at that run's end (it was
// left unknown, and the run count one short).
func TestBacklogFromRunsLastRunStartedInTheCall(t *testing.T) {
	ms := int64(time.Millisecond)
	deaths := []int64{10 * ms, 20 * ms, 110 * ms}
	runs := []wqtrace.Run{{Start: 30 * ms, End: 40 * ms}, {Start: 105 * ms, End: 140 * ms}}
	_, _, _, drained, batches, sizes, _ := backlogFromRuns(deaths, runs, 0, 100*ms)
	if drained != 140*ms || batches != 2 || sizes[0] != 2 || sizes[1] != 1 {
		t.Errorf("drained %v, %d runs of %v; want 140ms, 2 runs of [2 1]", time.Duration(drained), batches, sizes)
	}
	// Without a floor (no wait for the drain), the last death stays unknown.
	if _, _, _, drained, _, _, _ := backlogFromRuns(deaths, runs, 0, -1); drained != -1 {
		t.Errorf("without a floor: drained %v, want unknown", time.Duration(drained))
	}
}
