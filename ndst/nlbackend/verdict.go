package nlbackend

import (
	"fmt"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// LeakRatio is how many of the host's grace periods a teardown must have
// waited before ndst calls it a leak: the wait loop checks the references
// after an rcu_barrier() and a sleep of at most 250 ms each pass, so a
// reference that RCU still owes is dropped within a few grace periods and
// sleeps; one that outlasts a hundred is held by someone.
const LeakRatio = 100

// evidence is what judge decides from.
type evidence struct {
	waited time.Duration
	// gp is the host's grace-period latency measured when giving up (0:
	// not measured, gpErr says why), from gpSamples membarrier calls, or on
	// one CPU (gpSamples 0) the jiffy within which a grace period ends.
	gp        time.Duration
	gpSamples int
	gpErr     string
	// state is where the waiting thread was in the kernel ("" when its
	// stack could not be read).
	state string
	// waiting counts the kernel's "waiting for X to become free" lines.
	waiting int
}

// judge gives the verdict on a teardown that did not finish (see
// LeakRatio). Where the waiting thread's stack was read, it must be in the
// wait loop (or the kernel must have said it waits) for a leak: a thread
// still in rcu_barrier(), synchronize_net(), RTNL or its own CPU work is
// slow, however long it took.
func judge(e evidence) *ndst.Verdict {
	v := &ndst.Verdict{Kind: ndst.VerdictSlow, WaitedNS: int64(e.waited), LeakRatio: LeakRatio, KernelState: e.state, Waiting: e.waiting}
	gpText := "a grace period could not be timed here (" + e.gpErr + ")"
	if e.gp > 0 {
		ns := int64(e.gp)
		v.GracePeriodNS, v.GracePeriodSamples = &ns, e.gpSamples
		v.Ratio = float64(e.waited) / float64(e.gp)
		how := fmt.Sprintf("membarrier, median of %d", e.gpSamples)
		if e.gpSamples == 0 {
			how = "one CPU: a grace period ends at its next context switch or tick, within a jiffy"
		}
		gpText = fmt.Sprintf("%.0f times the %s a grace period takes here now (%s)", v.Ratio, dur(e.gp), how)
	}
	// The wait loop runs rcu_barrier() between its sleeps: a thread caught
	// there after the kernel said it waits is in the loop too. Where the
	// stack could not be read, the times alone decide.
	waitLoop := e.state == phase.WaitLoop || e.state == "" || (e.waiting > 0 && e.state == phase.Barrier)
	where := ""
	switch {
	case e.state == phase.WaitLoop:
		where = "in netdev_wait_allrefs, polling the device's reference count"
	case e.state == "":
		where = "where in the kernel could not be read"
	default:
		where = "in " + e.state + " (" + phase.Describe(e.state) + ")"
	}
	said := ""
	if e.waiting > 0 {
		said = fmt.Sprintf("; the kernel said %s", plural(e.waiting, "time")+" it was waiting for the device to become free")
	}
	long := e.gp > 0 && v.Ratio >= LeakRatio
	threshold := fmt.Sprintf("%d times is a leak", LeakRatio)
	switch {
	case waitLoop && long, e.gp == 0 && e.waiting > 0:
		v.Kind = ndst.VerdictLeak
		v.Why = fmt.Sprintf("leak: the delete waited %s %s%s; that is %s (%s): a reference is held, RCU owes nothing",
			dur(e.waited), where, said, gpText, threshold)
	case e.state != "" && !waitLoop:
		v.Why = fmt.Sprintf("slow: after %s the kernel was still %s, not waiting for a reference (%s)%s", dur(e.waited), where, gpText, said)
	default:
		v.Why = fmt.Sprintf("slow: the delete waited %s %s%s; that is only %s (%s), so a longer --give-up is needed to tell a leak from slow RCU",
			dur(e.waited), where, said, gpText, threshold)
	}
	return v
}

// dur writes a duration as the explanations do: "16.00 ms", "5.000 s".
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}

// state is where a thread read several times waits: the wait loop when any
// reading shows it (it runs rcu_barrier() between its sleeps), else the
// most frequent phase.
func state(phases []string) string {
	count := map[string]int{}
	for _, p := range phases {
		if p == phase.WaitLoop {
			return p
		}
		if p != "" {
			count[p]++
		}
	}
	best := ""
	for p, n := range count {
		if n > count[best] || (n == count[best] && p < best) {
			best = p
		}
	}
	return best
}
