package ktrace

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRecord records a second of this machine and a namespace's cleanup:
// the trace has CPU lanes and the cleanup_net work item.
func TestRecord(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tracepoints need root")
	}
	r, err := Start()
	if err != nil {
		t.Skipf("cannot record here: %v", err)
	}
	name := "ndst-ktrace-" + time.Now().Format("150405.000")
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err == nil {
		_ = exec.Command("ip", "netns", "del", name).Run()
	} else {
		t.Logf("ip netns add: %v %s", err, out)
	}
	time.Sleep(300 * time.Millisecond)
	r.Stop()
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Events []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	cpuLanes, cleanup := 0, false
	for _, e := range doc.Events {
		if e.Pid == pidCPUs && e.Ph == "X" {
			cpuLanes++
		}
		if e.Name == "cleanup_net" {
			cleanup = true
		}
	}
	if cpuLanes == 0 || !cleanup {
		t.Errorf("trace: %d CPU slices, cleanup_net seen %v (lost %d); want both", cpuLanes, cleanup, r.Lost())
	}
}
