package bench

import (
	"context"
	"testing"

	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/waitrefs"
)

// defaultSpec is the matrix of a bare `ndst bench`: every strategy on the
// default line, N=1000, 5 runs.
func defaultSpec() *Spec {
	return &Spec{Backends: []string{"sim"}, Profiles: []string{netdev.DefaultProfile}, Strategies: waitrefs.Names,
		HZ: []int{1000}, CPUs: []int{1}, Preempts: []string{"none"}, Batches: []string{"batched"}, Counts: []int{1000},
		Runs: 5, Seed: 1}
}

// BenchmarkDefaultBench is a bare `ndst bench` (the target: under 1 s of
// wall time on this project's 2-CPU machine; scripts/speed.sh times the
// command, against another revision with -b).
func BenchmarkDefaultBench(b *testing.B) {
	for b.Loop() {
		if _, err := Run(context.Background(), defaultSpec(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpeditedCell is the default bench's expedited cell alone: on
// 2.6.32 with one CPU its loop spins for 2004 s of virtual time per run,
// about 2 million ticks, nearly all of them fast-forwarded (sim/steady.go).
func BenchmarkExpeditedCell(b *testing.B) {
	s := defaultSpec()
	s.Strategies = []string{"expedited"}
	for b.Loop() {
		if _, err := Run(context.Background(), s, nil); err != nil {
			b.Fatal(err)
		}
	}
}
