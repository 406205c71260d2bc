package sim

import (
	"math/rand/v2"

	"github.com/ndst-project/ndst/internal/ascending"
)

// Late ticks: a machine whose timer interrupts arrive after they are due.
//
// On hardware the tick's interrupt comes within microseconds of its
// deadline. A virtual CPU's does not: under qemu's TCG emulation the
// guest's timer deadline is a timer of the emulator, and the interrupt is
// raised in the virtual CPU only when the emulator's thread that serves
// that timer runs, which on a host with no core to spare is often a
// millisecond or more late, and sometimes later than the next period
// (docs/trace-guest.md: in a 1-vCPU 6.1 guest, gaps between ticks wander by
// 1 ms at the 90th percentile and one period in six passes without one).
// The stall process (stall.go) does not see this: the virtual CPU runs on
// all the while, only its interrupt is late.
//
// `ndst calibrate` measures it (stallprobe.TimerLateness: a thread on each
// idle CPU sleeps to absolute deadlines and times how late it wakes), and
// the cost table's host section keeps the lateness less the probe's own
// floor (costs.Host.TimerLateness). A machine with it draws, for every tick
// of every CPU, one of Config.TickLateness, each as likely, from the CPU's
// own source seeded from Config.Seed and its number, and the tick fires that
// much after its jiffy. A tick later than the next period is one tick: the
// kernel forwards the tick's hrtimer past the periods it missed and counts
// the jiffies they lost in one step (as for a tick a stall delays, stall.go),
// and the next one is due at the first period after it. What a late tick
// brings (the RCU core's work, the timer softirq: the FQS timer, the wheel's
// timeouts) comes that much later. A machine without it (the zero value:
// the built-in machine, or a table written before it was measured) draws
// nothing and runs exactly as before.

// MaxTickLateness bounds one draw: beyond a second the interrupt is not
// late but lost, and the soft-lockup detector would report first.
const MaxTickLateness = Second

// validateTickLateness checks Config.TickLateness.
func validateTickLateness(l []Time) error {
	return ascending.Check(l, 0, MaxTickLateness, false, "tick lateness", Time.String)
}

// tickDelay returns how late the CPU's tick due now arrives (zero on a
// machine without late ticks).
func (c *CPU) tickDelay() Time {
	l := c.e.cfg.TickLateness
	if len(l) == 0 {
		return 0
	}
	if c.lateRand == nil {
		c.lateRand = rand.New(rand.NewPCG(c.e.cfg.Seed^0x7a1e71c5, uint64(c.ID)+1))
	}
	return l[c.lateRand.IntN(len(l))]
}
