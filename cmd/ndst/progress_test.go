package main

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a strings.Builder safe for the progress goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeTerminal makes stderr writers count as terminals for the test.
func fakeTerminal(t *testing.T, delay time.Duration) {
	t.Helper()
	oldTerm, oldDelay := isTerminal, progressDelay
	isTerminal = func(io.Writer) bool { return true }
	progressDelay = delay
	t.Cleanup(func() { isTerminal, progressDelay = oldTerm, oldDelay })
}

func TestProgressAppearsOnlyForLongWork(t *testing.T) {
	fakeTerminal(t, 50*time.Millisecond)
	var errOut syncBuffer
	g := &globalOptions{stderr: &errOut}
	quick := g.startProgress("quick: nothing to see")
	quick.stop()
	time.Sleep(100 * time.Millisecond)
	if s := errOut.String(); s != "" {
		t.Errorf("a command done before the delay drew %q", s)
	}
	long := g.startProgress("long: first step")
	time.Sleep(120 * time.Millisecond)
	long.describe("long: second step")
	time.Sleep(150 * time.Millisecond)
	long.stop()
	s := errOut.String()
	if !strings.Contains(s, "long: first step") || !strings.Contains(s, "long: second step") {
		t.Errorf("progress of a long command = %q, want both of its descriptions", s)
	}
	after := len(errOut.String())
	time.Sleep(300 * time.Millisecond)
	if len(errOut.String()) != after {
		t.Errorf("progress kept drawing after stop")
	}
}

func TestProgressOffWhenNotATerminalOrVerbose(t *testing.T) {
	var errOut syncBuffer
	g := &globalOptions{stderr: &errOut}
	if p := g.startProgress("x"); p != nil { // a buffer is no terminal
		t.Errorf("progress started on a non-terminal")
	}
	fakeTerminal(t, time.Millisecond)
	g.verbose = 1
	if p := g.startProgress("x"); p != nil {
		t.Errorf("progress started with -v, which prints its own lines")
	}
	var nilP *progress
	nilP.describe("x")
	nilP.set(1, 2)
	nilP.stop()
}

// TestProgressOfACommand: a bench long enough to pass the delay draws its
// bar on stderr and leaves stdout as it would be without a terminal.
func TestProgressOfACommand(t *testing.T) {
	args := []string{"bench", "--strategy", "tick", "--count", "200", "--runs", "200", "--jobs", "1"}
	plain, _, code := ndstRunArgs(args...)
	if code != 0 {
		t.Fatalf("ndst %v = exit %d", args, code)
	}
	fakeTerminal(t, time.Millisecond)
	var out, errOut syncBuffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("ndst %v on a terminal = exit %d", args, code)
	}
	if !strings.Contains(errOut.String(), "bench: 1 cells × 200 runs") {
		t.Errorf("stderr = %q, want the bench's progress", errOut.String())
	}
	if out.String() != plain { // the table is deterministic
		t.Errorf("stdout changed with a terminal on stderr:\n%s\nwant\n%s", out.String(), plain)
	}
}
