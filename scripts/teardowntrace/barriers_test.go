package main

import (
	"strings"
	"testing"
	"time"
)

// One cleanup_net run of a real trace (this host, 6.18, two pods' worth of
// scheduler events cut down to the worker's and the GP kthread's): its
// first rcu_barrier() wait saw one grace period, its second two.
func TestCleanupRunsFromTrace(t *testing.T) {
	tr, err := ReadTrace("testdata/tracefs-pods-run.txt")
	if err != nil {
		t.Fatal(err)
	}
	runs := CleanupRuns(tr.Events, "rcu_preempt", int64(2*time.Millisecond), tickNsec(250))
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if len(r.Waits) != 2 || r.Waits[0].GPWakeups != 2 || r.Waits[1].GPWakeups != 3 {
		t.Fatalf("waits %+v, want two with 2 and 3 GP kthread wakeups", r.Waits)
	}
	if len(r.CPUs) != 1 || r.CPUs[0] != 1 {
		t.Fatalf("worker CPUs %v, want [1]", r.CPUs)
	}
	var b strings.Builder
	ReportBarriers(&b, runs, false)
	for _, want := range []string{"cleanup_net runs: 1", "long waits of the worker (rcu_barrier): 2", " 2: 1 3: 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// A trace without cleanup_net runs says so.
func TestCleanupRunsNone(t *testing.T) {
	var b strings.Builder
	ReportBarriers(&b, CleanupRuns(nil, "rcu_preempt", 1, 1), true)
	if !strings.Contains(b.String(), "no cleanup_net run") {
		t.Fatal(b.String())
	}
}
