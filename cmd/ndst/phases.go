package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// writePhases prints where a command's time went: its largest phases (at
// least 1% each, at most five), with their share and how much of each was
// CPU work and how much waiting. --json has them all.
func writePhases(b *strings.Builder, r *ndst.Result) {
	if len(r.Phases) == 0 {
		return
	}
	var total int64
	for _, p := range r.Phases {
		total += p.TotalNS()
	}
	if total <= 0 {
		return
	}
	ps := slices.Clone(r.Phases)
	slices.SortStableFunc(ps, func(a, b ndst.Phase) int { return int(b.TotalNS() - a.TotalNS()) })
	b.WriteString("time:\n")
	for i, p := range ps {
		share := float64(p.TotalNS()) / float64(total)
		if i >= 5 || share < 0.01 {
			break
		}
		kind := "waiting"
		if p.CPUNS >= p.WaitNS {
			kind = "CPU"
		}
		fmt.Fprintf(b, "  %5.1f%%  %-10s %-7s %-22s %s\n", 100*share, fmtDur(p.TotalNS()), kind, p.Name, phase.Describe(p.Name))
	}
}
