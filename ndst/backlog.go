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
// (namespaces per second) among the points at or after fromNS, and how
// many points it used.
func BacklogSlope(pts []BacklogPoint, fromNS int64) (float64, int) {
	var n, sx, sy, sxx, sxy float64
	for _, p := range pts {
		if p.AtNS < fromNS {
			continue
		}
		x, y := float64(p.AtNS)/1e9, float64(p.Waiting)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	d := n*sxx - sx*sx
	if n < 2 || d == 0 {
		return 0, int(n)
	}
	return (n*sxy - sx*sy) / d, int(n)
}
