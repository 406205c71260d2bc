package ktrace

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/ndst-project/ndst/ndst/nlbackend/tracepoint"
	"github.com/ndst-project/ndst/safefile"
)

// ringPages is each CPU's ring (a power of two): 1 MiB at 4 KiB pages,
// about 10000 records, drained every 20 ms.
const ringPages = 256

// Recorder records the tracepoints while a command runs.
type Recorder struct {
	set            *tracepoint.Set
	sw, wk, ws, we tracepoint.Event
	mu             sync.Mutex
	evs            []event
	dropped        int
	t0, t1         int64
	stop, done     chan struct{}
	// Source is where tracefs was read.
	Source string
}

// Start begins recording on every online CPU.
func Start() (*Recorder, error) {
	evs, src, err := tracepoint.Lookup("sched:sched_switch", "sched:sched_wakeup", "workqueue:workqueue_execute_start", "workqueue:workqueue_execute_end")
	if err != nil {
		return nil, err
	}
	var specs []tracepoint.Spec
	for _, e := range evs {
		specs = append(specs, tracepoint.Spec{Event: e})
	}
	set, err := tracepoint.OpenCPUs(specs, ringPages)
	if err != nil {
		return nil, err
	}
	r := &Recorder{set: set, sw: evs[0], wk: evs[1], ws: evs[2], we: evs[3], Source: src,
		t0: sender.Monotonic(), stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r, nil
}

func (r *Recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			r.drain()
			return
		case <-t.C:
			r.drain()
		}
	}
}

func (r *Recorder) drain() {
	for _, s := range r.set.Read() {
		e, ok := r.decode(s)
		if !ok {
			continue
		}
		r.mu.Lock()
		if len(r.evs) < maxEvents {
			r.evs = append(r.evs, e)
		} else {
			r.dropped++
		}
		r.mu.Unlock()
	}
}

func (r *Recorder) decode(s tracepoint.Sample) (event, bool) {
	e := event{t: s.Time, cpu: s.CPU}
	pid := func(ev tracepoint.Event, f string) int { v, _ := ev.Int(s.Raw, f); return int(v) }
	switch s.ID {
	case r.sw.ID:
		e.kind = evSwitch
		e.prevComm, _ = r.sw.Str(s.Raw, "prev_comm")
		e.nextComm, _ = r.sw.Str(s.Raw, "next_comm")
		e.prevPID, e.nextPID = pid(r.sw, "prev_pid"), pid(r.sw, "next_pid")
		st, _ := r.sw.Int(s.Raw, "prev_state")
		// 0: still runnable (a yield); TASK_REPORT_MAX (0x100 on 6.18,
		// include/trace/events/sched.h __trace_sched_switch_state): preempted.
		e.prevRun = st == 0 || st >= 0x100
	case r.wk.ID:
		e.kind, e.pid = evWakeup, pid(r.wk, "pid")
	case r.ws.ID, r.we.ID:
		ev := r.ws
		e.kind = evWorkStart
		if s.ID == r.we.ID {
			ev, e.kind = r.we, evWorkEnd
		}
		e.pid = pid(ev, "common_pid")
		e.fn, _ = ev.Uint(s.Raw, "function")
	default:
		return e, false
	}
	return e, true
}

// Stop ends the recording.
func (r *Recorder) Stop() {
	select {
	case <-r.stop:
		return
	default:
	}
	r.t1 = sender.Monotonic()
	close(r.stop)
	<-r.done
	r.set.Close()
}

// Lost is the number of records the kernel dropped, and those beyond the
// bound.
func (r *Recorder) Lost() int { return r.set.Lost + r.dropped }

// Write writes the recording as Chrome trace events (see the package doc).
func (r *Recorder) Write(w io.Writer) error {
	r.mu.Lock()
	evs := append([]event(nil), r.evs...)
	r.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	syms := loadSymbols()
	out, comm, cpus := build(evs, r.t0, r.t1, syms.name)
	return write(w, out, comm, cpus, map[string]any{
		"clock":          "CLOCK_MONOTONIC of this host's kernel, from the start of the recording",
		"source":         "sched:sched_switch, sched:sched_wakeup, workqueue:workqueue_execute_start/end (perf_event_open; tracefs from " + r.Source + ")",
		"dropped_events": r.Lost(),
	})
}

// symbols maps the kernel's text addresses to names (/proc/kallsyms).
type symbols struct {
	addr  []uint64
	names []string
}

func loadSymbols() *symbols {
	s := &symbols{}
	f, err := safefile.Open("/proc/kallsyms", safefile.FollowLinks)
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 || (fs[1] != "t" && fs[1] != "T") {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		s.addr, s.names = append(s.addr, a), append(s.names, fs[2])
	}
	idx := make([]int, len(s.addr))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return s.addr[idx[i]] < s.addr[idx[j]] })
	a, n := make([]uint64, len(idx)), make([]string, len(idx))
	for i, k := range idx {
		a[i], n[i] = s.addr[k], s.names[k]
	}
	s.addr, s.names = a, n
	return s
}

func (s *symbols) name(addr uint64) string {
	i := sort.Search(len(s.addr), func(i int) bool { return s.addr[i] > addr }) - 1
	if i < 0 {
		return fmt.Sprintf("work 0x%x", addr)
	}
	if s.addr[i] == addr {
		return s.names[i]
	}
	return fmt.Sprintf("%s+0x%x", s.names[i], addr-s.addr[i])
}
