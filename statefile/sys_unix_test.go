//go:build unix

package statefile

import (
	"syscall"
	"time"
)

// usage returns this process's user+system CPU time and minor page faults
// so far. The benchmarks report both per operation beside the wall time:
// on a shared 2-core machine the wall time also counts time spent waiting
// for a CPU, and on a virtual machine first touches of fresh memory (page
// faults) can cost more than the decoding itself.
func usage() (time.Duration, int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}

// setUmask sets the umask and returns a function that restores it.
func setUmask(m int) func() {
	old := syscall.Umask(m)
	return func() { syscall.Umask(old) }
}
