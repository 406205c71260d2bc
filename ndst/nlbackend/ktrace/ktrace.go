// Package ktrace records what the real kernel's CPUs did while a command
// ran, from the scheduler and workqueue tracepoints (sched_switch,
// sched_wakeup, workqueue_execute_start and _end, through package
// tracepoint, which reads tracefs or mounts it privately), and writes it as
// Chrome trace events in the layout of the emulated kernel's --trace: a
// "CPUs" process with one lane per CPU showing the task it ran, and a
// "tasks" process with one lane per task showing when it ran, when it
// waited for a CPU after its wakeup, and the work items it executed (named
// by their function, from /proc/kallsyms). A real run and an emulated one
// then open side by side in Perfetto.
//
// Invariants: recording changes nothing on the host (perf events, closed by
// Stop); the rings are drained every 20 ms by one goroutine, and a record
// the kernel dropped (a ring full) is counted, never invented; the events
// kept are bounded (maxEvents), later ones counted as dropped; times are
// CLOCK_MONOTONIC, shown relative to the start of the recording.
package ktrace

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"
)

// maxEvents bounds the records kept.
const maxEvents = 2_000_000

// event is one record, decoded.
type event struct {
	t        int64
	cpu      int
	kind     int // evSwitch, evWakeup, evWorkStart, evWorkEnd
	prevPID  int
	prevComm string
	prevRun  bool // prev was still runnable (preempted)
	nextPID  int
	nextComm string
	pid      int // wakeup: the woken task; work: the worker
	fn       uint64
}

const (
	evSwitch = iota
	evWakeup
	evWorkStart
	evWorkEnd
)

// traceEvent is one Chrome trace event (times in µs).
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// The processes of the trace, as the emulated kernel's (sim/trace.go).
const (
	pidCPUs  = 1
	pidTasks = 2
)

// build turns the records (sorted by time) into trace events; t0 is the
// start of the recording, end its stop, names the functions of work items.
func build(evs []event, t0, end int64, fnName func(uint64) string) ([]traceEvent, map[int]string, []int) {
	us := func(t int64) float64 { return float64(t-t0) / 1e3 }
	var out []traceEvent
	comm := map[int]string{}
	type run struct {
		pid   int
		start int64
	}
	onCPU := map[int]run{}     // the task each CPU runs, since when
	woken := map[int]int64{}   // a woken task's wakeup, until it runs
	working := map[int]event{} // a worker's item in progress
	cpus := map[int]bool{}
	span := func(pid, tid int, cat, name string, a, b int64, args map[string]any) {
		if b > a {
			out = append(out, traceEvent{Name: name, Cat: cat, Ph: "X", Ts: us(a), Dur: float64(b-a) / 1e3, Pid: pid, Tid: tid, Args: args})
		}
	}
	for _, e := range evs {
		cpus[e.cpu] = true
		switch e.kind {
		case evSwitch:
			comm[e.prevPID], comm[e.nextPID] = e.prevComm, e.nextComm
			if r, ok := onCPU[e.cpu]; ok && r.pid == e.prevPID && r.pid != 0 {
				span(pidCPUs, e.cpu, "sched", comm[r.pid], r.start, e.t, map[string]any{"tid": r.pid})
				span(pidTasks, r.pid, "sched", "running", r.start, e.t, map[string]any{"cpu": e.cpu})
			}
			if e.prevRun && e.prevPID != 0 {
				woken[e.prevPID] = e.t // preempted: runnable from now
			}
			onCPU[e.cpu] = run{e.nextPID, e.t}
			if w, ok := woken[e.nextPID]; ok && e.nextPID != 0 {
				span(pidTasks, e.nextPID, "sched", "runnable (waiting for a CPU)", w, e.t, nil)
				delete(woken, e.nextPID)
			}
		case evWakeup:
			if _, ok := woken[e.pid]; !ok {
				woken[e.pid] = e.t
			}
		case evWorkStart:
			working[e.pid] = e
		case evWorkEnd:
			if s, ok := working[e.pid]; ok && s.fn == e.fn {
				span(pidTasks, e.pid, "workqueue", fnName(e.fn), s.t, e.t, map[string]any{"cpu": s.cpu})
				delete(working, e.pid)
			}
		}
	}
	// What still runs at the end is drawn up to it.
	for cpu, r := range onCPU {
		if r.pid != 0 {
			span(pidCPUs, cpu, "sched", comm[r.pid], r.start, end, map[string]any{"tid": r.pid})
			span(pidTasks, r.pid, "sched", "running", r.start, end, map[string]any{"cpu": cpu})
		}
	}
	for pid, s := range working {
		span(pidTasks, pid, "workqueue", fnName(s.fn)+" (still running)", s.t, end, nil)
	}
	var cpuList []int
	for c := range cpus {
		cpuList = append(cpuList, c)
	}
	sort.Ints(cpuList)
	return out, comm, cpuList
}

// write writes the events with the processes' and lanes' names.
func write(w io.Writer, evs []traceEvent, comm map[int]string, cpus []int, other map[string]any) error {
	meta := []traceEvent{
		{Name: "process_name", Ph: "M", Pid: pidCPUs, Args: map[string]any{"name": "CPUs"}},
		{Name: "process_name", Ph: "M", Pid: pidTasks, Args: map[string]any{"name": "tasks"}},
	}
	for _, c := range cpus {
		meta = append(meta, traceEvent{Name: "thread_name", Ph: "M", Pid: pidCPUs, Tid: c, Args: map[string]any{"name": "CPU " + strconv.Itoa(c)}})
	}
	used := map[int]bool{}
	for _, e := range evs {
		if e.Pid == pidTasks {
			used[e.Tid] = true
		}
	}
	var tids []int
	for t := range used {
		tids = append(tids, t)
	}
	sort.Ints(tids)
	for _, t := range tids {
		meta = append(meta, traceEvent{Name: "thread_name", Ph: "M", Pid: pidTasks, Tid: t, Args: map[string]any{"name": comm[t] + " " + strconv.Itoa(t)}})
	}
	out := struct {
		Events []traceEvent   `json:"traceEvents"`
		Unit   string         `json:"displayTimeUnit"`
		Other  map[string]any `json:"otherData"`
	}{append(meta, evs...), "ms", other}
	return json.NewEncoder(w).Encode(out)
}
