package wqtrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// Where tracefs and the kernel's symbols are; tests point them elsewhere.
var (
	tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	kallsyms    = "/proc/kallsyms"
)

const ringPages = 16 // per CPU, a power of two

// Watcher follows the runs of one work function.
type Watcher struct {
	fn        uint64
	startID   uint16
	endID     uint16
	fnOffset  int
	fds       []int
	rings     [][]byte
	runs      []Run
	Lost      int // events the kernel dropped (ring full)
	unmatched int
}

// Open starts watching the runs of the kernel work function fn
// ("cleanup_net").
func Open(fn string) (*Watcher, error) {
	dir, err := tracefs()
	if err != nil {
		return nil, err
	}
	addr, err := symbol(fn)
	if err != nil {
		return nil, err
	}
	w := &Watcher{fn: addr}
	var startOff, endOff int
	if w.startID, startOff, err = event(dir, "workqueue_execute_start"); err != nil {
		return nil, err
	}
	if w.endID, endOff, err = event(dir, "workqueue_execute_end"); err != nil {
		return nil, err
	}
	if startOff != endOff {
		return nil, fmt.Errorf("workqueue tracepoints: the function field is at offsets %d and %d", startOff, endOff)
	}
	w.fnOffset = startOff
	filter := fmt.Sprintf("function == 0x%x", addr)
	for cpu := range runtime.NumCPU() {
		if !online(cpu) {
			continue
		}
		var leader int
		for i, id := range []uint16{w.startID, w.endID} {
			attr := unix.PerfEventAttr{
				Type:        unix.PERF_TYPE_TRACEPOINT,
				Config:      uint64(id),
				Sample:      1,
				Sample_type: unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_RAW,
				Bits:        unix.PerfBitUseClockID,
				Wakeup:      1,
				Clockid:     unix.CLOCK_MONOTONIC,
			}
			attr.Size = uint32(unsafe.Sizeof(attr))
			fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				w.Close()
				return nil, fmt.Errorf("open the workqueue tracepoint on CPU %d: %w", cpu, err)
			}
			w.fds = append(w.fds, fd)
			if err := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, filter); err != nil {
				w.Close()
				return nil, fmt.Errorf("filter the workqueue tracepoint (%s): %w", filter, err)
			}
			if i == 0 {
				leader = fd
				ring, err := unix.Mmap(fd, 0, (1+ringPages)*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
				if err != nil {
					w.Close()
					return nil, fmt.Errorf("map the tracepoint's ring on CPU %d: %w", cpu, err)
				}
				w.rings = append(w.rings, ring)
			} else if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, leader); err != nil {
				w.Close()
				return nil, fmt.Errorf("share the tracepoints' ring on CPU %d: %w", cpu, err)
			}
		}
	}
	if len(w.rings) == 0 {
		return nil, errors.New("no online CPU to watch")
	}
	return w, nil
}

// online reports whether a CPU is online (CPU 0 always is).
func online(cpu int) bool {
	b, err := safefile.ReadKernelFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/online", cpu))
	return err != nil || strings.TrimSpace(string(b)) == "1"
}

func tracefs() (string, error) {
	for _, d := range tracefsDirs {
		if _, err := os.Stat(filepath.Join(d, "events", "workqueue")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("tracefs with the workqueue events is not mounted (%s)", strings.Join(tracefsDirs, ", "))
}

// event reads a tracepoint's id and the offset of its "function" field.
func event(dir, name string) (uint16, int, error) {
	base := filepath.Join(dir, "events", "workqueue", name)
	b, err := safefile.ReadKernelFile(filepath.Join(base, "id"))
	if err != nil {
		return 0, 0, fmt.Errorf("tracepoint workqueue:%s: %w", name, err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 16)
	if err != nil {
		return 0, 0, fmt.Errorf("tracepoint workqueue:%s: id %q", name, b)
	}
	f, err := safefile.ReadKernelFile(filepath.Join(base, "format"))
	if err != nil {
		return 0, 0, fmt.Errorf("tracepoint workqueue:%s: %w", name, err)
	}
	off, ok := fieldOffset(string(f), "function")
	if !ok {
		return 0, 0, fmt.Errorf("tracepoint workqueue:%s has no 8-byte function field", name)
	}
	return uint16(id), off, nil
}

// fieldOffset finds "field:void * NAME;	offset:N;	size:8;" in a
// tracepoint format.
func fieldOffset(format, name string) (int, bool) {
	for _, l := range strings.Split(format, "\n") {
		l = strings.TrimSpace(l)
		decl, rest, ok := strings.Cut(l, ";")
		if !ok || !strings.HasPrefix(decl, "field:") || !strings.HasSuffix(decl, " "+name) && !strings.HasSuffix(decl, "*"+name) {
			continue
		}
		var off, size int
		for _, kv := range strings.Split(rest, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), ":")
			n, _ := strconv.Atoi(v)
			switch k {
			case "offset":
				off = n
			case "size":
				size = n
			}
		}
		return off, size == 8
	}
	return 0, false
}

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
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || a == 0 {
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
	type ev struct {
		t     int64
		start bool
	}
	var evs []ev
	page := os.Getpagesize()
	ne := binary.NativeEndian
	for _, ring := range w.rings {
		head := atomic.LoadUint64((*uint64)(unsafe.Pointer(&ring[1024])))
		tailp := (*uint64)(unsafe.Pointer(&ring[1032]))
		tail := atomic.LoadUint64(tailp)
		data := ring[page:]
		size := uint64(len(data))
		read := func(off uint64, n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = data[(off+uint64(i))%size]
			}
			return b
		}
		for tail < head {
			h := read(tail, 8)
			typ, sz := ne.Uint32(h), uint64(ne.Uint16(h[6:]))
			if sz < 8 {
				break
			}
			rec := read(tail+8, int(sz-8))
			switch typ {
			case unix.PERF_RECORD_SAMPLE:
				if len(rec) >= 12 {
					t := int64(ne.Uint64(rec))
					n := int(ne.Uint32(rec[8:]))
					raw := rec[12:min(12+n, len(rec))]
					if len(raw) >= w.fnOffset+8 && ne.Uint64(raw[w.fnOffset:]) == w.fn {
						evs = append(evs, ev{t, ne.Uint16(raw) == w.startID})
					}
				}
			case unix.PERF_RECORD_LOST:
				if len(rec) >= 16 {
					w.Lost += int(ne.Uint64(rec[8:]))
				}
			}
			tail += sz
		}
		atomic.StoreUint64(tailp, tail)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	for _, e := range evs {
		switch {
		case e.start:
			w.runs = append(w.runs, Run{Start: e.t})
		case len(w.runs) > 0 && w.runs[len(w.runs)-1].End == 0:
			w.runs[len(w.runs)-1].End = e.t
		default:
			w.unmatched++ // the end of a run that started before Open
		}
	}
	return append([]Run(nil), w.runs...)
}

// Close stops watching.
func (w *Watcher) Close() {
	for _, r := range w.rings {
		_ = unix.Munmap(r)
	}
	for _, fd := range w.fds {
		unix.Close(fd)
	}
	w.rings, w.fds = nil, nil
}
