package wqtrace

import (
	"slices"
	"testing"
)

// TestLateRecord: a run's start read after its end (its CPU's ring read on a
// later poll) still pairs with that end, and the next run keeps its own.
func TestLateRecord(t *testing.T) {
	var h history
	// Poll 1: CPU 1's ring holds the end of run A (t=30); CPU 0's start of
	// A (t=10) was not yet visible when CPU 0 was read.
	if runs := h.add([]edge{{30, false}}); len(runs) != 0 {
		t.Fatalf("an end alone made runs %v", runs)
	}
	// Poll 2: A's start, and run B (40..50).
	runs := h.add([]edge{{10, true}, {40, true}, {50, false}})
	want := []Run{{10, 30}, {40, 50}}
	if !slices.Equal(runs, want) {
		t.Fatalf("runs = %v, want %v", runs, want)
	}
}

// TestPair: an end before any start is dropped; a start whose end was lost
// stays open rather than taking the next run's end.
func TestPair(t *testing.T) {
	got := pair([]edge{{5, false}, {10, true}, {20, true}, {25, false}, {30, true}})
	want := []Run{{10, 0}, {20, 25}, {30, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("pair = %v, want %v", got, want)
	}
}
