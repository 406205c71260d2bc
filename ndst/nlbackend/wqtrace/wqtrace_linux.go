package wqtrace

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/ndst/nlbackend/tracepoint"
	"github.com/ndst-project/ndst/safefile"
)

// Where the kernel's symbols are; tests point it elsewhere.
var kallsyms = "/proc/kallsyms"

const ringPages = 16 // per CPU, a power of two

// Watcher follows the runs of one work function.
type Watcher struct {
	fn         uint64
	start, end tracepoint.Event
	set        *tracepoint.Set
	history
	// Source is where the tracepoints' ids were read (the host's tracefs
	// or a private mount of it).
	Source string
}

// Open starts watching the runs of the kernel work function fn
// ("cleanup_net").
func Open(fn string) (*Watcher, error) {
	addr, err := symbol(fn)
	if err != nil {
		return nil, err
	}
	evs, src, err := tracepoint.Lookup("workqueue:workqueue_execute_start", "workqueue:workqueue_execute_end")
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		if f, ok := e.Fields["function"]; !ok || f.Size != 8 {
			return nil, fmt.Errorf("tracepoint %s has no 8-byte function field", e)
		}
	}
	filter := fmt.Sprintf("function == 0x%x", addr)
	set, err := tracepoint.OpenCPUs([]tracepoint.Spec{{Event: evs[0], Filter: filter}, {Event: evs[1], Filter: filter}}, ringPages)
	if err != nil {
		return nil, err
	}
	return &Watcher{fn: addr, start: evs[0], end: evs[1], set: set, Source: src}, nil
}

// Lost is the number of records the kernel dropped.
func (w *Watcher) Lost() int { return w.set.Lost }

// symbol finds a text symbol's address in /proc/kallsyms.
func symbol(name string) (uint64, error) {
	f, err := safefile.Open(kallsyms, safefile.FollowLinks)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasSuffix(l, " "+name) {
			continue
		}
		fs := strings.Fields(l)
		if len(fs) != 3 || fs[2] != name || (fs[1] != "t" && fs[1] != "T") {
			continue
		}
		var a uint64
		if _, err := fmt.Sscanf(fs[0], "%x", &a); err != nil || a == 0 {
			return 0, fmt.Errorf("%s hides the kernel's addresses (kernel.kptr_restrict)", kallsyms)
		}
		return a, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", kallsyms, err)
	}
	return 0, fmt.Errorf("%s has no symbol %s", kallsyms, name)
}

// Poll reads what the tracepoints recorded since the last call and returns
// every run seen so far, ordered by start; it never blocks.
func (w *Watcher) Poll() []Run {
	var es []edge
	for _, s := range w.set.Read() {
		if fn, ok := w.start.Uint(s.Raw, "function"); !ok || fn != w.fn {
			continue
		}
		es = append(es, edge{s.Time, s.ID == w.start.ID})
	}
	return w.add(es)
}

// Close stops watching.
func (w *Watcher) Close() { w.set.Close() }
