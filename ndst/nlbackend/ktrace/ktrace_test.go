package ktrace

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBuild: a CPU lane shows each task from its switch-in to its switch-out
// (idle not drawn), a task lane its runs, its wait for a CPU after a wakeup
// or a preemption, and the work items it executed by name.
func TestBuild(t *testing.T) {
	evs := []event{
		{t: 1000, cpu: 0, kind: evSwitch, prevPID: 0, prevComm: "swapper/0", nextPID: 42, nextComm: "ndst"},
		{t: 2000, cpu: 1, kind: evWakeup, pid: 7},
		{t: 3000, cpu: 0, kind: evSwitch, prevPID: 42, prevComm: "ndst", prevRun: true, nextPID: 7, nextComm: "kworker/u4:1"},
		{t: 3500, cpu: 0, kind: evWorkStart, pid: 7, fn: 0x100},
		{t: 5500, cpu: 0, kind: evWorkEnd, pid: 7, fn: 0x100},
		{t: 6000, cpu: 0, kind: evSwitch, prevPID: 7, prevComm: "kworker/u4:1", nextPID: 42, nextComm: "ndst"},
	}
	out, comm, cpus := build(evs, 0, 8000, func(a uint64) string { return map[uint64]string{0x100: "cleanup_net"}[a] })
	find := func(pid, tid int, name string, ts float64) *traceEvent {
		for i := range out {
			if out[i].Pid == pid && out[i].Tid == tid && out[i].Name == name && (ts < 0 || out[i].Ts == ts) {
				return &out[i]
			}
		}
		return nil
	}
	for _, c := range []struct {
		pid, tid int
		name     string
		ts, dur  float64
	}{
		{pidCPUs, 0, "ndst", 1, 2},
		{pidCPUs, 0, "kworker/u4:1", 3, 3},
		{pidTasks, 7, "runnable (waiting for a CPU)", 2, 1},
		{pidTasks, 7, "cleanup_net", 3.5, 2},
		{pidTasks, 42, "runnable (waiting for a CPU)", 3, 3}, // preempted at 3 µs, back at 6
		{pidTasks, 42, "running", 6, 2},                      // still running at the end
	} {
		e := find(c.pid, c.tid, c.name, c.ts)
		if e == nil || e.Ts != c.ts || e.Dur != c.dur {
			t.Errorf("event %q on %d/%d = %+v, want ts %v dur %v", c.name, c.pid, c.tid, e, c.ts, c.dur)
		}
	}
	if find(pidCPUs, 0, "swapper/0", -1) != nil {
		t.Errorf("idle was drawn")
	}
	var b bytes.Buffer
	if err := write(&b, out, comm, cpus, map[string]any{"clock": "test"}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Events []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc.Events) < len(out) {
		t.Fatalf("written trace: %v, %d events", err, len(doc.Events))
	}
}
