//go:build windows

package statefile

import "time"

// usage is not measured on Windows: the benchmarks report zeros.
func usage() (time.Duration, int64) { return 0, 0 }

// setUmask does nothing: Windows has no umask.
func setUmask(int) func() { return func() {} }
