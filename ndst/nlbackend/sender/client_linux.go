package sender

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrGaveUp is wrapped by Call's error when the give-up time passed: the
// request is still with the kernel.
var ErrGaveUp = errors.New("gave up waiting for the kernel")

// startTimeout bounds the child's start-up (exec and its first frame).
const startTimeout = 10 * time.Second

// interruptGrace is how long Call still waits for a request in flight once
// its context is done: a normal request finishes in far less.
const interruptGrace = time.Second

// Sender is the client of one sender (see the package doc).
type Sender struct {
	// PID and TID name the thread that enters the kernel.
	PID, TID int
	// InProcess is true when the requests run on a thread of this
	// process (the child could not be started; Fallback says why).
	InProcess bool
	Fallback  string

	clock   int32 // the sender's CPU clock, as seen from here
	reqW    *os.File
	replies chan Reply
	done    chan struct{} // closed when the reply stream ends
	cmd     *exec.Cmd

	mu     sync.Mutex
	broken error
	// Sent and SentCPU are CLOCK_MONOTONIC and the sender's CPU clock
	// when the request in flight (or the last one) was handed over.
	Sent, SentCPU int64
}

// Start starts a sender holding files (in this order, indexed by
// Request.File). Start duplicates what it needs: the caller keeps and
// closes its files.
func Start(files []*os.File) (*Sender, error) {
	s, err := startChild(files)
	if err == nil {
		return s, nil
	}
	s, ferr := startInProcess(files)
	if ferr != nil {
		return nil, fmt.Errorf("start a sender: %v; in process: %w", err, ferr)
	}
	s.Fallback = err.Error()
	return s, nil
}

func startChild(files []*os.File) (*Sender, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"ndst-sender"},
		Env:        []string{envChild + "=" + strconv.Itoa(len(files)), "GOMAXPROCS=1"},
		ExtraFiles: append([]*os.File{reqR, repW}, files...),
		// No stdout or stderr: a child left inside the kernel must not
		// keep a pipe of ndst's caller open (a shell's $(...) would wait).
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	reqR.Close()
	repW.Close()
	if err != nil {
		reqW.Close()
		repR.Close()
		return nil, fmt.Errorf("start the sender process: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reaped whenever it ends
	s, err := handshake(reqW, repR, true)
	if err != nil {
		reqW.Close()
		repR.Close()
		_ = cmd.Process.Kill()
		return nil, err
	}
	s.cmd = cmd
	s.clock = processClock(s.PID)
	return s, nil
}

func startInProcess(files []*os.File) (*Sender, error) {
	fds := make([]int, len(files))
	for i, f := range files {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			for _, d := range fds[:i] {
				unix.Close(d)
			}
			return nil, err
		}
		fds[i] = fd
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	go func() {
		// Never unlocked: the thread goes with the goroutine, and nothing
		// else ever runs on it.
		runtime.LockOSThread()
		_ = serve(reqR, repW, fds, false, threadCPU)
		reqR.Close()
		repW.Close()
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	s, err := handshake(reqW, repR, false)
	if err != nil {
		reqW.Close()
		repR.Close()
		return nil, err
	}
	s.InProcess = true
	s.clock = threadClock(s.TID)
	return s, nil
}

// handshake reads the sender's hello and starts the reply reader.
func handshake(reqW, repR *os.File, child bool) (*Sender, error) {
	first := make(chan error, 1)
	s := &Sender{reqW: reqW, replies: make(chan Reply, 1), done: make(chan struct{})}
	go func() {
		b, err := readFrame(repR)
		if err == nil {
			var h hello
			if h, err = decodeHello(b); err == nil {
				if h.Child != child {
					err = errors.New("sender: unexpected hello")
				}
				s.PID, s.TID = int(h.PID), int(h.TID)
			}
		}
		first <- err
		if err != nil {
			return
		}
		defer close(s.done)
		defer repR.Close()
		for {
			b, err := readFrame(repR)
			if err != nil {
				return
			}
			r, err := decodeReply(b)
			if err != nil {
				return
			}
			s.replies <- r
		}
	}()
	select {
	case err := <-first:
		if err != nil {
			return nil, fmt.Errorf("the sender did not start: %w", err)
		}
		return s, nil
	case <-time.After(startTimeout):
		return nil, fmt.Errorf("the sender did not start within %v", startTimeout)
	}
}

// CPUClock reads the sender's CPU clock (the child's process clock, or
// the in-process thread's), the clock of Reply.CPU0 and CPU1.
func (s *Sender) CPUClock() int64 { return clockNS(s.clock) }

// Monotonic is CLOCK_MONOTONIC in ns, the clock of Reply.T0 and T1.
func Monotonic() int64 { return monotonic() }

// Posix CPU clock ids of another process or thread (MAKE_PROCESS_CPUCLOCK,
// MAKE_THREAD_CPUCLOCK with CPUCLOCK_SCHED in include/linux/posix-timers.h).
func processClock(pid int) int32 { return int32(^uint32(pid)<<3) | 2 }
func threadClock(tid int) int32  { return int32(^uint32(tid)<<3) | 2 | 4 }

// Broken returns why the sender takes no more requests (nil when it does).
func (s *Sender) Broken() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// Call hands q to the sender and waits for its reply, at most giveUp,
// calling tick about once a second meanwhile. On giving up (the error
// wraps ErrGaveUp) or an interruption (ctx done and the request still in
// flight after a grace period; the error wraps ctx.Err()) the request stays
// with the kernel and the Sender refuses further calls.
func (s *Sender) Call(ctx context.Context, q Request, giveUp time.Duration, tick func()) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return Reply{}, s.broken
	}
	s.Sent, s.SentCPU = monotonic(), s.CPUClock()
	if err := writeFrame(s.reqW, q.encode()); err != nil {
		s.broken = fmt.Errorf("the sender went away: %w", err)
		return Reply{}, s.broken
	}
	limit := time.NewTimer(giveUp)
	defer limit.Stop()
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	done, interrupted := ctx.Done(), false
	for {
		select {
		case r := <-s.replies:
			return r, nil
		case <-s.done:
			select {
			case r := <-s.replies:
				return r, nil
			default:
			}
			s.broken = errors.New("the sender exited before replying")
			return Reply{}, s.broken
		case <-ticker.C:
			if tick != nil {
				tick()
			}
		case <-limit.C:
			if interrupted { // and the grace period is over
				s.broken = fmt.Errorf("interrupted while the kernel was still working on the request: %w", ctx.Err())
			} else {
				s.broken = fmt.Errorf("%w after %v", ErrGaveUp, giveUp)
			}
			return Reply{}, s.broken
		case <-done:
			done, interrupted = nil, true
			limit.Reset(interruptGrace) // no stale tick since Go 1.23

		}
	}
}

// Close stops the sender: its request pipe is closed, so a child that is
// not inside the kernel exits at once, and one that is exits when its
// request returns. Close does not wait for that.
func (s *Sender) Close() error {
	if s == nil || s.reqW == nil {
		return nil
	}
	err := s.reqW.Close()
	s.reqW = nil
	return err
}
