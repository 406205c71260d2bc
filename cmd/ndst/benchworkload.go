package main

import (
	"slices"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// bench's workload cells (bench/workloadcells.go): --workload NAME with
// its parameters; --count gives the sizes and --batch the delete modes.

func addBenchWorkloadFlags(cmd *cobra.Command, o *benchOptions) {
	f := cmd.Flags()
	f.StringVar(&o.workload.Workload, "workload", "", "cells of a workload instead of plain devices: addrs (--addr4, --addr6, --ipv6-forwarding; --batch batched, one-by-one), children (--child vlan|macvlan; --batch batched, one-by-one, stream, parent), unshare (--parallel; --batch -), churn (--rate, --for; --batch -: the sustained rate); --count gives the sizes")
	f.IntVar(&o.addrs.V4, "addr4", 0, "--workload addrs: IPv4 addresses a device")
	f.IntVar(&o.addrs.V6, "addr6", 0, "--workload addrs: IPv6 addresses a device")
	f.BoolVar(&o.addrs.Forwarding6, "ipv6-forwarding", false, "--workload addrs: IPv6 forwarding on every device")
	f.StringVar(&o.workload.Child, "child", ndst.KindMacvlan, "--workload children: vlan or macvlan")
	f.IntVar(&o.workload.Parallel, "parallel", 8, "--workload unshare: workers")
	f.Float64Var(&o.workload.Rate, "rate", 50, "--workload churn: pods a second")
	f.DurationVar(&o.forDur, "for", 0, "--workload churn: how long (default 20s)")
}

// workloadSpec puts the workload flags into s: the cells' template, and
// the delete modes each workload takes when --batch was left alone.
func (o *benchOptions) workloadSpec(s *bench.Spec, g *globalOptions) error {
	if o.workload.Workload == "" {
		return nil
	}
	w := o.workload
	if g.kindExplicit {
		switch g.kind {
		case "ifb":
			w.Kind = "ifb"
		case "dummy":
		default:
			return ndst.Usagef("--kind %s: a workload's devices are dummy or ifb", g.kind)
		}
	}
	w.Addr4, w.Addr6, w.Fwd6 = o.addrs.V4, o.addrs.V6, o.addrs.Forwarding6
	w.ForNS = int64(o.forDur)
	if w.ForNS == 0 {
		w.ForNS = 20e9
	}
	modes, ok := bench.WorkloadBatches[w.Workload]
	if !ok {
		return ndst.Usagef("--workload %q: want addrs, children, unshare or churn", w.Workload)
	}
	if slices.Equal(s.Batches, []string{"batched"}) && !slices.Contains(modes, "batched") {
		s.Batches = modes
	}
	s.Workload = &w
	return nil
}
