package sim

import (
	"encoding/json"
	"io"
)

// Trace records a run as Chrome trace events, the JSON that Perfetto and
// chrome://tracing open: per CPU, the task it runs (complete events) and its
// ticks and interrupt work (instants); per task, when it runs, sleeps or
// waits for its CPU, and the phases the model attributes its time to; and
// whatever the subsystems add (RCU's grace periods as async spans, its
// quiescent-state reports and callback batches). Recording is off unless a
// Trace is installed, and bounded by Max events.
type Trace struct {
	// Max bounds the number of events kept (0: 1,000,000); later ones
	// are counted in Dropped.
	Max     int
	Dropped int
	events  []TraceEvent
}

// TraceEvent is one Chrome trace event (times in microseconds).
type TraceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Trace processes: one lane per CPU, one per task.
const (
	tracePidCPUs  = 1
	tracePidTasks = 2
)

func us(t Time) float64 { return float64(t) / 1e3 }

// SetTrace installs t (nil: stop recording).
func (e *Engine) SetTrace(t *Trace) { e.trace = t }

func (e *Engine) emit(ev TraceEvent) {
	t := e.trace
	if t == nil {
		return
	}
	max := t.Max
	if max == 0 {
		max = 1_000_000
	}
	if len(t.events) >= max {
		t.Dropped++
		return
	}
	t.events = append(t.events, ev)
}

// Tracing reports whether a trace is being recorded.
func (e *Engine) Tracing() bool { return e.trace != nil }

// TraceInstant records an instant event on a CPU's lane.
func (e *Engine) TraceInstant(cpu int, cat, name string, args map[string]any) {
	if e.trace != nil {
		e.emit(TraceEvent{Name: name, Cat: cat, Ph: "i", S: "t", Ts: us(e.now), Pid: tracePidCPUs, Tid: cpu, Args: args})
	}
}

// TraceAsync begins (begin=true) or ends an async span, such as a grace
// period, on the CPUs' process.
func (e *Engine) TraceAsync(cat, name, id string, begin bool) {
	if e.trace == nil {
		return
	}
	ph := "e"
	if begin {
		ph = "b"
	}
	e.emit(TraceEvent{Name: name, Cat: cat, Ph: ph, Ts: us(e.now), Pid: tracePidCPUs, Tid: 0, ID: id})
}

// traceSpan records a complete event from start to now.
func (e *Engine) traceSpan(pid, tid int, cat, name string, start Time, args map[string]any) {
	if e.trace != nil && e.now > start {
		e.emit(TraceEvent{Name: name, Cat: cat, Ph: "X", Ts: us(start), Dur: us(e.now - start), Pid: pid, Tid: tid, Args: args})
	}
}

// Write writes the trace as a JSON object with process and thread names.
func (t *Trace) Write(w io.Writer, e *Engine) error {
	meta := []TraceEvent{
		{Name: "process_name", Ph: "M", Pid: tracePidCPUs, Args: map[string]any{"name": "CPUs"}},
		{Name: "process_name", Ph: "M", Pid: tracePidTasks, Args: map[string]any{"name": "tasks"}},
	}
	for _, c := range e.cpus {
		meta = append(meta, TraceEvent{Name: "thread_name", Ph: "M", Pid: tracePidCPUs, Tid: c.ID, Args: map[string]any{"name": "CPU " + itoa(c.ID)}})
	}
	for _, tk := range e.tasks {
		meta = append(meta, TraceEvent{Name: "thread_name", Ph: "M", Pid: tracePidTasks, Tid: tk.PID, Args: map[string]any{"name": tk.Name}})
	}
	out := struct {
		Events []TraceEvent   `json:"traceEvents"`
		Unit   string         `json:"displayTimeUnit"`
		Other  map[string]any `json:"otherData"`
	}{append(meta, t.events...), "ms", map[string]any{"dropped_events": t.Dropped, "clock": "virtual time of the emulated kernel"}}
	enc := json.NewEncoder(w)
	return enc.Encode(out)
}
