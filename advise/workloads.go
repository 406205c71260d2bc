package advise

import (
	"fmt"
	"time"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
)

// The workloads of bench's workload cells as advise workloads, and the
// workload changes each can make.

// cell makes c the workload's bench cell (c has the machine already).
func (w Workload) cell(c *bench.Cell) {
	switch {
	case w.Rate > 0:
		c.Workload, c.Rate, c.ForNS, c.Batch, c.Count, c.Namespaces = bench.WorkloadChurn, w.Rate, w.ForNS, bench.BatchNone, 1, 0
	case w.Unshare:
		c.Workload, c.Parallel, c.Batch, c.Count, c.Namespaces = bench.WorkloadUnshare, w.Parallel, bench.BatchNone, w.Namespaces, 0
	case w.Child != "":
		c.Workload, c.Child, c.Batch = bench.WorkloadChildren, w.Child, w.ChildDel
	case w.Addrs != nil && !w.Addrs.IsZero():
		c.Workload, c.Addr4, c.Addr6, c.Fwd6 = bench.WorkloadAddrs, w.Addrs.V4, w.Addrs.V6, w.Addrs.Forwarding6
	case w.CNI:
		c.Batch = bench.BatchCNI
	}
}

// workloadString describes the workloads of this file ("" for the others).
func (w Workload) workloadString() string {
	switch {
	case w.Rate > 0:
		return fmt.Sprintf("pods made and deleted at %g a second for %v (its time: between pods at the rate the node sustains)", w.Rate, time.Duration(w.ForNS))
	case w.Unshare:
		return fmt.Sprintf("%d namespaces made by %d workers that unshare and exit (until their cleanup drained)", w.Namespaces, w.Parallel)
	case w.Child != "":
		how := map[string]string{"one-by-one": "one by one", "batched": "in one batch", bench.BatchStream: "one by one in one request stream", bench.BatchParent: "by deleting their lower device"}[w.ChildDel]
		return fmt.Sprintf("%d %ss on a device deleted %s", w.Devices, w.Child, how)
	case w.Addrs != nil && !w.Addrs.IsZero():
		style := "in one batch"
		if w.OneByOne {
			style = "one by one"
		}
		return fmt.Sprintf("%d devices, each %s, deleted %s", w.Devices, w.Addrs, style)
	case w.CNI:
		what := "with lo"
		if w.Veth {
			what = "with lo and a veth pair"
		}
		return fmt.Sprintf("%d namespaces %s deleted one pod after another as a CNI plugin's DEL does (the veth first, waited for)", w.Namespaces, what)
	}
	return ""
}

// checkWorkload validates the workloads of this file.
func (w Workload) checkWorkload() error {
	switch {
	case w.Child != "" && w.Child != ndst.KindVLAN && w.Child != ndst.KindMacvlan:
		return ndst.Usagef("--child %q: want vlan or macvlan", w.Child)
	case w.Child == ndst.KindVLAN && w.Devices > ndst.MaxVLANID:
		return ndst.Usagef("--count %d: at most %d VLANs on one device", w.Devices, ndst.MaxVLANID)
	case w.Unshare && (w.Parallel < 1 || w.Parallel > ndst.MaxUnshareParallel):
		return ndst.Usagef("--parallel %d: want 1..%d", w.Parallel, ndst.MaxUnshareParallel)
	case w.CNI && !w.Veth:
		return ndst.Usagef("--cni deletes each pod's veth first: give --veth")
	case w.Rate != 0:
		r := ndst.PodChurnRequest{Rate: w.Rate, For: time.Duration(w.ForNS)}
		return r.Normalize()
	}
	if w.Addrs == nil {
		return nil
	}
	a := *w.Addrs
	return a.Normalize()
}

// workloadLevers are the changes the workloads of this file can make.
func workloadLevers(w Workload, add func(Lever, func(*bench.Cell))) {
	switch {
	case w.Addrs != nil && w.Addrs.Forwarding6:
		add(Lever{Kind: KindWorkload, Setting: "IPv6 forwarding off on the devices to delete",
			Apply: "sysctl -w net.ipv6.conf.DEV.forwarding=0 for each device before deleting it (its subnet-router anycast addresses go, with their routes)",
			Cost:  "the device stops forwarding IPv6 and leaves its subnet-router anycast addresses: only for devices that are going anyway"},
			func(c *bench.Cell) { c.Fwd6 = false })
	case w.Child != "" && w.ChildDel != bench.BatchParent:
		add(Lever{Kind: KindWorkload, Setting: "delete the lower device instead",
			Apply: "ip link del LOWER: its NETDEV_UNREGISTER handler deletes every VLAN or macvlan on it in one batch of their own",
			Cost:  "the lower device goes too"},
			func(c *bench.Cell) { c.Batch = bench.BatchParent })
		if w.ChildDel != "batched" {
			add(Lever{Kind: KindWorkload, Setting: "delete the children in one batch",
				Apply: "ip link set CHILD group G for each, then ip link delete group G",
				Cost:  "none in the kernel: one RTNL hold and one wait for all"},
				func(c *bench.Cell) { c.Batch = "batched" })
		}
	case w.CNI:
		add(Lever{Kind: KindWorkload, Setting: "leave each pod's veth to its namespace's cleanup",
			Apply: "in the CNI plugin's DEL, do not delete the pod's interface; delete the namespace (ip netns del, or unmount it) and let cleanup_net take the veth with it",
			Cost:  "the host end goes asynchronously: its name and addresses may be in use a little longer (a runtime that reuses them must wait for RTM_DELLINK)"},
			func(c *bench.Cell) { c.Batch = "batched" })
	}
}
