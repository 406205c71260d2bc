package main

import (
	"strings"
	"testing"
)

// TestWakePlacement: each wake-up is counted by where it went and whether
// the other CPU ran its idle task then; wake-ups of other tasks and those
// before every CPU's task is known are not counted as placed.
func TestWakePlacement(t *testing.T) {
	const trace = `
            ndst  100 [000]  10.000001: sched:sched_waking: comm=rcu_exp_gp_kthr pid=17 prio=120 target_cpu=000
         swapper    0 [001]  10.000002: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
            ndst  100 [000]  10.000003: sched:sched_switch: prev_comm=ndst prev_pid=100 prev_prio=120 prev_state=R ==> next_comm=ndst next_pid=100 next_prio=120
            ndst  100 [000]  10.000004: sched:sched_waking: comm=rcu_exp_gp_kthr pid=17 prio=120 target_cpu=000
            ndst  100 [000]  10.000005: sched:sched_waking: comm=rcu_exp_gp_kthr pid=17 prio=120 target_cpu=001
            ndst  100 [000]  10.000006: sched:sched_waking: comm=kworker/0:1 pid=18 prio=120 target_cpu=001
         swapper    0 [001]  10.000007: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cleanup next_pid=30 next_prio=120
            ndst  100 [000]  10.000008: sched:sched_waking: comm=rcu_exp_gp_kthr pid=17 prio=120 target_cpu=000
`
	tr, err := Parse(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	got := WakePlacement(tr.Events, "rcu_exp_gp_kthread_worker")
	want := Placement{Task: "rcu_exp_gp_kthread_worker", SameIdle: 1, SameBusy: 1, OtherIdle: 1, Unknown: 1}
	if got != want {
		t.Errorf("WakePlacement = %+v, want %+v", got, want)
	}
}
