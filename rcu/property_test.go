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
		cfg := drawConfig(rt, cpus, preempt)
		e, err := sim.New(sim.Config{HZ: rapid.SampledFrom([]int{100, 250, 1000}).Draw(rt, "hz"),
			CPUs: cpus, Preempt: preempt, Seed: rapid.Uint64().Draw(rt, "seed"), Jitter: 0.2,
			Timers:        sim.TimerWheel(rapid.IntRange(0, 1).Draw(rt, "wheel")),
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
						if cfg.Expedited != ExpNone {
							r.SynchronizeExpedited(tk)
						}
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

// drawConfig draws the configuration of one of the kernel lines' RCU
// implementations, with random tunables.
func drawConfig(rt *rapid.T, cpus int, preempt sim.Preempt) Config {
	kinds := []string{"classic", "tree26", "tree26-preempt", "modern"}
	if cpus == 1 && preempt != sim.PreemptFull {
		kinds = append(kinds, "tiny")
	}
	cfg := Config{BatchLimit: rapid.IntRange(1, 10).Draw(rt, "blimit")}
	switch rapid.SampledFrom(kinds).Draw(rt, "impl") {
	case "classic":
		cfg.Flavor, cfg.SyncUPShortcut, cfg.Expedited = Classic, true, ExpNone
	case "tree26":
		cfg.SyncUPShortcut, cfg.Expedited = true, ExpMigration
	case "tree26-preempt":
		cfg.Preemptible, cfg.Expedited = true, ExpNormal
	case "modern":
		cfg.GPKthread, cfg.Expedited, cfg.Barrier = true, ExpIPI, BarrierEntrain
		cfg.Preemptible = preempt == sim.PreemptFull || rapid.Bool().Draw(rt, "preemptible")
		cfg.PreemptCount = rapid.Bool().Draw(rt, "preemptcount")
		cfg.CondReschedQS = rapid.Bool().Draw(rt, "condresched")
		cfg.FQSFirst = rapid.IntRange(1, 3).Draw(rt, "fqsfirst")
		cfg.FQSNext = rapid.IntRange(1, 3).Draw(rt, "fqsnext")
		cfg.Divisor, cfg.ReschedTime, cfg.BatchOnlyIfBusy = 7, 3*sim.Millisecond, true
	case "tiny":
		cfg = Config{Flavor: Tiny, Expedited: ExpCondResched, TinyTickResched: rapid.Bool().Draw(rt, "tinyresched")}
	}
	return cfg
}

// TestBarrierGuarantee: rcu_barrier never returns before every callback
// queued before it was called (by any task, on any CPU) has run.
func TestBarrierGuarantee(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cpus := rapid.IntRange(1, 4).Draw(rt, "cpus")
		preempt := sim.Preempt(rapid.IntRange(0, 2).Draw(rt, "preempt"))
		cfg := drawConfig(rt, cpus, preempt)
		e, err := sim.New(sim.Config{HZ: rapid.SampledFrom([]int{100, 250, 1000}).Draw(rt, "hz"),
			CPUs: cpus, Preempt: preempt, Seed: rapid.Uint64().Draw(rt, "seed"), Jitter: 0.2,
			Timers:        sim.TimerWheel(rapid.IntRange(0, 1).Draw(rt, "wheel")),
			ContextSwitch: 2 * sim.Microsecond, TickCost: sim.Microsecond})
		if err != nil {
			rt.Fatal(err)
		}
		r, err := New(e, cfg)
		if err != nil {
			rt.Fatal(err)
		}
		var queued []bool // queued[i]: callback i has run
		nTasks := rapid.IntRange(1, 2*cpus).Draw(rt, "tasks")
		for i := range nTasks {
			ops := rapid.SliceOfN(rapid.IntRange(0, 3), 1, 40).Draw(rt, fmt.Sprintf("ops%d", i))
			e.Go(fmt.Sprintf("t%d", i), i%cpus, false, func(tk *sim.Task) {
				for k, op := range ops {
					switch op {
					case 0, 1:
						id := len(queued)
						queued = append(queued, false)
						r.CallRCU(tk, func() { queued[id] = true })
					case 2:
						before := len(queued)
						r.Barrier(tk)
						for id := range before {
							if !queued[id] {
								rt.Fatalf("rcu_barrier returned before callback %d (queued before it) ran", id)
							}
						}
					case 3:
						tk.Charge(sim.Time(30+k*17) * sim.Microsecond)
						tk.ScheduleTimeout(int64(k % 2))
					}
				}
			})
		}
		if err := e.Run(); err != nil {
			rt.Fatalf("Run() = %v", err)
		}
	})
}

// TestSynchronizeGuarantee: synchronize_rcu and synchronize_rcu_expedited
// never return while a reader that was in progress when they were called is
// still in its section.
func TestSynchronizeGuarantee(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cpus := rapid.IntRange(1, 4).Draw(rt, "cpus")
		preempt := sim.Preempt(rapid.IntRange(0, 2).Draw(rt, "preempt"))
		cfg := drawConfig(rt, cpus, preempt)
		e, err := sim.New(sim.Config{HZ: rapid.SampledFrom([]int{100, 250, 1000}).Draw(rt, "hz"),
			CPUs: cpus, Preempt: preempt, Seed: rapid.Uint64().Draw(rt, "seed"), Jitter: 0.2,
			Timers:        sim.TimerWheel(rapid.IntRange(0, 1).Draw(rt, "wheel")),
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
		openNow := func() []*section {
			var l []*section
			for _, s := range sections {
				if s.open {
					l = append(l, s)
				}
			}
			return l
		}
		nTasks := rapid.IntRange(2, 2*cpus+1).Draw(rt, "tasks")
		for i := range nTasks {
			ops := rapid.SliceOfN(rapid.IntRange(0, 3), 1, 30).Draw(rt, fmt.Sprintf("ops%d", i))
			e.Go(fmt.Sprintf("t%d", i), i%cpus, false, func(tk *sim.Task) {
				for k, op := range ops {
					switch op {
					case 0:
						s := &section{open: true}
						sections = append(sections, s)
						r.ReadLock(tk)
						tk.Charge(sim.Time(200+k*41) * sim.Microsecond)
						s.open = false
						r.ReadUnlock(tk)
					case 1, 2:
						active := openNow()
						what := "synchronize_rcu"
						if op == 2 && cfg.Expedited != ExpNone {
							what = "synchronize_rcu_expedited"
							r.SynchronizeExpedited(tk)
						} else {
							r.Synchronize(tk)
						}
						for _, s := range active {
							if s.open {
								rt.Fatalf("%s returned while a reader that predates it is open", what)
							}
						}
					case 3:
						tk.ScheduleTimeout(int64(1 + k%2))
					}
				}
			})
		}
		if err := e.Run(); err != nil {
			rt.Fatalf("Run() = %v", err)
		}
	})
}
