package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func analyzeFile(t *testing.T, name string) *Analysis {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(tr, Options{FD: -1})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// item returns the first timeline item of d with the label.
func item(d *Delete, label string) *Item {
	for i := range d.Timeline {
		if d.Timeline[i].Label == label {
			return &d.Timeline[i]
		}
	}
	return nil
}

// jOf is the J+n of an item in its delete.
func jOf(a *Analysis, d *Delete, it *Item) int64 { return a.Grid.Index(it.T) - d.J0 }

// wantStep checks that a delete has a step at J+j whose detail contains want.
func wantStep(t *testing.T, a *Analysis, d *Delete, label string, j int64, want string) {
	t.Helper()
	it := item(d, label)
	if it == nil {
		t.Fatalf("delete %d: no %q step", d.N, label)
	}
	if got := jOf(a, d, it); got != j {
		t.Errorf("delete %d: %q at J+%d, want J+%d", d.N, label, got, j)
	}
	if !strings.Contains(it.Detail, want) {
		t.Errorf("delete %d: %q detail %q, want %q", d.N, label, it.Detail, want)
	}
}

// The 4-jiffy shape with jiffies_till_first_fqs=1 and an idle CPU1: GP
// kthread woken by the RCU softirq at J+1, FQS timer for J+2 that the wheel
// puts in the J+3 bucket, fired at J+3, task woken by the RCU softirq at J+4.
func checkFourJiffies(t *testing.T, a *Analysis, wantDeletes int) {
	t.Helper()
	if a.Grid.HZ != 250 || !a.Grid.HaveJiff || a.Grid.JiffVotes != a.Grid.JiffTotal {
		t.Fatalf("grid %+v", a.Grid)
	}
	if a.GPComm != "rcu_preempt" || a.GPPID != 15 {
		t.Fatalf("GP kthread %s/%d", a.GPComm, a.GPPID)
	}
	if len(a.Deletes) != wantDeletes {
		t.Fatalf("%d deletes, want %d", len(a.Deletes), wantDeletes)
	}
	for _, d := range a.Deletes {
		if e := d.EndJ(a.Grid); e != 4 {
			t.Errorf("delete %d ends at J+%d, want J+4", d.N, e)
		}
		if d.Blocks != 3 || d.ExpWakes != 2 {
			t.Errorf("delete %d: %d blocks, %d expedited-GP wakeups; want 3 and 2", d.N, d.Blocks, d.ExpWakes)
		}
		wantStep(t, a, d, "ip blocks (final wait)", 0, "state D, after 2 shorter waits")
		wantStep(t, a, d, "RCU softirq cpu0 J+1", 1, "wakes rcu_preempt")
		wantStep(t, a, d, "GP kthread run #1", 1, "woken by RCU softirq")
		wantStep(t, a, d, "FQS timer armed #1", 1, "schedule_timeout(1): expires J+2, bucket_expiry J+3 (+1)")
		wantStep(t, a, d, "RCU softirq cpu0 J+2", 2, "no wakeup")
		wantStep(t, a, d, "FQS timer #1 fires", 3, "jiffies J+3 = its bucket_expiry (expires J+2)")
		wantStep(t, a, d, "GP kthread run #2", 3, "woken by TIMER softirq (process_timeout)")
		wantStep(t, a, d, "RCU softirq cpu0 J+4", 4, "wakes ip")
		wantStep(t, a, d, "ip woken (final)", 4, "by RCU softirq (in the idle task)")
		if q := d.QuietCPUs(a.CPUs); len(q) != 1 || q[0] != 1 {
			t.Errorf("delete %d: quiet CPUs %v, want [1]", d.N, q)
		}
	}
}

func TestPerfFirstFQS1(t *testing.T) {
	a := analyzeFile(t, "perf-fqs1.txt")
	if a.Trace.Format != "perf" || a.Work.TID != 31314 || !strings.HasPrefix(a.FDNote, "fd 3 ") {
		t.Fatalf("format %s, workload %+v, %s", a.Trace.Format, a.Work, a.FDNote)
	}
	checkFourJiffies(t, a, 2)
}

func TestTracefsFirstFQS1(t *testing.T) {
	a := analyzeFile(t, "tracefs-fqs1.txt")
	if a.Trace.Format != "tracefs" || a.Work.TID != 32401 || len(a.CPUs) != 2 {
		t.Fatalf("format %s, workload %+v, CPUs %v", a.Trace.Format, a.Work, a.CPUs)
	}
	checkFourJiffies(t, a, 1)
}

// With jiffies_till_first_fqs=0 the GP kthread is woken at J+2 by the RCU
// softirq (the GP ended without the FQS timer), and the task at J+3.
func TestPerfFirstFQS0(t *testing.T) {
	a := analyzeFile(t, "perf-fqs0.txt")
	if len(a.Deletes) != 2 {
		t.Fatalf("%d deletes", len(a.Deletes))
	}
	for _, d := range a.Deletes {
		if e := d.EndJ(a.Grid); e != 3 {
			t.Errorf("delete %d ends at J+%d, want J+3", d.N, e)
		}
		wantStep(t, a, d, "GP kthread run #1", 1, "woken by RCU softirq")
		wantStep(t, a, d, "FQS timer armed #1", 1, "expires J+2, bucket_expiry J+3")
		wantStep(t, a, d, "GP kthread run #2", 2, "woken by RCU softirq")
		wantStep(t, a, d, "ip woken (final)", 3, "by RCU softirq")
		if len(d.FQSFired) != 0 {
			t.Errorf("delete %d: FQS timer fired at %v", d.N, d.FQSFired)
		}
	}
}

func TestReport(t *testing.T) {
	a := analyzeFile(t, "perf-fqs1.txt")
	var b bytes.Buffer
	a.Report(&b, ReportOptions{Timelines: 1, PerDelete: true, Name: "perf-fqs1.txt"})
	out := b.String()
	for _, want := range []string{
		"tick grid: HZ=250",
		"end-jiffy histogram: J+4: 2",
		"cpu1 quiet",
		"== summary over the 2 of 2 deletes ending at J+4",
		"FQS timer #1 fires",
		"== timeline of delete 1:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := Analyze(&Trace{}, Options{FD: -1}); err == nil {
		t.Error("empty trace accepted")
	}
	tr, _ := Parse(strings.NewReader("          <idle>-0       [000] d.h1.  4907.000161: hrtimer_expire_entry: hrtimer=x function=tick_nohz_handler now=1\n"))
	if _, err := Analyze(tr, Options{FD: -1}); err == nil || !strings.Contains(err.Error(), "tick") {
		t.Errorf("one tick: err %v", err)
	}
}

// A fresh tracefs excerpt: the delete runs on CPU1, whose switches out of
// the idle task are never recorded (runs are found from the tasks' own
// events), CPU0 is idle, and the run subcommand's markers name the task and
// carry its /proc/PID/stack samples.
func TestTracefsStacksOnCPU1(t *testing.T) {
	a := analyzeFile(t, "tracefs-fqs1-stacks.txt")
	if a.Work.TID != 2204 || a.Work.Source != "marker" {
		t.Fatalf("workload %+v", a.Work)
	}
	if sw := a.IdleSwitches[1]; sw[0] == 0 || sw[1] != 0 {
		t.Fatalf("cpu1 idle switches in/out %v, want some in and none out", sw)
	}
	if len(a.Deletes) != 1 {
		t.Fatalf("%d deletes", len(a.Deletes))
	}
	d := a.Deletes[0]
	if e := d.EndJ(a.Grid); e != 4 {
		t.Fatalf("ends at J+%d", e)
	}
	wantStep(t, a, d, "ip blocks (final wait)", 0, "in rcu_barrier < netdev_run_todo < rtnl_dellink < netlink_rcv_skb")
	wantStep(t, a, d, "RCU softirq cpu1 J+1", 1, "wakes rcu_preempt")
	wantStep(t, a, d, "GP kthread run #1", 1, "woken by RCU softirq")
	wantStep(t, a, d, "FQS timer armed #1", 1, "expires J+2, bucket_expiry J+3 (+1)")
	wantStep(t, a, d, "FQS timer #1 fires", 3, "= its bucket_expiry")
	wantStep(t, a, d, "GP kthread run #2", 3, "woken by TIMER softirq (process_timeout)")
	wantStep(t, a, d, "ip woken (final)", 4, "by RCU softirq (in the idle task)")
	wantStep(t, a, d, "ip runs after the wakeup", 4, "within 0.1 ms")
	if d.UnseenSwitchIns == 0 {
		t.Error("no run without a recorded switch-in was noticed")
	}
	if q := d.QuietCPUs(a.CPUs); len(q) != 1 || q[0] != 0 {
		t.Errorf("quiet CPUs %v, want [0]", q)
	}
	if a.NStacks != 13 || a.Stacks["rcu_barrier < netdev_run_todo < rtnl_dellink < netlink_rcv_skb"] != 13 {
		t.Errorf("stack samples %d: %v", a.NStacks, a.Stacks)
	}
}
