// Package wqtrace times the runs of one kernel work function, cleanup_net
// (the network namespace cleanup), from the workqueue tracepoints
// workqueue_execute_start and workqueue_execute_end: the kernel records each
// run's start and end as it happens, on CLOCK_MONOTONIC, which is when a
// batch of deleted namespaces began to be cleaned up and when that cleanup
// was done (devices freed, the final rcu_barrier() passed, the namespaces
// freed).
//
// Invariants: Open changes nothing on the host: it opens perf events on the
// two tracepoints (one per CPU, filtered in the kernel to the one function),
// which end with Close or the process; it needs tracefs mounted where it is
// and the privilege to open tracepoint events (root). Reading never blocks.
// Where any of that is missing, Open says which, and callers fall back.
package wqtrace

// Run is one run of the work function: its start and end on CLOCK_MONOTONIC
// (ns). End is 0 while it runs.
type Run struct {
	Start, End int64
}
