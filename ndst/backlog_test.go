package ndst

import (
	"math"
	"testing"
)

func TestBacklogSlope(t *testing.T) {
	// A count that grows by one every 100 ms: 10 a second.
	var pts []BacklogPoint
	for i := range 100 {
		pts = append(pts, BacklogPoint{AtNS: int64(i) * 100e6, Waiting: i})
	}
	if s, n := BacklogSlope(pts, 5e9, 10e9); math.Abs(s-10) > 0.05 || n != 50 {
		t.Errorf("BacklogSlope(growing) = %g, %d points; want 10, 50", s, n)
	}
	// A count that holds at 7, then drains after the window: 0 inside it.
	flat := []BacklogPoint{{0, 0, 0}, {1e9, 7, 7}, {20e9, 0, 0}}
	if s, _ := BacklogSlope(flat, 5e9, 10e9); math.Abs(s) > 1e-9 {
		t.Errorf("BacklogSlope(flat) = %g, want 0", s)
	}
	if s, n := BacklogSlope(flat, 10e9, 10e9); s != 0 || n != 0 {
		t.Errorf("BacklogSlope(empty window) = %g, %d", s, n)
	}
}

func TestThinBacklog(t *testing.T) {
	var pts []BacklogPoint
	for i := range 1000 {
		pts = append(pts, BacklogPoint{AtNS: int64(i), Waiting: i % 97})
	}
	pts[501].Waiting = 1000
	got := ThinBacklog(pts, 50)
	if len(got) > 51 || got[0] != pts[0] || got[len(got)-1] != pts[999] {
		t.Fatalf("ThinBacklog kept %d points, first %v last %v", len(got), got[0], got[len(got)-1])
	}
	peak := false
	for _, p := range got {
		peak = peak || p.Waiting == 1000
	}
	if !peak {
		t.Errorf("ThinBacklog dropped the peak")
	}
}
