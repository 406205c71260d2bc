package main

import (
	"slices"
	"time"

	"github.com/ndst-project/ndst/advise"
	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// advise's workloads beyond plain devices and namespaces (bench's
// workload cells).
type adviseWorkloadFlags struct {
	addrs     ndst.Addrs
	child     string
	childDel  string
	unshare   bool
	parallel  int
	churnRate float64
	churnFor  time.Duration
	cni       bool
}

func addAdviseWorkloadFlags(cmd *cobra.Command, f *adviseWorkloadFlags) {
	fs := cmd.Flags()
	fs.IntVar(&f.addrs.V4, "addr4", 0, "device workload: each device up with K IPv4 addresses")
	fs.IntVar(&f.addrs.V6, "addr6", 0, "device workload: each device up with K IPv6 addresses")
	fs.BoolVar(&f.addrs.Forwarding6, "ipv6-forwarding", false, "device workload: IPv6 forwarding on every device")
	fs.StringVar(&f.child, "child", "", "device workload: the devices are VLANs or macvlans on one device (vlan, macvlan)")
	fs.StringVar(&f.childDel, "child-del", "one-by-one", "with --child: how they are deleted: one-by-one, batched, stream or parent (by deleting their lower device)")
	fs.BoolVar(&f.unshare, "unshare", false, "namespace workload: the namespaces are made by --parallel workers that unshare and exit")
	fs.IntVar(&f.parallel, "parallel", 8, "with --unshare: workers")
	fs.Float64Var(&f.churnRate, "churn-rate", 0, "a pod churn workload: pods made and deleted a second")
	fs.DurationVar(&f.churnFor, "churn-for", 20*time.Second, "with --churn-rate: how long")
	fs.BoolVar(&f.cni, "cni", false, "namespace workload: delete each pod as a CNI plugin's DEL does (its veth first, waited for)")
}

// otherWorkload builds the workloads of adviseWorkloadFlags; ok is false
// when none of their flags was given.
func (o *adviseOptions) otherWorkload(cmd *cobra.Command) (advise.Workload, bool, error) {
	changed := func(n string) bool { return cmd.Flags().Changed(n) }
	f := o.wl
	if err := f.addrs.Normalize(); err != nil {
		return advise.Workload{}, true, err
	}
	mine := []string{"addr4", "addr6", "ipv6-forwarding", "child", "child-del", "unshare", "parallel", "churn-rate", "churn-for", "cni"}
	if !slices.ContainsFunc(mine, changed) {
		return advise.Workload{}, false, nil
	}
	switch {
	case changed("churn-rate") || changed("churn-for"):
		if changed("count") || changed("netns-count") {
			return advise.Workload{}, true, ndst.Usagef("--churn-rate describes a pod churn; it takes no --count or --netns-count")
		}
		w := advise.Workload{Rate: f.churnRate, ForNS: int64(f.churnFor)}
		return w, true, nil
	case f.unshare || changed("parallel"):
		if !changed("netns-count") {
			return advise.Workload{}, true, ndst.Usagef("--unshare: give --netns-count N")
		}
		return advise.Workload{Namespaces: o.netnsCount, Unshare: true, Parallel: f.parallel, LoUp: true}, true, nil
	case f.cni:
		if !changed("netns-count") {
			return advise.Workload{}, true, ndst.Usagef("--cni: give --netns-count N (and --veth)")
		}
		return advise.Workload{Namespaces: o.netnsCount, Veth: o.veth, LoUp: o.loUp, CNI: true}, true, nil
	case f.child != "" || changed("child-del"):
		if changed("one-by-one") {
			return advise.Workload{}, true, ndst.Usagef("--child: say how they are deleted with --child-del, not --one-by-one")
		}
		if !slices.Contains(bench.WorkloadBatches[bench.WorkloadChildren], f.childDel) {
			return advise.Workload{}, true, ndst.Usagef("--child-del %q: want one of %v", f.childDel, bench.WorkloadBatches[bench.WorkloadChildren])
		}
		return advise.Workload{Devices: o.count, Child: f.child, ChildDel: f.childDel}, true, nil
	}
	if changed("netns-count") {
		return advise.Workload{}, true, ndst.Usagef("--addr4, --addr6 and --ipv6-forwarding describe a device workload")
	}
	return advise.Workload{Devices: o.count, OneByOne: o.oneByOne, Addrs: &f.addrs}, true, nil
}
