package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestNoteOnce: a note raised by many runs of one command is printed once,
// distinct notes each once, from any goroutine.
func TestNoteOnce(t *testing.T) {
	var errBuf bytes.Buffer
	var mu sync.Mutex
	g := &globalOptions{stderr: lockedWriter{&errBuf, &mu}}
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.note("cleanup end from %s", "marker namespaces")
		}()
	}
	wg.Wait()
	g.note("another note")
	g.note("another note")
	out := errBuf.String()
	if n := strings.Count(out, "cleanup end from marker namespaces"); n != 1 {
		t.Errorf("a note raised 12 times was printed %d times:\n%s", n, out)
	}
	if n := strings.Count(out, "another note"); n != 1 {
		t.Errorf("another note printed %d times", n)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
