package emu

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/safefile"
)

// bytesPerDevice is a conservative estimate of the peak memory one device
// costs during a command: the emulated kernel retains about 165 bytes per
// device (BenchmarkRetainedPerDevice), the persisted state about 40, and a
// command holds a second copy of the state, per-device latencies and its
// working lists while it runs.
const bytesPerDevice = 512

// memAvailable reports the memory the kernel says is available
// (MemAvailable in /proc/meminfo); ok is false when it cannot be read.
var memAvailable = func() (uint64, bool) {
	f, err := safefile.Open("/proc/meminfo", safefile.FollowLinks)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, safefile.MaxKernelFile))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// MemoryEstimate returns the peak memory that emulated kernels holding
// devices devices in all need (for several kernels at once, devices is their
// sum), and the memory available; ok is false when that is unknown.
func MemoryEstimate(devices int) (need, avail uint64, ok bool) {
	avail, ok = memAvailable()
	return uint64(devices) * bytesPerDevice, avail, ok
}

// HumanBytes prints a memory size in GiB, MiB or KiB.
func HumanBytes(b uint64) string { return human(b) }

// checkMemory refuses a command whose devices cannot fit in memory.
func checkMemory(devices int) error {
	need := uint64(devices) * bytesPerDevice
	avail, ok := memAvailable()
	if !ok || need < avail*8/10 {
		return nil
	}
	return fmt.Errorf("%d devices need about %s of memory, but only %s is available; use a smaller count",
		devices, human(need), human(avail))
}

func human(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b/1024)
}
