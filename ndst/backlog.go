package ndst

import "sort"

// The backlog of namespaces waiting for the kernel's cleanup, over time:
// what `unshare` and `churn --netns` report. A namespace is waiting from
// when its last reference went (its last process exited, or its delete
// returned) until cleanup_net freed it; "live" counts every struct net the
// kernel holds (alive, waiting, or being cleaned up), as /proc/slabinfo's
// net_namespace line shows it.

// BacklogPoint is the backlog at one time (from the start of the command,
// on the backend's clock).
type BacklogPoint struct {
	AtNS    int64 `json:"at_ns"`
	Waiting int   `json:"waiting"`
	Live    int   `json:"live"`
}

// MaxBacklogPoints bounds a backlog series: longer ones are thinned to at
// most this many points, keeping the first, the last and the peak.
const MaxBacklogPoints = 512

// ThinBacklog returns at most max points of pts (in time order): evenly
// spaced ones, the first, the last and the one with the most waiting.
func ThinBacklog(pts []BacklogPoint, max int) []BacklogPoint {
	if len(pts) <= max || max < 3 {
		return pts
	}
	peak := 0
	for i, p := range pts {
		if p.Waiting > pts[peak].Waiting {
			peak = i
		}
	}
	keep := map[int]bool{0: true, len(pts) - 1: true, peak: true}
	for i := 1; len(keep) < max && i < max; i++ {
		keep[i*(len(pts)-1)/(max-1)] = true
	}
	idx := make([]int, 0, len(keep))
	for i := range keep {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]BacklogPoint, len(idx))
	for j, i := range idx {
		out[j] = pts[i]
	}
	return out
}

// BacklogSlope is the least-squares slope of the waiting count over time
// (namespaces per second) in the window [fromNS, toNS): the fit of a line
// to the series as the step function it is (each count holds until the
// next point), and how many points fell in the window.
func BacklogSlope(pts []BacklogPoint, fromNS, toNS int64) (float64, int) {
	t0, t1 := float64(fromNS)/1e9, float64(toNS)/1e9
	if t1 <= t0 {
		return 0, 0
	}
	var iy, ity float64 // the integrals of y and t*y over the window
	n := 0
	for i, p := range pts {
		a := float64(p.AtNS) / 1e9
		b := t1
		if i+1 < len(pts) {
			b = min(b, float64(pts[i+1].AtNS)/1e9)
		}
		a = max(a, t0)
		if b <= a {
			continue
		}
		n++
		y := float64(p.Waiting)
		iy += y * (b - a)
		ity += y * (b*b - a*a) / 2
	}
	w := t1 - t0
	it, itt := (t1*t1-t0*t0)/2, (t1*t1*t1-t0*t0*t0)/3
	d := w*itt - it*it
	if n == 0 || d <= 0 {
		return 0, n
	}
	return (w*ity - it*iy) / d, n
}
