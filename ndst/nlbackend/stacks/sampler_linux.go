package stacks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// DefaultInterval is the sampling period: 1 kHz, a quarter of a jiffy at
// HZ=250.
const DefaultInterval = time.Millisecond

// maxStack bounds one read of the stack file: the kernel prints at most
// 64 frames (MAX_STACK_TRACE_DEPTH) of one line each.
const maxStack = 16 << 10

// maxPending bounds the samples kept for the request in progress (an hour
// at 1 kHz); beyond it samples are dropped and counted.
const maxPending = 4 << 20

// Errors saying why a thread cannot be sampled.
var (
	// ErrNoStackFile: the kernel has no /proc/PID/stack (built without
	// CONFIG_STACKTRACE).
	ErrNoStackFile = errors.New("this kernel has no /proc/PID/stack")
	// ErrNotPermitted: reading another thread's kernel stack needs
	// CAP_SYS_ADMIN (root).
	ErrNotPermitted = errors.New("reading a thread's kernel stack needs CAP_SYS_ADMIN")
)

// Sampler samples one thread's kernel stack while a request is active.
type Sampler struct {
	path     string
	f        *os.File
	interval time.Duration
	clock    func() int64
	active   atomic.Bool
	stop     chan struct{}
	done     chan struct{}

	// cpu is the CPU the sampler shares with the thread (-1: not pinned);
	// restore gives the thread back its affinity.
	cpu     int
	restore func()

	mu      sync.Mutex
	pending []Sample
	acc     *Acc
	// folded counts the samples by stack, as Fold writes them.
	folded map[string]int64
	// Dropped counts samples beyond maxPending; Failed, reads that failed.
	Dropped, Failed int
	// CostNS is the sampler thread's own CPU time.
	CostNS int64
}

// Start opens /proc/PID/task/TID/stack and starts sampling it every
// interval (0: DefaultInterval) while SetActive(true), reading the thread's
// CPU clock (clock) with each sample. It fails with
// ErrNoStackFile or ErrNotPermitted (wrapped) when the stack cannot be read.
func Start(pid, tid int, interval time.Duration, clock func() int64) (*Sampler, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	path := fmt.Sprintf("/proc/%d/task/%d/stack", pid, tid)
	f, err := safefile.Open(path, safefile.FollowLinks)
	if err == nil {
		// The permission is checked on each read, not at the open.
		buf := make([]byte, maxStack)
		_, err = unix.Pread(int(f.Fd()), buf, 0)
		if err != nil {
			f.Close()
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(fmt.Sprintf("/proc/%d/task/%d", pid, tid)); serr == nil {
			return nil, fmt.Errorf("%w (CONFIG_STACKTRACE)", ErrNoStackFile)
		}
		return nil, fmt.Errorf("thread %d of process %d is gone: %w", tid, pid, err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return nil, fmt.Errorf("%w; uid %d may not read %s", ErrNotPermitted, os.Geteuid(), path)
	default:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	s := &Sampler{path: path, f: f, interval: interval, clock: clock, stop: make(chan struct{}), done: make(chan struct{}), acc: NewAcc(), cpu: -1, folded: map[string]int64{}}
	s.cpu, s.restore = share(pid, tid)
	go s.loop()
	return s, nil
}

// share keeps thread tid on the CPU it is on now, for the sampler to run
// there too: a sampler waking another CPU every millisecond would keep that
// CPU from idling, which changes how soon grace periods end (measured here:
// a one-by-one delete 6% slower), while the thread it samples mostly sleeps.
// It returns the CPU (-1 when the affinity cannot be set) and the function
// that gives the thread its affinity back.
func share(pid, tid int) (int, func()) {
	b, err := safefile.ReadKernelFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return -1, func() {}
	}
	cpu, ok := statCPU(string(b))
	var old, one unix.CPUSet
	if !ok || unix.SchedGetaffinity(tid, &old) != nil || !old.IsSet(cpu) {
		return -1, func() {}
	}
	one.Set(cpu)
	if unix.SchedSetaffinity(tid, &one) != nil {
		return -1, func() {}
	}
	return cpu, func() { _ = unix.SchedSetaffinity(tid, &old) }
}

// statCPU reads the "processor" field (the 39th) of a /proc/PID/stat line:
// the CPU the thread last ran on.
func statCPU(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 37 {
		return 0, false
	}
	cpu, err := strconv.Atoi(f[36])
	return cpu, err == nil && cpu >= 0
}

// CPU is the CPU the sampler shares with its thread, -1 when it could not
// pin them together.
func (s *Sampler) CPU() int { return s.cpu }

// SetActive starts (true) or pauses (false) the sampling: it is active
// while a request is in flight.
func (s *Sampler) SetActive(on bool) { s.active.Store(on) }

// Window attributes one finished request from the samples taken during
// it, and forgets the samples up to its end.
func (s *Sampler) Window(w Window) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acc.Add(w, s.pending)
	keep := s.pending[:0]
	for _, x := range s.pending {
		if x.T > w.T1 {
			keep = append(keep, x)
		}
	}
	s.pending = keep
}

// Folded returns the samples taken so far by stack (Fold's form), each
// standing for one sampling interval.
func (s *Sampler) Folded() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.folded))
	for k, v := range s.folded {
		out[k] = v
	}
	return out
}

