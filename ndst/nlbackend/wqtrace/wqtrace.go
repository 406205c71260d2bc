// Package wqtrace times the runs of one kernel work function, cleanup_net
// (the network namespace cleanup), from the workqueue tracepoints
// workqueue_execute_start and workqueue_execute_end: the kernel records each
// run's start and end as it happens, on CLOCK_MONOTONIC, which is when a
// batch of deleted namespaces began to be cleaned up and when that cleanup
// was done (devices freed, the final rcu_barrier() passed, the namespaces
// freed).
//
// Invariants: Open changes nothing on the host: it opens perf events on the
// two tracepoints (one per CPU, filtered in the kernel to the one function;
// package tracepoint, which reads tracefs where the host has it mounted and
// from a private mount where it has not), which end with Close or the
// process; it needs root. Reading never blocks. A run is its start and the
// first end after it, whichever CPUs they were recorded on and in whatever
// order the CPUs' rings are read: a record read late is put in its place.
// Where any of that is missing, Open says which, and callers fall back.
package wqtrace

import (
	"cmp"
	"slices"
)

// Run is one run of the work function: its start and end on CLOCK_MONOTONIC
// (ns). End is 0 while it runs.
type Run struct {
	Start, End int64
}

// edge is one tracepoint record: a run's start or end.
type edge struct {
	t     int64
	start bool
}

// history is every record seen so far, in time order.
type history struct{ edges []edge }

// add puts newly read records in their place (a CPU's ring may be read
// before another's that holds earlier records) and returns the runs.
func (h *history) add(es []edge) []Run {
	h.edges = append(h.edges, es...)
	slices.SortStableFunc(h.edges, func(a, b edge) int { return cmp.Compare(a.t, b.t) })
	return pair(h.edges)
}

// pair makes runs of edges sorted by time: each start with the first end
// after it; an end before any start (a run that began before the watching)
// is dropped, as is a start followed by another start without an end between
// them (an end the kernel dropped: the earlier run's end is unknown, and it
// is kept open so that nothing is matched to a wrong end).
func pair(edges []edge) []Run {
	var runs []Run
	open := false
	for _, e := range edges {
		switch {
		case e.start:
			runs = append(runs, Run{Start: e.t})
			open = true
		case open:
			runs[len(runs)-1].End = e.t
			open = false
		}
	}
	return runs
}
