package main

import (
	"context"
	"errors"

	"github.com/ndst-project/ndst/bench"
)

// predictWorkloads is predict --workloads: every workload cell on the real
// kernel and the emulated one of the host's calibration (bench.PredictWorkloads).
func (g *globalOptions) predictWorkloads(ctx context.Context, s *bench.PredictSpec, only []string, countGiven bool) error {
	ws := &bench.WorkloadSpec{Costs: s.Costs, Runs: s.Runs, SimRuns: s.SimRuns, Seed: s.Seed, Netlink: s.Netlink, Only: only}
	if countGiven {
		// --count N sizes the cells: N devices, N pods, 10 N namespaces
		// for unshare.
		n := s.Counts[0]
		ws.Devices, ws.Pods, ws.Unshare = n, n, 10*n
	}
	if err := ws.Check(); err != nil {
		return err
	}
	prog := g.startProgress("predict: the workloads")
	ws.Progress = g.progressLines(prog, "predict: ")
	p, err := bench.PredictWorkloads(ctx, ws)
	prog.stop()
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("predict interrupted; what it created and the throwaway namespace were removed")
		}
		return err
	}
	if g.json {
		return writeJSONIndent(g.stdout, p)
	}
	return p.WriteTable(g.stdout)
}
