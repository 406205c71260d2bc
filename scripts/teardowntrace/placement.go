package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Placement counts where the scheduler put the wake-ups of one task (by
// name, as sched_waking prints it): onto the waking CPU or another, and
// whether the other CPUs were idle (running their idle task) at that
// moment, as the sched_switch events before it show. It is how the expedited
// grace period's worker, rcu_exp_gp_kthread_worker (6.12 on), was found to
// run on its caller's CPU on this project's 6.18 host while the other CPU
// was idle: the emulated kernel places it on the idle CPU (rcu/expworker.go).
type Placement struct {
	Task string
	// Counts by (woken onto the waking CPU, every other CPU idle).
	SameIdle, SameBusy, OtherIdle, OtherBusy int
	// Unknown: wake-ups before every CPU's current task was known.
	Unknown int
}

// WakePlacement reads sched_waking and sched_switch events. task matches the
// woken task's comm by prefix (sched_waking truncates it to 15 bytes).
func WakePlacement(evs []Event, task string) Placement {
	p := Placement{Task: task}
	curr := map[int]string{} // CPU -> the task switched in last
	for i := range evs {
		ev := &evs[i]
		switch ev.Name {
		case "sched_switch":
			curr[ev.CPU] = ev.Arg("next_comm")
		case "sched_waking":
			if !strings.HasPrefix(task, ev.Arg("comm")) && !strings.HasPrefix(ev.Arg("comm"), task) {
				continue
			}
			target, err := strconv.Atoi(ev.Arg("target_cpu"))
			if err != nil {
				continue
			}
			idle, known := true, true
			for cpu, c := range curr {
				if cpu != ev.CPU && !strings.HasPrefix(c, "swapper") {
					idle = false
				}
			}
			if len(curr) < 2 {
				known = false
			}
			switch {
			case !known:
				p.Unknown++
			case target == ev.CPU && idle:
				p.SameIdle++
			case target == ev.CPU:
				p.SameBusy++
			case idle:
				p.OtherIdle++
			default:
				p.OtherBusy++
			}
		}
	}
	return p
}

// WriteText prints the counts.
func (p Placement) WriteText(w io.Writer) error {
	n := p.SameIdle + p.SameBusy + p.OtherIdle + p.OtherBusy
	_, err := fmt.Fprintf(w, "wake-ups of %s: %d (and %d before every CPU's task was known)\n"+
		"  onto the waking CPU:  %d with every other CPU idle, %d with another busy\n"+
		"  onto another CPU:     %d with every other CPU idle, %d with another busy\n",
		p.Task, n, p.Unknown, p.SameIdle, p.SameBusy, p.OtherIdle, p.OtherBusy)
	return err
}

func placementMain(args []string) int {
	fs := flag.NewFlagSet("teardowntrace placement", flag.ContinueOnError)
	task := fs.String("task", "rcu_exp_gp_kthread_worker", "the woken task's name (a prefix of it, or it of the traced name)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: teardowntrace placement [-task NAME] TRACE   (perf script output of sched:sched_waking and sched:sched_switch; - for stdin)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *task == "" {
		fs.Usage()
		return 2
	}
	tr, err := ReadTrace(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace:", err)
		return 1
	}
	sort.SliceStable(tr.Events, func(i, j int) bool { return tr.Events[i].TS < tr.Events[j].TS })
	p := WakePlacement(tr.Events, *task)
	if p.SameIdle+p.SameBusy+p.OtherIdle+p.OtherBusy+p.Unknown == 0 {
		fmt.Fprintf(os.Stderr, "teardowntrace: no sched_waking of %s in the trace\n", *task)
		return 1
	}
	if err := p.WriteText(os.Stdout); err != nil {
		return 1
	}
	return 0
}
