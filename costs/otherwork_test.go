package costs

import "testing"

// TestOtherWorkRate: the rate is kept where its emulated median is nearer
// the measured one than none, and dropped where it is not (the 2-vCPU
// guest whose bound, 250 a CPU a second, emulated 13.92 ms against 14.43
// with none and 14.84 measured).
func TestOtherWorkRate(t *testing.T) {
	for _, c := range []struct {
		o        *OtherWork
		measured int64
		want     float64
	}{
		{nil, 10_000_000, 0},
		{&OtherWork{PerCPUSecond: 15.8, IdleP50NS: 6_060_000, EmulatedP50NS: 6_790_000}, 6_760_000, 15.8},
		{&OtherWork{PerCPUSecond: 250, IdleP50NS: 14_432_606, EmulatedP50NS: 13_921_874}, 14_844_820, 0},
		{&OtherWork{PerCPUSecond: 250, IdleP50NS: 10_000_000, EmulatedP50NS: 12_000_000}, 20_000_000, 250}, // the bound, nearer
		{&OtherWork{PerCPUSecond: 250, IdleP50NS: 10_000_000, EmulatedP50NS: 12_000_000}, 0, 250},          // no measurement: as recorded
	} {
		if got := c.o.Rate(c.measured); got != c.want {
			t.Errorf("%+v.Rate(%d) = %v, want %v", c.o, c.measured, got, c.want)
		}
	}
}
