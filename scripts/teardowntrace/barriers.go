package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CleanupRun is one run of cleanup_net (workqueue_execute_start to _end of
// the cleanup_net work item) and what its worker waited for.
type CleanupRun struct {
	Start, End int64
	Worker     int   // the kworker's TID
	CPUs       []int // the CPUs the worker was switched in on during the run
	Waits      []BarrierWait
}

// BarrierWait is one long sleep of the cleanup worker (longer than MinWait:
// the rcu_barrier() waits of cleanup_net, not its expedited grace periods)
// and how many times the grace-period kthread was woken during it: twice
// for one normal grace period (its start and its end), three or four times
// when the callbacks the barrier waits for needed a second one.
//
// The grace period's first wakeup of the kthread places it: GPCPU is the CPU
// it was woken onto, WorkerCPU the CPU the worker went to sleep on (where
// its callbacks and the barrier's are), and GPCPUTicked whether GPCPU took a
// tick within the next period after that wakeup (a CPU with no callbacks
// and its tick stopped reports its quiescent state only at a later timer).
type BarrierWait struct {
	Sleep, Woken int64
	GPWakeups    int
	WokenBy      string // the task that woke the worker, and its CPU
	WorkerCPU    int
	GPCPU        int  // -1: the GP kthread was not woken during the wait
	GPCPUTicked  bool // GPCPU ticked within a period after the first wakeup
}

// CleanupRuns finds the cleanup_net runs of a trace with sched_switch,
// sched_wakeup and workqueue_execute_start/end events, and the long waits
// of each run's worker (sleeps of at least minWait ns).
// period is the tick period in ns.
func CleanupRuns(evs []Event, gpKthread string, minWait, period int64) []CleanupRun {
	var runs []CleanupRun
	var cur *CleanupRun
	var sleptAt int64 = -1
	sleptOn := -1
	for i := range evs {
		ev := &evs[i]
		switch ev.Name {
		case "workqueue_execute_start":
			if strings.Contains(ev.Args, "function cleanup_net") {
				runs = append(runs, CleanupRun{Start: ev.TS, Worker: ev.TID, CPUs: []int{ev.CPU}})
				cur, sleptAt = &runs[len(runs)-1], -1
			}
		case "workqueue_execute_end":
			if cur != nil && ev.TID == cur.Worker && strings.Contains(ev.Args, "function cleanup_net") {
				cur.End, cur = ev.TS, nil
			}
		case "sched_switch":
			if cur == nil {
				continue
			}
			if pid, _ := strconv.Atoi(ev.Arg("prev_pid")); pid == cur.Worker && ev.Arg("prev_state") != "R" && ev.Arg("prev_state") != "R+" {
				sleptAt, sleptOn = ev.TS, ev.CPU
			}
			if pid, _ := strconv.Atoi(ev.Arg("next_pid")); pid == cur.Worker && !containsInt(cur.CPUs, ev.CPU) {
				cur.CPUs = append(cur.CPUs, ev.CPU)
			}
		case "sched_wakeup":
			if cur == nil || sleptAt < 0 {
				continue
			}
			if pid, _ := strconv.Atoi(ev.Arg("pid")); pid != cur.Worker {
				continue
			}
			if ev.TS-sleptAt >= minWait {
				w := BarrierWait{Sleep: sleptAt, Woken: ev.TS, WokenBy: fmt.Sprintf("%s on CPU %d", ev.Comm, ev.CPU),
					WorkerCPU: sleptOn, GPCPU: -1}
				from := sort.Search(len(evs), func(j int) bool { return evs[j].TS > sleptAt })
				for j := from; j < i; j++ {
					e := &evs[j]
					if e.Name != "sched_wakeup" || e.Arg("comm") != gpKthread {
						continue
					}
					if w.GPWakeups++; w.GPWakeups == 1 {
						w.GPCPU = wakeTarget(e)
						w.GPCPUTicked = tickedWithin(evs, j, w.GPCPU, e.TS+period+period/5)
					}
				}
				cur.Waits = append(cur.Waits, w)
			}
			sleptAt = -1
		}
	}
	if cur != nil && cur.End == 0 { // the trace ended inside a run
		runs = runs[:len(runs)-1]
	}
	return runs
}

// wakeTarget is the CPU a sched_wakeup put its task on (target_cpu, else
// the CPU that recorded it).
func wakeTarget(e *Event) int {
	if c, ok := e.ArgInt("target_cpu"); ok {
		return int(c)
	}
	return e.CPU
}

// tickedWithin reports whether cpu has a tick event after evs[from] and
// before until.
func tickedWithin(evs []Event, from, cpu int, until int64) bool {
	for j := from + 1; j < len(evs) && evs[j].TS < until; j++ {
		if evs[j].CPU == cpu && isTick(&evs[j]) {
			return true
		}
	}
	return false
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// ReportBarriers prints the runs' waits: per run, then histograms.
func ReportBarriers(w io.Writer, runs []CleanupRun, perRun bool) {
	if len(runs) == 0 {
		fmt.Fprintln(w, "no cleanup_net run in the trace (it needs the workqueue_execute_start/end and sched tracepoints)")
		return
	}
	gps := map[int]int{}
	ncpu := map[int]int{}
	var onWorker, onOther, ticked, placed int
	var waits, lens []int64
	for i, r := range runs {
		ncpu[len(r.CPUs)]++
		lens = append(lens, r.End-r.Start)
		if perRun {
			fmt.Fprintf(w, "run %2d: %7.2f ms, worker on CPUs %v", i+1, ms(r.End-r.Start), r.CPUs)
		}
		for _, b := range r.Waits {
			gps[b.GPWakeups]++
			waits = append(waits, b.Woken-b.Sleep)
			if b.GPCPU >= 0 {
				placed++
				if b.GPCPU == b.WorkerCPU {
					onWorker++
				} else {
					onOther++
				}
				if b.GPCPUTicked {
					ticked++
				}
			}
			if perRun {
				fmt.Fprintf(w, "; wait %.2f ms on CPU %d (GP kthread woken %d times, first onto CPU %d%s; worker woken by %s)",
					ms(b.Woken-b.Sleep), b.WorkerCPU, b.GPWakeups, b.GPCPU, map[bool]string{true: ", which ticked next", false: ", no tick next"}[b.GPCPUTicked], b.WokenBy)
			}
		}
		if perRun {
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "cleanup_net runs: %d, median %.2f ms\n", len(runs), ms(medianNS(lens)))
	fmt.Fprintf(w, "long waits of the worker (rcu_barrier): %d, median %.2f ms\n", len(waits), ms(medianNS(waits)))
	fmt.Fprintf(w, "grace-period kthread wakeups during a long wait (2: one grace period, its start and end; 3-4: two):%s\n", histo(gps))
	fmt.Fprintf(w, "CPUs the worker ran on in a run:%s\n", histo(ncpu))
	fmt.Fprintf(w, "the GP kthread's first wakeup in a wait: onto the worker's CPU %d, onto another %d; its CPU ticked within the next period in %d of %d\n",
		onWorker, onOther, ticked, placed)
}

func histo(m map[int]int) string {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %d: %d", k, m[k])
	}
	return b.String()
}

func medianNS(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// barriersMain is the barriers subcommand.
func barriersMain(args []string) int {
	fs := flag.NewFlagSet("teardowntrace barriers", flag.ContinueOnError)
	gp := fs.String("gp-kthread", "rcu_preempt", "grace-period kthread name")
	minWait := fs.Duration("min-wait", 2*time.Millisecond, "a worker sleep at least this long is a barrier wait (the expedited grace periods are shorter)")
	perRun := fs.Bool("per-run", true, "print one line per cleanup_net run")
	hz := fs.Int("hz", 0, "tick rate (0: estimate from the tick events)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: teardowntrace barriers [flags] TRACE   (tracefs trace text or perf script output; - for stdin)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *minWait <= 0 || *hz < 0 {
		fs.Usage()
		return 2
	}
	t, err := ReadTrace(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace:", err)
		return 1
	}
	g, err := EstimateGrid(t.Events, *hz)
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace:", err)
		return 1
	}
	fmt.Printf("tick grid: HZ=%d (from %d tick events)\n", g.HZ, g.Ticks)
	ReportBarriers(os.Stdout, CleanupRuns(t.Events, *gp, int64(*minWait), g.Period), *perRun)
	return 0
}
