package ndst

import "slices"

// Summarize returns the latency distribution of samples (nanoseconds), or nil
// when there are none. Percentiles use the nearest-rank method.
func Summarize(samples []int64) *Latency {
	if len(samples) == 0 {
		return nil
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := func(p float64) int64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return &Latency{MinNS: s[0], MedianNS: rank(0.5), P99NS: rank(0.99), MaxNS: s[len(s)-1]}
}
