package rcu

import (
	"fmt"
	"testing"

	"github.com/ndst-project/ndst/sim"
	"pgregory.net/rapid"
)

// TestGracePeriodGuarantee checks RCU's defining property on random machines
// and workloads: a callback never runs while a reader that was already inside
// its critical section when the callback was queued is still inside it.
// It also checks that every callback runs exactly once, in queue order per
// CPU, and that the run ends (barriers complete).
func TestGracePeriodGuarantee(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cpus := rapid.IntRange(1, 4).Draw(rt, "cpus")
		preempt := sim.Preempt(rapid.IntRange(0, 2).Draw(rt, "preempt"))
		cfg := Config{
			Preemptible:      preempt == sim.PreemptFull || rapid.Bool().Draw(rt, "preemptible"),
			GPKthread:        rapid.Bool().Draw(rt, "kthread"),
			BarrierSkipsIdle: rapid.Bool().Draw(rt, "skipidle"),
			BarrierEntrains:  rapid.Bool().Draw(rt, "entrain"),
			ExpeditedSleeps:  rapid.Bool().Draw(rt, "expsleeps"),
			CondReschedQS:    rapid.Bool().Draw(rt, "condresched"),
			FQSJiffies:       rapid.IntRange(1, 3).Draw(rt, "fqs"),
			BatchLimit:       rapid.IntRange(1, 10).Draw(rt, "blimit"),
		}
		if cpus == 1 && !cfg.Preemptible && rapid.Bool().Draw(rt, "tiny") {
			cfg = Config{Flavor: Tiny}
		}
		e, err := sim.New(sim.Config{HZ: rapid.SampledFrom([]int{100, 250, 1000}).Draw(rt, "hz"),
			CPUs: cpus, Preempt: preempt, Seed: rapid.Uint64().Draw(rt, "seed"), Jitter: 0.2,
			ContextSwitch: 2 * sim.Microsecond, TickCost: sim.Microsecond})
		if err != nil {
			rt.Fatal(err)
		}
		r, err := New(e, cfg)
		if err != nil {
			rt.Fatal(err)
		}

		type section struct{ open bool }
		var sections []*section
		queued, invoked := 0, 0
		lastSeq := map[int]int{}

		nTasks := rapid.IntRange(1, 2*cpus).Draw(rt, "tasks")
		for i := range nTasks {
			ops := rapid.SliceOfN(rapid.IntRange(0, 5), 1, 30).Draw(rt, fmt.Sprintf("ops%d", i))
			cpu := i % cpus
			e.Go(fmt.Sprintf("t%d", i), cpu, false, func(tk *sim.Task) {
				for k, op := range ops {
					switch op {
					case 0: // a reader that may span ticks
						s := &section{open: true}
						sections = append(sections, s)
						r.ReadLock(tk)
						tk.Charge(sim.Time(100+k*37) * sim.Microsecond)
						s.open = false
						r.ReadUnlock(tk)
					case 1: // call_rcu, remembering the readers in progress
						var active []*section
						for _, s := range sections {
							if s.open {
								active = append(active, s)
							}
						}
						queued++
						seq := queued
						r.CallRCU(tk, func() {
							invoked++
							for _, s := range active {
								if s.open {
									rt.Fatalf("callback %d ran inside a reader that predates it", seq)
								}
							}
							if seq <= lastSeq[tk.CPU().ID] {
								rt.Fatalf("callback %d ran after %d on CPU %d", seq, lastSeq[tk.CPU().ID], tk.CPU().ID)
							}
							lastSeq[tk.CPU().ID] = seq
						})
					case 2:
						tk.ScheduleTimeout(int64(1 + k%3))
					case 3:
						r.Synchronize(tk)
					case 4:
						r.SynchronizeExpedited(tk)
					case 5:
						tk.Charge(sim.Time(50+k*13) * sim.Microsecond)
						tk.CondResched()
					}
				}
				r.Barrier(tk)
			})
		}
		if err := e.Run(); err != nil {
			rt.Fatalf("Run() = %v", err)
		}
		if invoked != queued {
			rt.Fatalf("invoked %d callbacks, queued %d (after every task's rcu_barrier)", invoked, queued)
		}
	})
}
