package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// StackSample is one reading of /proc/TID/stack, as the run subcommand writes
// it into the trace through trace_marker:
//
//	teardowntrace-stack tid=31314 state=D frames=__schedule<schedule<...<rcu_barrier<netdev_run_todo
//
// frames are innermost first, function names without offsets.
type StackSample struct {
	TID    int
	State  string
	Frames []string
}

const stackMarker = "teardowntrace-stack"

func parseStackMarker(s string) (StackSample, bool) {
	if !strings.HasPrefix(s, stackMarker+" ") {
		return StackSample{}, false
	}
	m := parseArgs(s)
	tid, ok := markerInt(s, "tid")
	if !ok {
		return StackSample{}, false
	}
	ss := StackSample{TID: int(tid), State: m["state"]}
	if f := m["frames"]; f != "" {
		ss.Frames = strings.Split(f, "<")
	}
	return ss, true
}

// FormatStackMarker is the marker text for a sample.
func FormatStackMarker(s StackSample) string {
	return fmt.Sprintf("%s tid=%d state=%s frames=%s", stackMarker, s.TID, s.State, strings.Join(s.Frames, "<"))
}

// ParseProcStack reads /proc/TID/stack text ("[<0>] rcu_barrier+0x1b2/0x2f0")
// into function names, innermost first.
func ParseProcStack(r io.Reader) []string {
	var frames []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		name := f[len(f)-1]
		if i := strings.IndexByte(name, '+'); i > 0 {
			name = name[:i]
		}
		frames = append(frames, name)
	}
	return frames
}

// waitFrames are the scheduler and wait-queue frames above the function a
// task is actually blocked in; Condensed skips them.
var waitFrames = map[string]bool{
	"__schedule": true, "schedule": true, "schedule_timeout": true, "schedule_idle": true,
	"schedule_preempt_disabled": true, "io_schedule": true, "io_schedule_timeout": true,
	"__wait_for_common": true, "wait_for_common": true, "wait_for_completion": true,
	"wait_for_completion_state": true, "wait_for_completion_io": true,
	"wait_for_completion_killable": true, "wait_for_completion_timeout": true,
	"__wait_rcu_gp": true, "__flush_work": true, "__wait_event": true,
	"do_nanosleep": true, "hrtimer_nanosleep": true,
}

// Condensed names where the task waits: the first four frames below the
// scheduler and wait-queue helpers, "a < b < c < d" (callee first).
func (s StackSample) Condensed() string {
	var keep []string
	for _, f := range s.Frames {
		if len(keep) == 0 && waitFrames[f] {
			continue
		}
		keep = append(keep, f)
		if len(keep) == 4 {
			break
		}
	}
	if len(keep) == 0 {
		if len(s.Frames) == 0 {
			return "(no stack: running)"
		}
		return s.Frames[0]
	}
	return strings.Join(keep, " < ")
}
