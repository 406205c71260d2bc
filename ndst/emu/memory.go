package emu

import (
	"fmt"

	"github.com/ndst-project/ndst/sysmem"
)

// bytesPerDevice is a conservative estimate of the peak memory one device
// costs during a command: the emulated kernel retains about 165 bytes per
// device (BenchmarkRetainedPerDevice), the persisted state about 40, and a
// command holds a second copy of the state, per-device latencies and its
// working lists while it runs.
const bytesPerDevice = 512

// memAvailable reports the memory this process may still use: the least of
// MemAvailable, its memory cgroup's headroom and RLIMIT_AS (package
// sysmem); ok is false when none can be read.
var memAvailable = sysmem.Available

// MemoryEstimate returns the peak memory that emulated kernels holding
// devices devices in all need (for several kernels at once, devices is their
// sum), and the memory available; ok is false when that is unknown.
func MemoryEstimate(devices int) (need, avail uint64, ok bool) {
	avail, ok = memAvailable()
	return uint64(devices) * bytesPerDevice, avail, ok
}

// HumanBytes prints a memory size in GiB, MiB or KiB.
func HumanBytes(b uint64) string { return human(b) }

// checkMemory refuses a command whose kernel, units devices' worth (see
// stateUnits), cannot fit in memory.
func checkMemory(units int) error {
	need := uint64(units) * bytesPerDevice
	avail, ok := memAvailable()
	if !ok || need < avail*8/10 {
		return nil
	}
	return fmt.Errorf("the emulated kernel would hold %d devices' worth (namespaces count %d each) and need about %s of memory, but only %s is available; use a smaller count",
		units, netnsDeviceEquivalent+1, human(need), human(avail))
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
