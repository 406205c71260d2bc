package ndst

import (
	"reflect"
	"testing"
)

func TestSummarize(t *testing.T) {
	if got := Summarize(nil); got != nil {
		t.Errorf("Summarize(nil) = %+v, want nil", got)
	}
	got := Summarize([]int64{5, 1, 3})
	want := &Latency{MinNS: 1, MedianNS: 3, P99NS: 5, MaxNS: 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Summarize([5 1 3]) = %+v, want %+v", got, want)
	}
	var many []int64
	for i := 1000; i >= 1; i-- {
		many = append(many, int64(i))
	}
	if got := Summarize(many); got.MinNS != 1 || got.MedianNS != 500 || got.P99NS != 990 || got.MaxNS != 1000 {
		t.Errorf("Summarize(1000..1) = %+v, want nearest-rank min 1, median 500, p99 990, max 1000", got)
	}
	if many[0] != 1000 {
		t.Errorf("Summarize sorted its argument in place")
	}
}
