package wqtrace

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestCleanupRun deletes a namespace and sees one run of cleanup_net.
func TestCleanupRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tracepoints and namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 to make a namespace")
	}
	w, err := Open("cleanup_net")
	if err != nil {
		t.Skipf("cannot watch cleanup_net here: %v", err)
	}
	defer w.Close()
	name := "ndst-wqtrace-" + strconv.Itoa(os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t0 := time.Now()
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v: %s", err, out)
	}
	for time.Since(t0) < 10*time.Second {
		runs := w.Poll()
		if len(runs) > 0 && runs[len(runs)-1].End > 0 {
			r := runs[len(runs)-1]
			if r.End < r.Start {
				t.Fatalf("run %+v ends before it starts", r)
			}
			t.Logf("cleanup_net ran %v", time.Duration(r.End-r.Start))
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no run of cleanup_net seen within 10 s of deleting a namespace (lost %d)", w.Lost())
}
