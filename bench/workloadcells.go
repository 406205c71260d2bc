package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
)

// Workload cells: the workloads of the emulated kernel as bench cells, so
// that bench runs their matrix and advise compares their levers. Each
// cell's time (Sample.DelNS, what the tables rank) is the workload's own
// figure:
//
//   - "addrs": Count devices up with Addr4/Addr6 addresses (Fwd6: IPv6
//     forwarding), deleted one by one or at once (Batch): the delete;
//   - "children": Count VLANs or macvlans (Child) on one ifb, deleted one
//     by one, in a stream, at once or with their lower device
//     ("parent"): the delete;
//   - "unshare": Count namespaces by Parallel workers that unshare and
//     exit (lo up): until the cleanup drained;
//   - "churn": pods at Rate a second for ForNS, each a second: the
//     steady-state time between pods the node sustains, 1/limit (the limit
//     searched with emulated churns of its own, to 10%).
//
// A namespace cell's Batch "cni" deletes its pods as a CNI plugin's DEL
// does (netns del --cni).

// Workload names and their extra delete modes.
const (
	WorkloadAddrs    = "addrs"
	WorkloadChildren = "children"
	WorkloadUnshare  = "unshare"
	WorkloadChurn    = "churn"
	BatchStream      = "stream"
	BatchParent      = "parent"
	BatchCNI         = "cni"
	BatchNone        = "-"
)

// WorkloadBatches are each workload's delete modes.
var WorkloadBatches = map[string][]string{
	WorkloadAddrs:    {"batched", "one-by-one"},
	WorkloadChildren: {"batched", "one-by-one", BatchStream, BatchParent},
	WorkloadUnshare:  {BatchNone},
	WorkloadChurn:    {BatchNone},
}

// checkWorkload validates a workload cell.
func (c Cell) checkWorkload() error {
	modes, ok := WorkloadBatches[c.Workload]
	switch {
	case !ok:
		return ndst.Usagef("cell %s: unknown workload %q", c, c.Workload)
	case !slices.Contains(modes, c.Batch):
		return ndst.Usagef("cell %s: workload %s has no delete mode %q (it has %v)", c, c.Workload, c.Batch, modes)
	case c.Workload == WorkloadChildren && c.Child != ndst.KindVLAN && c.Child != ndst.KindMacvlan:
		return ndst.Usagef("cell %s: the children are vlan or macvlan, not %q", c, c.Child)
	case c.Workload == WorkloadChildren && c.Child == ndst.KindVLAN && c.Count > ndst.MaxVLANID:
		return ndst.Usagef("cell %s: at most %d VLANs on one device", c, ndst.MaxVLANID)
	case c.Workload == WorkloadUnshare && (c.Parallel < 1 || c.Parallel > ndst.MaxUnshareParallel):
		return ndst.Usagef("cell %s: --parallel %d is out of range; want 1..%d", c, c.Parallel, ndst.MaxUnshareParallel)
	case c.Workload == WorkloadChurn:
		r := ndst.PodChurnRequest{Rate: c.Rate, For: time.Duration(c.ForNS)}
		return r.Normalize()
	}
	a := ndst.Addrs{V4: c.Addr4, V6: c.Addr6, Forwarding6: c.Fwd6}
	return a.Normalize()
}

// WorkloadString describes a workload cell's work.
func (c Cell) WorkloadString() string {
	switch c.Workload {
	case WorkloadAddrs:
		a := ndst.Addrs{V4: c.Addr4, V6: c.Addr6, Forwarding6: c.Fwd6}
		_ = a.Normalize()
		return fmt.Sprintf("%d devices %s deleted %s", c.Count, a, c.Batch)
	case WorkloadChildren:
		how := c.Batch
		if how == BatchParent {
			how = "with their lower device"
		}
		return fmt.Sprintf("%d %ss on a%s deleted %s", c.Count, c.Child, lowerKind(c), how)
	case WorkloadUnshare:
		return fmt.Sprintf("%d namespaces by %d workers that unshare and exit", c.Count, c.Parallel)
	case WorkloadChurn:
		return fmt.Sprintf("pods at %g a second for %v (the sustained rate)", c.Rate, time.Duration(c.ForNS))
	}
	return c.Workload
}

