// Package membarrier measures the host's grace-period latency from user
// space: membarrier(MEMBARRIER_CMD_GLOBAL) returns after one
// synchronize_rcu() on a kernel with more than one online CPU, so its
// duration is the time one normal grace period takes right now.
//
// Invariants: a measurement is a bounded number of calls, each bounded by
// the kernel's own grace period; on a system without the command (not Linux,
// nohz_full CPUs, one CPU) it is an error saying so, never a made-up figure.
package membarrier

import (
	"context"
	"slices"
	"time"
)

// Latency is a measurement of n grace periods.
type Latency struct {
	Samples []time.Duration // in the order measured
}

// Median is the median sample.
func (l Latency) Median() time.Duration { return l.quantile(0.5) }

// Max is the longest sample.
func (l Latency) Max() time.Duration { return l.quantile(1) }

func (l Latency) quantile(q float64) time.Duration {
	if len(l.Samples) == 0 {
		return 0
	}
	s := slices.Clone(l.Samples)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// Measure times n membarrier(MEMBARRIER_CMD_GLOBAL) calls, one after the
// other (Probe).
func Measure(n int) (Latency, error) {
	starts, ends, err := Probe(context.Background(), n, nil)
	l := Latency{Samples: make([]time.Duration, len(starts))}
	for i := range starts {
		l.Samples[i] = time.Duration(ends[i] - starts[i])
	}
	return l, err
}
