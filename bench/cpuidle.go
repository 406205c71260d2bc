package bench

import (
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/safefile"
)

// cpuTimes is the all-CPU line of /proc/stat: the time spent idle (idle and
// iowait) and in all, in clock ticks since boot.
type cpuTimes struct{ idle, total uint64 }

// readCPUTimes reads /proc/stat; ok false where there is none (not Linux).
func readCPUTimes() (cpuTimes, bool) {
	b, err := safefile.ReadKernelFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		if i == 7 { // steal, then guest and guest_nice (counted in user already)
			t.total += v
			break
		}
		t.total += v
		if i == 3 || i == 4 { // idle, iowait
			t.idle += v
		}
	}
	return t, true
}

// idleShare is the share of all CPUs' time that was idle between a and b
// (-1 when unknown).
func idleShare(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return -1
	}
	return float64(b.idle-a.idle) / float64(b.total-a.total)
}
