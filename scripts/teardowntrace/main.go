// Command teardowntrace explains, from a kernel trace, how long each
// one-by-one network-device delete waits and on what, on the tick grid.
//
//	go run ./scripts/teardowntrace [flags] TRACE
//	go run ./scripts/teardowntrace run [-marker PATH] [-stack-interval D] [-timeout D] -- CMD ARGS...
//	go run ./scripts/teardowntrace links -add N | -del N | -del-group G
//	go run ./scripts/teardowntrace barriers [-per-run=false] TRACE
//	go run ./scripts/teardowntrace placement [-task NAME] TRACE
//
// TRACE is `perf script` output or the text of a tracefs trace file, as
// scripts/trace-one-by-one.sh records them (sched, timer, irq, rcu and
// sendmsg syscall tracepoints). Each RTM_DELLINK is one sendmsg(2) of the
// deleting task; J+n counts tick boundaries from that sendmsg's entry. For
// every delete the report gives the task's final block (and, from
// /proc/TID/stack samples the run subcommand writes into the trace, the
// function it blocks in), the RCU softirqs, the grace-period kthread's runs
// and who woke each, the FQS timer's arming (expires and bucket_expiry as
// J+n) and firing, who woke the task, and the jiffy in which sendmsg
// returned; then a summary per end jiffy and the end-jiffy histogram.
//
// Invariants: the analysis reads only the trace; every J+n comes from one
// tick grid (period from HZ, phase from the tick events' timestamps), and
// jiffies values are placed on it by the timer events' own jiffies. Nothing
// in the output is a constant of the program: a step that the trace does not
// show is absent from the report.
//
// The barriers subcommand reads a trace of namespace deletes (sched and
// workqueue tracepoints, as scripts/trace-pods.sh records them) and gives,
// for each cleanup_net run, the CPUs its worker ran on and, for each of its
// long waits (the rcu_barrier() calls), how many times the grace-period
// kthread was woken meanwhile: one grace period or two.
//
// The placement subcommand counts where the scheduler put one task's
// wake-ups (default rcu_exp_gp_kthread_worker): onto the waking CPU or
// another, with the other CPUs idle or not (placement.go).
//
// The run subcommand starts a workload, writes its pid into the tracefs
// instance's trace_marker, optionally samples its kernel stack, and kills it
// after a timeout. Exit status: 0 ok, 1 failure, 2 usage.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		os.Exit(runMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "barriers" {
		os.Exit(barriersMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "placement" {
		os.Exit(placementMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "links" {
		os.Exit(linksMain(os.Args[2:]))
	}
	os.Exit(analyzeMain(os.Args[1:]))
}

func analyzeMain(args []string) int {
	fs := flag.NewFlagSet("teardowntrace", flag.ContinueOnError)
	hz := fs.Int("hz", 0, "tick rate (0: estimate from the tick events)")
	tid := fs.Int("tid", 0, "deleting task's TID (0: from the trace's teardowntrace-workload marker, else the -comm task with the most sendmsg calls)")
	comm := fs.String("comm", "ip", "deleting task's name, for -tid 0 without a marker")
	fd := fs.Int64("fd", -1, "fd of the RTM_DELLINK socket (-1: the fd whose sendmsg calls took longest)")
	ncpu := fs.Int("cpus", 0, "CPUs of the traced machine (0: from the trace header, else the CPUs that have events)")
	gp := fs.String("gp-kthread", "", "grace-period kthread name (default: rcu_preempt, else rcu_sched)")
	timelines := fs.Int("timelines", 2, "print the full timeline of this many deletes of the most common end jiffy (and of the first delete of every other end jiffy)")
	perDelete := fs.Bool("per-delete", true, "print one line per delete")
	expect := fs.Int("expect", 0, "expected number of deletes; a different count is reported as an error (exit 1)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: teardowntrace [flags] TRACE   (perf script output or tracefs trace text; - for stdin)")
		fmt.Fprintln(fs.Output(), "       teardowntrace run [-marker PATH] [-stack-interval D] [-timeout D] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *hz < 0 || *ncpu < 0 || *timelines < 0 || *expect < 0 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	tr, err := ReadTrace(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace:", err)
		return 1
	}
	a, err := Analyze(tr, Options{HZ: *hz, TID: *tid, Comm: *comm, FD: *fd, GPName: *gp, NCPU: *ncpu})
	if err != nil {
		fmt.Fprintf(os.Stderr, "teardowntrace: %s: %v\n", name, err)
		return 1
	}
	a.Report(os.Stdout, ReportOptions{Timelines: *timelines, PerDelete: *perDelete, Name: name})
	if *expect > 0 && len(a.Deletes) != *expect {
		fmt.Fprintf(os.Stderr, "teardowntrace: %s: found %d deletes, expected %d\n", name, len(a.Deletes), *expect)
		return 1
	}
	return 0
}