// workloadCells is the matrix of s.Workload's cells.
func (s *Spec) workloadCells() []Cell {
	var out []Cell
	for _, p := range s.Profiles {
		for _, hz := range s.HZ {
			for _, cpus := range s.CPUs {
				for _, pre := range s.Preempts {
					for _, bat := range s.Batches {
						for _, n := range s.Counts {
							for _, st := range s.Strategies {
								c := *s.Workload
								c.Backend, c.Profile, c.Strategy, c.HZ, c.CPUs, c.Preempt, c.Batch, c.Count = "sim", p, st, hz, cpus, pre, bat, n
								out = append(out, c)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// runWorkloadSim runs one emulated workload cell.
func (s *Spec) runWorkloadSim(ctx context.Context, c Cell, seed uint64) Sample {
	smp := Sample{Seed: seed, Result: ndst.ResultOK}
	cfg := s.emuConfig(c, seed)
	cfg.Ephemeral = true
	b, err := emu.Open(ctx, cfg)
	if err != nil {
		return failed(smp, err)
	}
	defer b.Close()
	take := func(r *ndst.Result) {
		if r != nil {
			smp.DelNS, smp.DelWallNS = deref(r.VirtualNS), r.WallNS
			smp.Latency, smp.Counters, smp.batched, smp.Phases = r.Latency, r.Counters, r.Batched, r.Phases
		}
	}
	switch c.Workload {
	case WorkloadAddrs:
		add, err := b.Add(ctx, ndst.AddRequest{Count: c.Count, Kind: c.Kind, Addrs: ndst.Addrs{V4: c.Addr4, V6: c.Addr6, Forwarding6: c.Fwd6}})
		if add != nil {
			smp.AddNS, smp.AddWallNS = deref(add.VirtualNS), add.WallNS
		}
		if err != nil {
			smp.StoppedIn = "add"
			return outcome(smp, add, err)
		}
		smp.StoppedIn = "del"
		del, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: c.Batch == "one-by-one"})
		take(del)
		return outcome(smp, del, err)
	case WorkloadChildren:
		pt, _ := ndst.ParseTemplate("lower%d")
		if _, err := b.Add(ctx, ndst.AddRequest{Count: 1, Template: pt, Kind: c.Kind}); err != nil {
			smp.StoppedIn = "add"
			return failed(smp, err)
		}
		add, err := b.Add(ctx, ndst.AddRequest{Count: c.Count, Kind: c.Child, Parent: "lower0"})
		if add != nil {
			smp.AddNS, smp.AddWallNS = deref(add.VirtualNS), add.WallNS
		}
		if err != nil {
			smp.StoppedIn = "add"
			return outcome(smp, add, err)
		}
		smp.StoppedIn = "del"
		req := ndst.DelRequest{Start: 2, Stop: math.MaxInt32}
		switch c.Batch {
		case "one-by-one":
			req.OneByOne = true
		case BatchStream:
			req.Stream = true
		case BatchParent:
			req.Start, req.Stop = 1, 1
		}
		del, err := b.Del(ctx, req)
		take(del)
		return outcome(smp, del, err)
	case WorkloadUnshare:
		smp.StoppedIn = "unshare"
		r, err := b.Unshare(ctx, ndst.UnshareRequest{Count: c.Count, Parallel: c.Parallel, LoUp: true})
		take(r)
		if r != nil && r.Unshare != nil && r.Unshare.DrainedNS != nil {
			smp.DelNS = *r.Unshare.DrainedNS
		}
		return outcome(smp, r, err)
	case WorkloadChurn:
		smp.StoppedIn = "churn"
		req := ndst.PodChurnRequest{Rate: c.Rate, For: time.Duration(c.ForNS), FindLimit: true}
		r, err := b.PodChurn(ctx, req)
		take(r)
		if r != nil && r.Churn != nil && r.Churn.LimitPerSec != nil && *r.Churn.LimitPerSec > 0 && !math.IsInf(*r.Churn.LimitPerSec, 1) {
			smp.DelNS = int64(1e9 / *r.Churn.LimitPerSec)
		}
		return outcome(smp, r, err)
	}
	return failed(smp, fmt.Errorf("unknown workload %q", c.Workload))
}

// validateWorkload checks a workload matrix: emulated cells only, with a
// workload the cells can run.
func (s *Spec) validateWorkload() error {
	w := *s.Workload
	if _, ok := WorkloadBatches[w.Workload]; !ok {
		return ndst.Usagef("unknown workload %q", w.Workload)
	}
	if slices.Contains(s.Backends, "netlink") {
		return ndst.Usagef("the %s workload's bench cells are emulated; ndst predict --workloads runs it on the real kernel beside the emulated one", w.Workload)
	}
	if len(s.NetnsCounts) > 0 {
		return ndst.Usagef("a workload's cells are not namespace cells (give its sizes with --count)")
	}
	w.Batch = WorkloadBatches[w.Workload][0]
	w.Count = 1
	return w.checkWorkload()
}

// lowerKind names the children's lower device, after "a".
func lowerKind(c Cell) string {
	if c.Kind == "ifb" {
		return "n ifb"
	}
	return " dummy"
}

// workloadFigure says what a workload matrix's times are.
func workloadFigure(c Cell) string {
	switch c.Workload {
	case WorkloadAddrs:
		a := ndst.Addrs{V4: c.Addr4, V6: c.Addr6, Forwarding6: c.Fwd6}
		_ = a.Normalize()
		return fmt.Sprintf("time to delete N %ss just added, each %s", map[bool]string{true: "ifb", false: "dummie"}[c.Kind == "ifb"], a)
	case WorkloadChildren:
		return fmt.Sprintf("time to delete N %ss just added on a%s (parent: by deleting it)", c.Child, lowerKind(c))
	case WorkloadUnshare:
		return fmt.Sprintf("time until the cleanup freed N namespaces made by %d workers that unshare and exit (lo up)", c.Parallel)
	case WorkloadChurn:
		return fmt.Sprintf("time between pods at the highest rate the node sustains (1/limit, searched to 5%%) for pods at %g a second for %v", c.Rate, time.Duration(c.ForNS))
	}
	return c.Workload
}
