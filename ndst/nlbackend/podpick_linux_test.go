package nlbackend

import "testing"

// TestNextPodToDelete: in order while the churn runs; once it ends, every
// pod made and not taken, after the makers in flight, and none twice.
func TestNextPodToDelete(t *testing.T) {
	ready := []bool{true, false, true, true, false}
	taken := []bool{false, false, false, false, false}
	next := 0
	never := func() bool { return false }
	always := func() bool { return true }
	waited := 0
	wait := func() { waited++; ready[1] = true } // the pod in the making is made
	if j := nextPodToDelete(5, &next, ready, taken, never, never, wait); j != 0 {
		t.Fatalf("running: got pod %d, want 0", j)
	}
	taken[0] = true
	// Pod 1 is being made: a running churn waits for it.
	if j := nextPodToDelete(5, &next, ready, taken, never, never, wait); j != 1 || waited != 1 {
		t.Fatalf("running: got pod %d after %d waits, want 1 after 1", j, waited)
	}
	taken[1] = true
	ready[1] = true
	ready[2] = false // say pod 2 was never made (its maker interrupted)
	// Ended with a maker still making: wait for it, then take what is made.
	making := 1
	wait = func() { waited++; making = 0 }
	if j := nextPodToDelete(5, &next, ready, taken, always, func() bool { return making > 0 }, wait); j != 3 || waited != 2 {
		t.Fatalf("ended: got pod %d after %d waits, want 3 after 2", j, waited)
	}
	taken[3] = true
	if j := nextPodToDelete(5, &next, ready, taken, always, never, wait); j != -1 {
		t.Fatalf("ended with every made pod taken: got pod %d, want -1", j)
	}
}
