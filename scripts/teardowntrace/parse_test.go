package main

import (
	"strings"
	"testing"
)

func TestParseLines(t *testing.T) {
	in := strings.Join([]string{
		"# tracer: nop",
		"# entries-in-buffer/entries-written: 12/12   #P:2",
		// tracefs
		"              ip-32401   [000] .....  4906.996338: sys_sendmsg(fd: 3, msg: 0x7ffe9509cda0, flags: 0)",
		"          <idle>-0       [000] ..s1.  4907.000173: softirq_entry: vec=9 [action=RCU]",
		"     rcu_preempt-15      [000] d..1.  4907.000178: timer_start: timer=00000000ec8523b3 function=process_timeout expires=4296118983 [timeout=1] bucket_expiry=4296118984 cpu=0 idx=8 flags=",
		" kworker/u8:0-events-12  [001] d.h1.  4907.000200: local_timer_entry: vector=236",
		"              ip-32401   [000] .....  4907.012172: sys_sendmsg -> 0x20",
		// perf script
		"              ip 31314 [000]  4535.990250:             syscalls:sys_enter_sendmsg: fd: 0x00000003, msg: 0x7ffe126cba30, flags: 0x00000000",
		"         swapper     0 [000]  4535.994089:                     sched:sched_wakeup: comm=rcu_preempt pid=15 prio=120 target_cpu=000",
		"             :-1    -1 [001]  1467.270684609:            sched:sched_switch: prev_comm=x prev_pid=7671 prev_prio=120 prev_state=X ==> next_comm=y next_pid=7602 next_prio=120",
		"              ip 31314 [000]  4536.006082:              syscalls:sys_exit_sendmsg: 0x20",
		"this line is not an event",
	}, "\n")
	tr, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != "perf+tracefs" || tr.Skipped != 1 || tr.NCPU != 2 {
		t.Fatalf("format %q skipped %d ncpu %d", tr.Format, tr.Skipped, tr.NCPU)
	}
	if len(tr.Events) != 9 {
		t.Fatalf("%d events, want 9", len(tr.Events))
	}
	byLine := map[int]*Event{}
	for i := range tr.Events {
		byLine[tr.Events[i].Line] = &tr.Events[i]
	}
	check := func(line int, comm string, tid, cpu int, ts int64, name string) *Event {
		t.Helper()
		ev := byLine[line]
		if ev == nil {
			t.Fatalf("line %d not parsed", line)
		}
		if ev.Comm != comm || ev.TID != tid || ev.CPU != cpu || ev.TS != ts || ev.Name != name {
			t.Fatalf("line %d: got %q %d cpu%d %d %q", line, ev.Comm, ev.TID, ev.CPU, ev.TS, ev.Name)
		}
		return ev
	}
	ev := check(3, "ip", 32401, 0, 4906_996338000, "sys_enter_sendmsg")
	if fd, ok := ev.ArgInt("fd"); !ok || fd != 3 {
		t.Fatalf("tracefs fd = %d %v", fd, ok)
	}
	ev = check(4, "swapper", 0, 0, 4907_000173000, "softirq_entry")
	if ev.Arg("action") != "RCU" || !ev.SoftIRQ() || ev.HardIRQ() {
		t.Fatalf("softirq_entry: action %q soft %v hard %v", ev.Arg("action"), ev.SoftIRQ(), ev.HardIRQ())
	}
	ev = check(5, "rcu_preempt", 15, 0, 4907_000178000, "timer_start")
	if v, _ := ev.ArgInt("timeout"); v != 1 {
		t.Fatalf("timeout %d", v)
	}
	if v, _ := ev.ArgInt("bucket_expiry"); v != 4296118984 {
		t.Fatalf("bucket_expiry %d", v)
	}
	ev = check(6, "kworker/u8:0-events", 12, 1, 4907_000200000, "local_timer_entry")
	if !ev.HardIRQ() {
		t.Fatal("local_timer_entry should be in hardirq context")
	}
	check(7, "ip", 32401, 0, 4907_012172000, "sys_exit_sendmsg")
	ev = check(8, "ip", 31314, 0, 4535_990250000, "sys_enter_sendmsg")
	if fd, ok := ev.ArgInt("fd"); !ok || fd != 3 {
		t.Fatalf("perf fd = %d %v", fd, ok)
	}
	ev = check(9, "swapper", 0, 0, 4535_994089000, "sched_wakeup")
	if ev.Arg("comm") != "rcu_preempt" || ev.Arg("pid") != "15" {
		t.Fatalf("sched_wakeup args %q", ev.Args)
	}
	check(10, ":-1", -1, 1, 1467_270684609, "sched_switch")
	check(11, "ip", 31314, 0, 4536_006082000, "sys_exit_sendmsg")
	if tr.Events[0].Line != 10 { // sorted by time
		t.Fatalf("first event is line %d", tr.Events[0].Line)
	}
}

func TestParseTS(t *testing.T) {
	for in, want := range map[string]int64{"1.5": 1_500_000_000, "4535.990250": 4535_990250000, "0.000000001": 1} {
		if got, ok := parseTS(in); !ok || got != want {
			t.Errorf("parseTS(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	if _, ok := parseTS("1.0123456789"); ok {
		t.Error("10 decimals accepted")
	}
}

func TestStackMarker(t *testing.T) {
	s := StackSample{TID: 7, State: "D", Frames: ParseProcStack(strings.NewReader(
		"[<0>] __schedule+0x3a1/0x8f0\n[<0>] schedule+0x27/0xa0\n[<0>] schedule_timeout+0x9e/0x160\n" +
			"[<0>] __wait_for_common+0x8f/0x1b0\n[<0>] rcu_barrier+0x1b2/0x2f0\n[<0>] netdev_run_todo+0x64/0x520\n" +
			"[<0>] rtnl_dellink+0x14e/0x3a0\n[<0>] rtnetlink_rcv_msg+0x14a/0x3c0\n[<0>] netlink_rcv_skb+0x55/0x100\n"))}
	got, ok := parseStackMarker(FormatStackMarker(s))
	if !ok || got.TID != 7 || got.State != "D" || len(got.Frames) != 9 {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	if c := got.Condensed(); c != "rcu_barrier < netdev_run_todo < rtnl_dellink < rtnetlink_rcv_msg" {
		t.Fatalf("condensed %q", c)
	}
	if c := (StackSample{}).Condensed(); c != "(no stack: running)" {
		t.Fatalf("empty stack condensed to %q", c)
	}
}

func TestClusterStart(t *testing.T) {
	const p = 4_000_000
	// ticks 10-30 us after grid points at phase 3.99 ms, i.e. wrapping past 0
	ts := []int64{3_990_000 + 10_000, 7_990_000 + 20_000, 11_990_000 + 15_000, 15_990_000 + 30_000}
	if got := clusterStart(ts, p); got != 0 {
		t.Fatalf("cluster start %d, want 0 (3.99 ms + 10 us wraps to 0)", got)
	}
	ts = []int64{1_000_100, 5_000_300, 9_000_200}
	if got := clusterStart(ts, p); got != 1_000_100 {
		t.Fatalf("cluster start %d", got)
	}
}
