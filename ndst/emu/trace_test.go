package emu

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// TestTraceIsChromeTraceJSON: --trace writes trace events Perfetto reads,
// with the grace periods as async spans, the task's phases and its sleeps.
func TestTraceIsChromeTraceJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	b, err := Open(context.Background(), Config{Profile: "6.18", HZ: 250, CPUs: 2, Ephemeral: true, TracePath: path})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := ndst.ParseTemplate("dummy%d")
	if _, err := b.Add(context.Background(), ndst.AddRequest{Count: 3, Template: tmpl}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 3, OneByOne: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Events []struct {
			Name, Ph, Cat string
			Ts, Dur       float64
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	count := map[string]int{}
	for _, e := range tr.Events {
		count[e.Ph+":"+e.Cat]++
		if e.Ph == "X" && e.Dur <= 0 {
			t.Errorf("complete event %+v has no duration", e)
		}
	}
	if count["b:rcu"] != 3 || count["e:rcu"] != 3 || count["X:phase"] == 0 || count["X:sched"] == 0 || count["i:irq"] == 0 {
		t.Errorf("trace events by kind = %v; want 3 grace periods begun and ended, phases, runs and ticks", count)
	}
}
