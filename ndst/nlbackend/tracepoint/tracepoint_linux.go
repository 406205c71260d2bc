package tracepoint

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/ndst-project/ndst/ndst/nlbackend/pseudofs"
	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// Lookup finds tracepoints by name ("workqueue:workqueue_execute_start")
// and says where tracefs was read (package pseudofs). A missing event is an
// error naming it.
func Lookup(names ...string) ([]Event, string, error) {
	var rels []string
	for _, n := range names {
		sys, name, err := parseName(n)
		if err != nil {
			return nil, "", err
		}
		rels = append(rels, "events/"+sys+"/"+name+"/id", "events/"+sys+"/"+name+"/format")
	}
	files, src, err := pseudofs.Read(pseudofs.Tracefs, rels...)
	if err != nil {
		return nil, "", err
	}
	out := make([]Event, len(names))
	for i, n := range names {
		sys, name, _ := parseName(n)
		idb, ok1 := files[rels[2*i]]
		fmtb, ok2 := files[rels[2*i+1]]
		if !ok1 || !ok2 {
			return nil, src, fmt.Errorf("this kernel has no tracepoint %s (tracefs has no events/%s/%s)", n, sys, name)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(idb)), 10, 64)
		if err != nil {
			return nil, src, fmt.Errorf("tracepoint %s: id %q", n, idb)
		}
		out[i] = Event{System: sys, Name: name, ID: id, Fields: ParseFormat(string(fmtb))}
	}
	return out, src, nil
}

// Set is a set of open tracepoint events and their rings.
type Set struct {
	fds   []int
	rings []ring
	Lost  int // records the kernel dropped (a ring was full)
}

type ring struct {
	mem []byte
	cpu int // -1: a thread's events, on any CPU
}

// Spec is one event to open, with a filter in the kernel's syntax
// ("function == 0xffffffff81234567"; empty for none).
type Spec struct {
	Event  Event
	Filter string
}

// OpenCPUs opens every spec on every online CPU, all of one CPU's events
// sharing one ring of pages pages (a power of two).
func OpenCPUs(specs []Spec, pages int) (*Set, error) {
	s := &Set{}
	for cpu := range runtime.NumCPU() {
		if !online(cpu) {
			continue
		}
		if err := s.open(specs, -1, cpu, pages); err != nil {
			s.Close()
			return nil, err
		}
	}
	if len(s.rings) == 0 {
		return nil, errors.New("no online CPU to watch")
	}
	return s, nil
}

// OpenThread opens every spec for one thread (a tid), on whatever CPU it
// runs, sharing one ring.
func OpenThread(specs []Spec, tid, pages int) (*Set, error) {
	s := &Set{}
	if err := s.open(specs, tid, -1, pages); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Set) open(specs []Spec, pid, cpu, pages int) error {
	where := fmt.Sprintf("on CPU %d", cpu)
	if cpu < 0 {
		where = fmt.Sprintf("for thread %d", pid)
	}
	leader := -1
	for _, sp := range specs {
		attr := unix.PerfEventAttr{
			Type:        unix.PERF_TYPE_TRACEPOINT,
			Config:      sp.Event.ID,
			Sample:      1,
			Sample_type: unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_RAW,
			Bits:        unix.PerfBitUseClockID,
			Wakeup:      1,
			Clockid:     unix.CLOCK_MONOTONIC,
		}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return fmt.Errorf("open the tracepoint %s %s: %w", sp.Event, where, err)
		}
		s.fds = append(s.fds, fd)
		if sp.Filter != "" {
			if err := unix.IoctlSetString(fd, unix.PERF_EVENT_IOC_SET_FILTER, sp.Filter); err != nil {
				return fmt.Errorf("filter the tracepoint %s (%s): %w", sp.Event, sp.Filter, err)
			}
		}
		if leader < 0 {
			leader = fd
			mem, err := unix.Mmap(fd, 0, (1+pages)*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				return fmt.Errorf("map the ring of %s %s: %w", sp.Event, where, err)
			}
			s.rings = append(s.rings, ring{mem, cpu})
		} else if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, leader); err != nil {
			return fmt.Errorf("share the ring of %s %s: %w", sp.Event, where, err)
		}
	}
	return nil
}

// online reports whether a CPU is online (CPU 0 always is).
func online(cpu int) bool {
	b, err := safefile.ReadKernelFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/online", cpu))
	return err != nil || strings.TrimSpace(string(b)) == "1"
}

// Read returns the records written since the last call, ordered by time;
// it never blocks.
func (s *Set) Read() []Sample {
	var out []Sample
	page := os.Getpagesize()
	for _, r := range s.rings {
		// struct perf_event_mmap_page: data_head at 1024, data_tail at 1032.
		head := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.mem[1024])))
		tailp := (*uint64)(unsafe.Pointer(&r.mem[1032]))
		tail := atomic.LoadUint64(tailp)
		data := r.mem[page:]
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
				// u64 time; u32 cpu, res; u32 size; char raw[size].
				if len(rec) >= 20 {
					n := int(ne.Uint32(rec[16:]))
					raw := rec[20:min(20+n, len(rec))]
					if len(raw) >= 2 {
						out = append(out, Sample{Time: int64(ne.Uint64(rec)), CPU: int(ne.Uint32(rec[8:])), ID: uint64(ne.Uint16(raw)), Raw: raw})
					}
				}
			case unix.PERF_RECORD_LOST:
				if len(rec) >= 16 {
					s.Lost += int(ne.Uint64(rec[8:]))
				}
			}
			tail += sz
		}
		atomic.StoreUint64(tailp, tail)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out
}

// Close ends the events.
func (s *Set) Close() {
	for _, r := range s.rings {
		_ = unix.Munmap(r.mem)
	}
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.rings, s.fds = nil, nil
}
