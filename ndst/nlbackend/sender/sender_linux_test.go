package sender

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestWrite runs OpWrite in a child sender and in process: the reply's
// times and CPU clock, and the file written.
func TestWrite(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		f, err := os.CreateTemp(t.TempDir(), "w")
		if err != nil {
			t.Fatal(err)
		}
		var s *Sender
		if inProcess {
			s, err = startInProcess([]*os.File{f})
		} else {
			s, err = startChild([]*os.File{f})
		}
		if err != nil {
			t.Fatalf("start (in process %v): %v", inProcess, err)
		}
		if s.InProcess != inProcess || s.PID <= 0 || s.TID <= 0 || (!inProcess && s.PID == os.Getpid()) {
			t.Errorf("sender = pid %d tid %d in process %v; want a thread of %s", s.PID, s.TID, s.InProcess, map[bool]string{true: "this process", false: "a child"}[inProcess])
		}
		r, err := s.Call(context.Background(), Request{Op: OpWrite, Data: []byte("1 2\n")}, 5*time.Second, nil)
		if err != nil || r.Err() != nil || r.T0 <= 0 || r.T1 < r.T0 || r.CPU1 < r.CPU0 {
			t.Errorf("Call(write) = %+v, %v", r, err)
		}
		if c := s.CPUClock(); c < r.CPU1 {
			t.Errorf("CPUClock() = %d after a reply with CPU1 %d", c, r.CPU1)
		}
		r, err = s.Call(context.Background(), Request{Op: OpWrite, File: 3}, 5*time.Second, nil)
		if err != nil || r.Err() == nil {
			t.Errorf("Call(write to file 3 of 1) = %+v, %v; want an error reply", r, err)
		}
		s.Close()
		if b, _ := os.ReadFile(f.Name()); string(b) != "1 2\n" {
			t.Errorf("file = %q, want %q", b, "1 2\n")
		}
		f.Close()
	}
}

// TestGiveUp: a netlink request whose acknowledgement never comes (sent
// on one end of a socket pair nobody answers); Call gives up, and the
// Sender then refuses further calls.
func TestGiveUp(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, peer := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer peer.Close()
	defer f.Close()
	s, err := startChild([]*os.File{f})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ticks := 0
	t0 := time.Now()
	_, err = s.Call(context.Background(), Request{Op: OpNetlink, Data: []byte("no answer"), Seq: 1}, 1500*time.Millisecond, func() { ticks++ })
	if !errors.Is(err, ErrGaveUp) || time.Since(t0) > 10*time.Second || ticks < 1 {
		t.Fatalf("Call(unanswered) = %v after %v with %d ticks; want ErrGaveUp after 1.5 s and a tick", err, time.Since(t0), ticks)
	}
	if _, err := s.Call(context.Background(), Request{Op: OpWrite}, time.Second, nil); !errors.Is(err, ErrGaveUp) {
		t.Errorf("Call after giving up = %v, want the give-up error again", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s2, err := startChild([]*os.File{f})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	t0 = time.Now()
	_, err = s2.Call(ctx, Request{Op: OpNetlink, Data: []byte("no answer"), Seq: 1}, time.Minute, nil)
	if !errors.Is(err, context.Canceled) || time.Since(t0) > 5*time.Second {
		t.Errorf("Call cancelled = %v after %v, want context.Canceled after the grace period", err, time.Since(t0))
	}
}
