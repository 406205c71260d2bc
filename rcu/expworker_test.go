package rcu

import (
	"testing"

	"github.com/ndst-project/ndst/sim"
)

// On two CPUs with the other idle, the 6.12+ expedited GP's worker runs on
// the other CPU: the caller wakes it there and it wakes the caller back, two
// remote wake-ups of an idle CPU, each Config.WakeLatency late. 6.1's worker
// of the caller's own CPU is a local round trip that pays none.
func TestExpeditedWorkerHop(t *testing.T) {
	const lat = 300 * sim.Microsecond
	wait := func(cfg Config, wl sim.Time) (sim.Time, int) {
		m := newMachine(t, sim.Config{HZ: 250, CPUs: 2, WakeLatency: wl}, cfg)
		var took sim.Time
		m.e.Go("ndst", 0, false, func(tk *sim.Task) {
			tk.Charge(100 * sim.Microsecond)
			start := m.e.Now()
			m.r.SynchronizeExpedited(tk)
			took = m.e.Now() - start
		})
		if err := m.e.Run(); err != nil {
			t.Fatal(err)
		}
		cpu := -1
		if w := m.r.expWorker.task; w != nil {
			cpu = w.CPU().ID
		}
		return took, cpu
	}
	worker := modern
	worker.ExpKthreadWorker = true
	base, cpu := wait(worker, 0)
	if cpu != 1 {
		t.Fatalf("the worker ran on CPU %d, want the idle CPU 1", cpu)
	}
	hop, _ := wait(worker, lat)
	if d := hop - base; d != 2*lat {
		t.Errorf("with a wake-up latency of %v the expedited GP took %v more, want two latencies (%v)", lat, d, 2*lat)
	}
	local0, _ := wait(modern, 0)
	local, cpu := wait(modern, lat)
	if cpu != -1 {
		t.Errorf("6.1's expedited GP made a worker task (on CPU %d)", cpu)
	}
	if local != local0 {
		t.Errorf("6.1's local round trip took %v with a wake-up latency, %v without: want the same", local, local0)
	}
}
