package nlbackend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ndst-project/ndst/safefile"
)

// The memory bound of add: every link costs kernel memory that no process
// owns (the net_device and its queues, kernfs nodes, per-CPU statistics),
// so an add that does not fit would push the host into reclaim and the OOM
// killer instead of failing. The cost per link is not assumed: Add measures
// it on the running kernel, as the growth of the kernel's unreclaimable
// memory (SUnreclaim + Percpu + VmallocUsed in /proc/meminfo) over its
// first window of creates, divided by the links that window made. When the
// rest of the request would need more than is available (MemAvailable less
// a reserve for the system), Add deletes the window's links again (they are
// one interface group of their own) and refuses, saying the estimate and
// the flag that overrides it (Options.NoMemoryCheck). Requests that fit in
// one window are checked against the reserve only. After every later window
// Add stops, keeping what it made, when MemAvailable falls below the
// reserve (something else is using the memory).
//
// The measurement is of the whole machine: other processes allocating or
// freeing kernel memory during the window make it noisy (the window of 256
// links grows these counters by about 11 MB on 6.18, where a link costs
// about 43 KiB), so it is an estimate, not an accounting.

// meminfoFile is read for the figures above.
const meminfoFile = "/proc/meminfo"

// meminfo is what the memory bound reads, in bytes.
type meminfo struct {
	total, avail uint64
	// kernel is SUnreclaim + Percpu + VmallocUsed: the kernel memory that
	// creating links grows and that reclaim cannot give back.
	kernel uint64
}

// maxMeminfo bounds how much of /proc/meminfo is read.
const maxMeminfo = 64 << 10

// readMeminfo reads meminfoFile; tests replace it.
var readMeminfo = func() (meminfo, error) {
	f, err := safefile.Open(meminfoFile, safefile.FollowLinks)
	if err != nil {
		return meminfo{}, err
	}
	defer f.Close()
	return parseMeminfo(io.LimitReader(f, maxMeminfo))
}

// parseMeminfo reads lines such as "MemAvailable:   24005916 kB".
func parseMeminfo(r io.Reader) (meminfo, error) {
	var m meminfo
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(k) {
		case "MemTotal":
			dst = &m.total
		case "MemAvailable":
			dst = &m.avail
		case "SUnreclaim", "Percpu", "VmallocUsed":
			dst = &m.kernel
		default:
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return meminfo{}, fmt.Errorf("%s: bad %s value %q", meminfoFile, k, f[0])
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			n *= 1024
		}
		*dst += n
		seen++
	}
	if err := sc.Err(); err != nil {
		return meminfo{}, err
	}
	if m.total == 0 || seen < 5 {
		return meminfo{}, errors.New(meminfoFile + " lacks MemTotal, MemAvailable, SUnreclaim, Percpu or VmallocUsed")
	}
	return m, nil
}

// reserve is the memory Add leaves to the rest of the system: 5% of RAM,
// at least 128 MiB.
func (m meminfo) reserve() uint64 { return max(m.total/20, 128<<20) }

// usable is what Add may still take: MemAvailable less the reserve.
func (m meminfo) usable() uint64 {
	if m.avail <= m.reserve() {
		return 0
	}
	return m.avail - m.reserve()
}

// memEstimate is the outcome of measuring one window.
type memEstimate struct {
	perUnit float64 // bytes per unit (a link, or a veth pair); 0 if unknown
	units   int     // units the measurement covers
	need    uint64  // estimated bytes for the remaining units
	now     meminfo
}

// estimate derives the cost per unit from the kernel memory at base and
// now, after units were created, and the need of remaining more units.
func estimate(base, now meminfo, units, remaining int) memEstimate {
	e := memEstimate{units: units, now: now}
	if units > 0 && now.kernel > base.kernel {
		e.perUnit = float64(now.kernel-base.kernel) / float64(units)
		e.need = uint64(e.perUnit * float64(remaining))
	}
	return e
}

// humanBytes prints a byte count as people read it: "705.3 GiB", "43.1 KiB".
func humanBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
