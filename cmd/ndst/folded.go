package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/safefile"
)

// writeFolded writes a result's stacks as folded stacks (one "frame;frame;...
// WEIGHT" line each, the weight in microseconds), the input of flame graph
// tools (flamegraph.pl, inferno-flamegraph, speedscope). The real kernel's
// are the sampled kernel stacks of the working thread (--attribute); the
// emulated kernel's are its phases, split into CPU and waiting time, so
// that the two open side by side. Every line starts with the command
// ("ndst del"). The file is written with safefile.WriteOutput (never
// through a link, never onto a pseudo file system, by a rename).
func writeFolded(path, root string, r *ndst.Result) error {
	stacks := r.Stacks
	if r.Backend == "sim" || len(stacks) == 0 && len(r.Phases) > 0 {
		stacks = map[string]int64{}
		for _, p := range r.Phases {
			if p.CPUNS > 0 {
				stacks[p.Name+";[cpu]"] += p.CPUNS
			}
			if p.WaitNS > 0 {
				stacks[p.Name+";[waiting]"] += p.WaitNS
			}
		}
	}
	if len(stacks) == 0 {
		return fmt.Errorf("no stacks to write to %s (the real kernel's need --attribute, and root)", path)
	}
	keys := make([]string, 0, len(stacks))
	for k := range stacks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return safefile.WriteOutput(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for _, k := range keys {
			us := (stacks[k] + 500) / 1000
			if us == 0 {
				continue
			}
			fmt.Fprintf(bw, "%s;%s %d\n", root, strings.ReplaceAll(k, " ", "_"), us)
		}
		return bw.Flush()
	}, nil)
}
