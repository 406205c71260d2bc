package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Call is one sendmsg(2) of the workload task, entry to exit.
type Call struct {
	FD         int64
	Start, End int64 // ns
	StartEv    int   // index of sys_enter_sendmsg in Trace.Events
	EndEv      int   // index of sys_exit_sendmsg
}

// Workload names the task that sends the deletes and how it was chosen.
type Workload struct {
	TID    int
	Comm   string
	Source string // "marker", "-tid", or "auto: ..."
}

const workloadMarker = "teardowntrace-workload"

// FindWorkload picks the deleting task: the pid in a teardowntrace-workload
// marker if the trace has one, else tid if given, else the task named comm
// with the most sendmsg calls.
func FindWorkload(evs []Event, tid int, comm string) (Workload, error) {
	if tid > 0 {
		return Workload{TID: tid, Comm: commOf(evs, tid), Source: "-tid"}, nil
	}
	for i := range evs {
		ev := &evs[i]
		if ev.Name == "tracing_mark_write" && strings.HasPrefix(ev.Args, workloadMarker) {
			if p, ok := markerInt(ev.Args, "pid"); ok {
				return Workload{TID: int(p), Comm: commOf(evs, int(p)), Source: "marker"}, nil
			}
		}
	}
	counts := map[int]int{}
	for i := range evs {
		ev := &evs[i]
		if ev.Name == "sys_enter_sendmsg" && ev.Comm == comm {
			counts[ev.TID]++
		}
	}
	best, bestN := 0, 0
	for t, n := range counts {
		if n > bestN || (n == bestN && t < best) {
			best, bestN = t, n
		}
	}
	if bestN == 0 {
		return Workload{}, fmt.Errorf("no sys_enter_sendmsg by a task named %q: record syscalls:sys_enter_sendmsg/sys_exit_sendmsg, or give -comm/-tid", comm)
	}
	return Workload{TID: best, Comm: comm, Source: fmt.Sprintf("auto: the %q task with the most sendmsg calls (%d)", comm, bestN)}, nil
}

func commOf(evs []Event, tid int) string {
	for i := range evs {
		if evs[i].TID == tid {
			return evs[i].Comm
		}
	}
	return "?"
}

// markerInt reads key=N from a marker's text.
func markerInt(s, key string) (int64, bool) {
	v := parseArgs(s)[key]
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// Sendmsgs pairs the task's sys_enter_sendmsg and sys_exit_sendmsg events.
// An entry without an exit (the trace ended inside the call) is dropped.
func Sendmsgs(evs []Event, tid int) []Call {
	var calls []Call
	open := -1
	for i := range evs {
		ev := &evs[i]
		if ev.TID != tid {
			continue
		}
		switch ev.Name {
		case "sys_enter_sendmsg":
			open = i
		case "sys_exit_sendmsg":
			if open < 0 {
				continue
			}
			fd, _ := evs[open].ArgInt("fd")
			calls = append(calls, Call{FD: fd, Start: evs[open].TS, End: ev.TS, StartEv: open, EndEv: i})
			open = -1
		}
	}
	return calls
}

// DeleteCalls keeps the calls on the deleting socket: fd if fd >= 0, else the
// fd whose sendmsg calls took the most time in total (`ip -batch` resolves
// names on a second socket; only the RTM_DELLINK socket blocks).
func DeleteCalls(calls []Call, fd int64) ([]Call, string) {
	src := "-fd"
	if fd < 0 {
		total := map[int64]int64{}
		for _, c := range calls {
			total[c.FD] += c.End - c.Start
		}
		var fds []int64
		for f := range total {
			fds = append(fds, f)
		}
		sort.Slice(fds, func(i, j int) bool { return fds[i] < fds[j] })
		for _, f := range fds {
			if fd < 0 || total[f] > total[fd] {
				fd = f
			}
		}
		var parts []string
		for _, f := range fds {
			parts = append(parts, fmt.Sprintf("fd %d %.1f ms", f, float64(total[f])/1e6))
		}
		src = "auto: the fd whose sendmsg calls took longest (" + strings.Join(parts, ", ") + ")"
	}
	var out []Call
	for _, c := range calls {
		if c.FD == fd {
			out = append(out, c)
		}
	}
	return out, fmt.Sprintf("fd %d (%s)", fd, src)
}
