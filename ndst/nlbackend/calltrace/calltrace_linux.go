package calltrace

import (
	"fmt"

	"github.com/ndst-project/ndst/ndst/nlbackend/tracepoint"
)

// Watcher follows one thread's returns from one system call.
type Watcher struct {
	exit  tracepoint.Event
	set   *tracepoint.Set
	times []int64
	rets  []int64
}

// Open starts recording thread tid's returns from system call nr (a
// unix.SYS_* number).
func Open(tid, nr int) (*Watcher, error) {
	evs, _, err := tracepoint.Lookup("raw_syscalls:sys_exit")
	if err != nil {
		return nil, err
	}
	e := evs[0]
	if f, ok := e.Fields["id"]; !ok || f.Size != 8 {
		return nil, fmt.Errorf("tracepoint %s has no 8-byte id field", e)
	}
	set, err := tracepoint.OpenThread([]tracepoint.Spec{{Event: e, Filter: fmt.Sprintf("id == %d", nr)}}, tid, 4)
	if err != nil {
		return nil, err
	}
	return &Watcher{exit: e, set: set}, nil
}

// Returns reads what was recorded and returns, in order, the time (ns) of
// every return seen so far and the call's result (0 or -errno).
func (w *Watcher) Returns() (times, rets []int64) {
	for _, s := range w.set.Read() {
		ret, _ := w.exit.Int(s.Raw, "ret")
		w.times = append(w.times, s.Time)
		w.rets = append(w.rets, ret)
	}
	return append([]int64(nil), w.times...), append([]int64(nil), w.rets...)
}

// Lost is the number of records the kernel dropped.
func (w *Watcher) Lost() int { return w.set.Lost }

// Close stops recording.
func (w *Watcher) Close() { w.set.Close() }
