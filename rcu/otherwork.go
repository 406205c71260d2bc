package rcu

import (
	"fmt"
	"math/rand/v2"

	"github.com/ndst-project/ndst/sim"
)

// The machine's other work queues RCU callbacks too. Every process that
// frees an object readers may still see (a file, a socket, a dentry, a
// mount) calls call_rcu on the CPU it runs on, and its callbacks share
// that CPU's list with the teardown's. Two rules of 6.18 then reach the
// teardown (read in kernel/rcu/tree.c):
//   - a callback waits for the grace period after the one in progress
//     when it is first accelerated (rcu_accelerate_cbs, l.1142-1172:
//     rcu_seq_snap(&rcu_state.gp_seq), which rounds up past a running
//     one, kernel/rcu/rcu.h l.126), and rcu_gp_cleanup starts the next at
//     once when one was asked for meanwhile (l.2212-2236), so with other
//     callbacks arriving a grace period is in progress most of the time,
//     and callbacks queued a millisecond apart get different ones;
//   - rcu_barrier() entrains a callback on every CPU that has any
//     (l.3858) and waits for all of them, the other work's included.
// Config.OtherWork is their rate, a CPU a second: each CPU queues one at
// the events of a seeded Poisson process of that rate (background events:
// they keep no run going). Its CPU time is not charged here: the stall
// process (sim.Stalls) has the machine's other work's share of the CPUs.
// A calibrated host's rate is solved from its membarrier latencies
// (calibrate); zero, the default, is an otherwise idle machine.

// MaxOtherWork bounds Config.OtherWork: at HZ=1000 a grace period is
// then in progress all of the time anyway.
const MaxOtherWork = 10000

func checkOtherWork(cfg Config) error {
	if !(cfg.OtherWork >= 0 && cfg.OtherWork <= MaxOtherWork) {
		return fmt.Errorf("other work's RCU callbacks must be 0 to %d a CPU a second, got %g", MaxOtherWork, cfg.OtherWork)
	}
	return nil
}

// startOtherWork arms each CPU's first callback of the other work.
func (r *RCU) startOtherWork() {
	if r.cfg.OtherWork <= 0 {
		return
	}
	seed := r.e.Config().Seed
	for _, d := range r.cpus {
		rng := rand.New(rand.NewPCG(seed^0x07e5c0a1ba5e, uint64(d.cpu.ID)+1))
		gap := func() sim.Time { return sim.Time(rng.ExpFloat64() / r.cfg.OtherWork * float64(sim.Second)) }
		var fire func()
		fire = func() {
			r.queueFrom(d, func() {}, false)
			r.e.AfterBackground(gap(), fire)
		}
		r.e.AfterBackground(gap(), fire)
	}
}
