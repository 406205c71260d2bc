package calibrate

import (
	"context"
	"fmt"
	"math"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst/emu"
)

// The machine's other work queues RCU callbacks (rcu/otherwork.go): with
// them a grace period is in progress more of the time, and a
// synchronize_rcu() that arrives during one waits for its end and the
// next (rcu_seq_snap), so the membarrier(GLOBAL) latencies measureGP
// timed grow with them. solveOtherWork finds the rate at which the
// emulated machine of the table's host (its stalls and wake-up latency
// included), timing as many calls the same way (emu.Backend.Membarrier),
// has the measured median: none when the emulated median without any
// already reaches it, at most one a tick on every CPU (HZ a CPU a second:
// every tick's rcu_core then finds one, a grace period is always in
// progress, and more cannot lengthen the emulated calls; what the measured
// median has beyond that is not callbacks but slower grace periods, a
// busier machine's). The emulated median is not monotonic in the rate
// (why it can fall has not been traced): where even the bound comes no
// nearer the measured median than none, none are modelled (a 2-vCPU TCG
// guest measured 14.84 ms, emulated 14.43 ms with none and 13.92 ms at the
// bound, whose 250 callbacks a CPU a second then made its rcu_nocbs=all
// one-by-one deletes 68% slower in the model, where they were 11% faster
// in the guest). The median, not the mean or the tail, so that a few
// calls stretched by the host's own stalls do not count as callbacks.

// otherWorkCalls is how many calls each emulated timing makes, and
// otherWorkSteps the bisection's steps between 0 and the bound.
const (
	otherWorkCalls = 200
	otherWorkSteps = 12
)

// solveOtherWork sets the table's and the report's rate of the other
// work's RCU callbacks from the report's membarrier figures; it leaves
// both unset when there are none (one CPU, no membarrier).
func (r *Report) solveOtherWork(ctx context.Context) error {
	t := r.Table
	if r.GP == nil || r.GP.N == 0 || t == nil || t.Host == nil || t.Host.CPUs < 2 {
		return nil
	}
	h := *t.Host
	h.OtherWork = nil
	base, err := hostModel(&h)
	if err != nil {
		return err
	}
	base.Costs, base.Seed, base.Ephemeral = t, 1, true
	p50 := func(rate float64) (int64, error) {
		c := base
		c.RCUOtherWork = rate
		b, err := emu.Open(ctx, c)
		if err != nil {
			return 0, err
		}
		defer b.Close()
		lats, err := b.Membarrier(ctx, otherWorkCalls)
		if err != nil {
			return 0, fmt.Errorf("calibrate: emulated membarrier: %w", err)
		}
		return median(lats), nil
	}
	idle, err := p50(0)
	if err != nil {
		return err
	}
	o := &costs.OtherWork{IdleP50NS: idle, EmulatedP50NS: idle}
	if idle < r.GP.P50NS {
		lo, hi := 0.0, float64(max(t.Host.HZ, 100))
		top, err := p50(hi)
		if err != nil {
			return err
		}
		at := top
		bound := costs.OtherWork{PerCPUSecond: hi, IdleP50NS: idle, EmulatedP50NS: top}
		if top < r.GP.P50NS && bound.Rate(r.GP.P50NS) == 0 {
			// The bound does not bring the emulated median nearer the
			// measured one than none does: what the measured median has
			// beyond the model's is slower grace periods, not callbacks,
			// and none are modelled (costs.OtherWork.Rate).
			o.BoundP50NS = top
			r.OtherWork = o
			t.Host.OtherWork = o
			return nil
		}
		for range otherWorkSteps {
			if top < r.GP.P50NS {
				break // even this rate does not reach it, but comes nearer: keep the bound
			}
			mid := (lo + hi) / 2
			m, err := p50(mid)
			if err != nil {
				return err
			}
			if m < r.GP.P50NS {
				lo = mid
			} else {
				hi, at = mid, m
			}
		}
		o.PerCPUSecond, o.EmulatedP50NS = math.Round(hi*10)/10, at
	}
	r.OtherWork = o
	t.Host.OtherWork = o
	return nil
}

// HostOtherWork is the rate of the other work's RCU callbacks that the
// emulated machine of a calibrated table's host runs with (HostModel, and
// --machine host with a --costs table): costs.OtherWork.Rate against the
// table's measured membarrier median; 0 without either.
func HostOtherWork(h *costs.Host) float64 {
	if h == nil || h.OtherWork == nil {
		return 0
	}
	var p50 int64
	if h.GPLatency != nil {
		p50 = h.GPLatency.P50NS
	}
	return h.OtherWork.Rate(p50)
}

// otherWorkSummary is the report's line for the solved rate.
func (r *Report) otherWorkSummary() string {
	o := r.OtherWork
	if o == nil {
		return ""
	}
	if o.PerCPUSecond == 0 && o.BoundP50NS > 0 {
		return fmt.Sprintf("other work:      no RCU callbacks of the machine's other work modelled: the emulated membarrier median without any, %s, is nearer the measured %s than with one a tick on every CPU, %s (the bound): the rest of the measured median is slower grace periods than the model's, not callbacks\n",
			dur(o.IdleP50NS), dur(r.GP.P50NS), dur(o.BoundP50NS))
	}
	if o.PerCPUSecond == 0 {
		return fmt.Sprintf("other work:      no RCU callbacks of the machine's other work modelled: the emulated membarrier median without any, %s, already reaches the measured %s\n",
			dur(o.IdleP50NS), dur(r.GP.P50NS))
	}
	bound := ""
	if o.EmulatedP50NS < r.GP.P50NS {
		bound = " (the bound, one a tick on every CPU: the rest of the measured median is slower grace periods than the model's, not callbacks)"
	}
	return fmt.Sprintf("other work:      %.1f RCU callbacks a CPU a second from the machine's other work (rcu_other_work): the emulated membarrier median is %s with them, %s without, %s measured%s\n",
		o.PerCPUSecond, dur(o.EmulatedP50NS), dur(o.IdleP50NS), dur(r.GP.P50NS), bound)
}
