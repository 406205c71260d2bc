package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFoldedSim: del --folded writes the emulated delete's phases as folded
// stacks (root first, a weight in µs per line), whose weights sum to the
// delete's time; a path that cannot be written is refused before the run.
func TestFoldedSim(t *testing.T) {
	state := tempState(t)
	if _, e, code := ndstRun(t, state, "add", "50"); code != 0 {
		t.Fatal(e)
	}
	path := filepath.Join(t.TempDir(), "del.folded")
	out, errOut, code := ndstRun(t, state, "del", "1", "50", "--folded", path)
	if code != 0 {
		t.Fatalf("del --folded = exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^ndst del;[^ ;]+;\[(cpu|waiting)\] [0-9]+$`)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 {
		t.Fatalf("folded = %q", b)
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("folded line %q is not 'ndst del;PHASE;[cpu|waiting] MICROSECONDS'", l)
		}
	}
	if !strings.Contains(errOut, "wrote "+path) || !strings.Contains(out, "result:  ok") {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(t.TempDir(), "victim"), link); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := ndstRun(t, state, "del", "1", "50", "--folded", link); code != 2 || !strings.Contains(errOut, "--folded") {
		t.Errorf("--folded LINK = exit %d, %q; want a usage error before the run", code, errOut)
	}
}
