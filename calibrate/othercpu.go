package calibrate

import (
	"fmt"
	"time"
)

// The machine's other work during a calibration, from CPU accounting:
// the CPU time every CPU spent busy (or taken by the hypervisor, steal)
// less this process's own and its waited-for children's, over the CPU
// time there was. The one-minute load average cannot say it: the
// calibration's own threads (the stall probe's spinning, the creates and
// deletes) raise it to 1.2-1.5 on this project's idle 2-CPU host, which
// the load average then showed as a busy machine. Kernel work that
// ndst's requests start in kernel threads (the namespaces' cleanup_net,
// RCU callbacks) counts as other work here: about 1% on that host, where
// most of the rest is time the hypervisor took (steal, 7% in one
// calibration), which the report names apart.

// cpuSample is the machine's busy CPU time and this process's own, read
// at one moment.
type cpuSample struct {
	at        time.Time
	busy, own time.Duration
	steal     time.Duration // within busy
	cpus      int
	ok        bool
}

// busyOtherLimit is the share of the machine's CPU time other work may
// take before a calibration that does not close names it.
const busyOtherLimit = 0.25

// otherShare is the share of the CPU time between a and b that other
// work took (0..1), the hypervisor's part of it (steal), and whether both
// samples were read.
func otherShare(a, b cpuSample) (share, steal float64, ok bool) {
	if !a.ok || !b.ok || a.cpus < 1 {
		return 0, 0, false
	}
	total := float64(b.at.Sub(a.at) * time.Duration(a.cpus))
	if total <= 0 {
		return 0, 0, false
	}
	other := (b.busy - a.busy) - (b.own - a.own)
	share = min(1, max(0, float64(other)/total))
	steal = min(share, max(0, float64(b.steal-a.steal)/total))
	return share, steal, true
}

// otherNote is the report's line on it.
func (r *Report) otherNote() string {
	if r.OtherCPU == nil {
		return ""
	}
	s := fmt.Sprintf("others' CPU:     %.1f%% of the machine's CPU time during the calibration (busy and stolen time on every CPU, less ndst's own", 100**r.OtherCPU)
	if r.StolenCPU != nil {
		s += fmt.Sprintf("; the hypervisor took %.1f%%", 100**r.StolenCPU)
	}
	return s + ")\n"
}

// busy reports whether the machine had other work enough to name when a
// calibration does not close, and says how much: the CPU accounting
// where the report has it, else (a report from before it) the largest
// one-minute load average.
func (r *Report) busy() (string, bool) {
	if r.OtherCPU != nil {
		return fmt.Sprintf("other work took %.0f%% of its CPU time", 100**r.OtherCPU), *r.OtherCPU > busyOtherLimit
	}
	l := r.busiest()
	return fmt.Sprintf("load average %.2f on %d CPUs", l, r.Host.CPUs), l > 0.5*float64(max(1, r.Host.CPUs))
}
