package emu

import (
	"context"
	"errors"

	"github.com/ndst-project/ndst/sim"
)

// Membarrier times n membarrier(MEMBARRIER_CMD_GLOBAL) calls on the
// emulated kernel as ndst calibrate times them on the real one (calibrate
// measureGP): each a synchronize_rcu() (6.18 kernel/sched/membarrier.c
// l.651-657, with more than one CPU online), from a task that pauses a
// seeded random time of up to two ticks in user mode before each, so that
// the calls start at every phase of the tick. It returns each call's
// latency in ns; the machine keeps nothing of the run.
func (b *Backend) Membarrier(ctx context.Context, n int) ([]int64, error) {
	if n < 1 || n > 10000 {
		return nil, errors.New("membarrier: want 1 to 10000 calls")
	}
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	lats := make([]int64, 0, n)
	_, err = k.run(ctx, func(t *sim.Task, _ sim.Time) {
		two := int64(2 * k.e.Period())
		for range n {
			t.SetMode(sim.ModeUser)
			t.Nanosleep(sim.Time(k.e.Rand().Int64N(two)))
			t.SetMode(sim.ModeKernel)
			t0 := t.Now()
			k.rcu.Synchronize(t)
			lats = append(lats, int64(t.Now()-t0))
		}
	})
	return lats, err
}
