// Package ascending checks the sorted sample lists that calibrated machine
// properties are kept as (stall lengths, tick lateness groups): every value
// within its bounds and none below the one before it. The emulated machine
// draws from such lists by index, so an unsorted or out-of-range list is a
// corrupt table, not a different machine.
package ascending

import "fmt"

// Check reports the first value of vs outside [lo, hi] (above lo only, with
// loOpen) or below the value before it. what names one value in the error
// ("stall length"), and show formats a value.
func Check[T ~int64](vs []T, lo, hi T, loOpen bool, what string, show func(T) string) error {
	for i, v := range vs {
		if v < lo || loOpen && v == lo || v > hi {
			rel := "at least"
			if loOpen {
				rel = "above"
			}
			return fmt.Errorf("%s %d is %s: want %s %s and at most %s", what, i, show(v), rel, show(lo), show(hi))
		}
		if i > 0 && v < vs[i-1] {
			return fmt.Errorf("%s %d is %s, below the one before it (%s): the list must ascend", what, i, show(v), show(vs[i-1]))
		}
	}
	return nil
}
