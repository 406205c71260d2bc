package membarrier

import (
	"testing"
	"time"
)

func TestQuantiles(t *testing.T) {
	l := Latency{Samples: []time.Duration{9, 1, 5, 7, 3}}
	if l.Median() != 5 || l.Max() != 9 {
		t.Errorf("Median, Max of %v = %v, %v; want 5, 9", l.Samples, l.Median(), l.Max())
	}
	if (Latency{}).Median() != 0 {
		t.Errorf("Median of no samples = %v, want 0", (Latency{}).Median())
	}
}

func TestMeasure(t *testing.T) {
	if _, err := Global(); err != nil {
		t.Skipf("membarrier(GLOBAL) is not usable here: %v", err)
	}
	l, err := Measure(3)
	if err != nil || len(l.Samples) != 3 || l.Median() <= 0 {
		t.Fatalf("Measure(3) = %v, %v; want 3 positive samples", l.Samples, err)
	}
}