// Interval is the sampling period.
func (s *Sampler) Interval() time.Duration { return s.interval }

// AddOther adds time outside the requests (see Acc.AddOther).
func (s *Sampler) AddOther(d, cpu int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acc.AddOther(d, cpu)
}

// Stop ends the sampling and returns what was attributed.
func (s *Sampler) Stop() *Acc {
	close(s.stop)
	<-s.done
	s.restore()
	s.f.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acc
}

func (s *Sampler) loop() {
	defer close(s.done)
	// The thread is never unlocked (its timer slack is changed): it ends
	// with the goroutine.
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) // 1 µs: on time at 1 kHz
	if s.cpu >= 0 {
		var one unix.CPUSet
		one.Set(s.cpu)
		_ = unix.SchedSetaffinity(0, &one)
	}
	c0 := threadCPU()
	defer func() { s.CostNS = threadCPU() - c0 }()
	fd := int(s.f.Fd())
	buf := make([]byte, maxStack)
	step := int64(s.interval)
	next := monotonic()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		next += step
		ts := unix.NsecToTimespec(next)
		for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
		}
		now := monotonic()
		if now > next+step {
			next = now // behind (preempted): no burst of catching up
		}
		if !s.active.Load() {
			continue
		}
		cpu := s.clock()
		n, err := unix.Pread(fd, buf, 0)
		if err != nil {
			s.mu.Lock()
			s.Failed++
			s.mu.Unlock()
			continue
		}
		frames := Frames(buf[:n])
		x := Sample{T: now, CPU: cpu, Phase: Classify(frames)}
		key := Fold(frames)
		s.mu.Lock()
		if len(s.pending) < maxPending {
			s.pending = append(s.pending, x)
			if _, ok := s.folded[key]; ok || len(s.folded) < maxStacks {
				s.folded[key]++
			} else {
				s.folded[foldedOther]++
			}
		} else {
			s.Dropped++
		}
		s.mu.Unlock()
	}
}

func monotonic() int64 { return clockNS(unix.CLOCK_MONOTONIC) }
func threadCPU() int64 { return clockNS(unix.CLOCK_THREAD_CPUTIME_ID) }

func clockNS(id int32) int64 {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// Peek reads the stack of thread tid of process pid n times, every apart,
// and returns the phase of each reading: where a thread that does not
// return from the kernel is waiting.
func Peek(pid, tid, n int, every time.Duration) ([]string, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/stack", pid, tid)
	f, err := safefile.Open(path, safefile.FollowLinks)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, maxStack)
	var out []string
	for i := range n {
		if i > 0 {
			time.Sleep(every)
		}
		k, err := unix.Pread(int(f.Fd()), buf, 0)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", path, err)
		}
		out = append(out, Classify(Frames(buf[:k])))
	}
	return out, nil
}
