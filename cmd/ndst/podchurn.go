package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// ndst churn --netns: pods made and deleted at a rate (ndst.PodChurnBackend).

// podChurnFlags are churn's flags of the pod mode.
type podChurnFlags struct {
	on  bool
	req ndst.PodChurnRequest
	// noLimit skips the search for the rate at which the cleanup stops
	// keeping up.
	noLimit bool
}

// podChurnOnly are the flags that only the pod mode takes, and
// deviceChurnOnly those only the device mode takes.
var (
	podChurnOnly    = []string{"rate", "for", "lifetime", "no-lo-up", "no-veth", "cni", "no-limit", "parallel"}
	deviceChurnOnly = []string{"threads", "count", "seconds", "locking", "namespaces", "alloc", "work", "listers", "max-memory"}
)

func addPodChurnFlags(cmd *cobra.Command, p *podChurnFlags) {
	f := cmd.Flags()
	f.BoolVar(&p.on, "netns", false, "churn pods instead of devices: namespaces with lo up and a veth pair, made at --rate for --for, each deleted --lifetime after it was made, on the emulated or (--backend netlink) the real kernel")
	f.Float64Var(&p.req.Rate, "rate", 0, "with --netns: pods made (and deleted) per second")
	f.DurationVar(&p.req.For, "for", 0, "with --netns: how long pods are made (e.g. 600s)")
	f.DurationVar(&p.req.Lifetime, "lifetime", ndst.DefaultPodLifetime, "with --netns: how long each pod lives")
	f.BoolVar(&p.req.NoLoUp, "no-lo-up", false, "with --netns: leave each pod's lo down")
	f.BoolVar(&p.req.NoVeth, "no-veth", false, "with --netns: pods without a veth pair")
	f.BoolVar(&p.req.CNI, "cni", false, "with --netns: delete each pod's veth first, as a CNI plugin's DEL does (netns del --cni)")
	f.BoolVar(&p.noLimit, "no-limit", false, "with --netns: do not search the rate at which the node stops keeping up")
	f.IntVar(&p.req.Parallel, "parallel", ndst.DefaultPodParallel, "with --netns: the runtime's workers making pods, and as many deleting them")
}

// checkChurnMode refuses the flags of the other mode.
func checkChurnMode(cmd *cobra.Command, p *podChurnFlags) error {
	if p.on {
		return refuse(setFlags(cmd, deviceChurnOnly), "churn --netns churns pods (--rate, --for, --lifetime), not devices")
	}
	return refuse(setFlags(cmd, podChurnOnly), "these are churn --netns's (pods); without it churn makes devices")
}

func (g *globalOptions) podChurn(p *podChurnFlags) error {
	if g.backend != "sim" && g.backend != "netlink" {
		return ndst.Usagef("churn --netns runs on the emulated kernel (--backend sim) or the real one (--backend netlink), not %s", g.backend)
	}
	// churn's own --netns (a switch) shadows the global one (a name): the
	// pods' veth ends go to ndst's namespace, the default.
	g.netnsSet, g.netns = false, "ndst"
	req := p.req
	req.FindLimit = !p.noLimit
	if err := req.Normalize(); err != nil {
		return err
	}
	return g.timedAs(g.backend == "netlink", fmt.Sprintf("churn --netns: %g pods a second for %v %s", req.Rate, req.For, g.where()),
		func(ctx context.Context, b ndst.Backend) (*ndst.Result, error) {
			cb, ok := b.(ndst.PodChurnBackend)
			if !ok {
				return nil, ndst.Usagef("--backend %s has no churn --netns", g.backend)
			}
			return cb.PodChurn(ctx, req)
		}, writePodChurnText)
}

func writePodChurnText(w io.Writer, r *ndst.Result, v textDetail) error {
	var b strings.Builder
	where := "on the real kernel (--backend " + r.Backend + ")"
	if r.Backend == "sim" {
		where = "on the emulated kernel (--backend sim)"
	}
	c := r.Churn
	if r.Result != ndst.ResultOK && r.Backend == "sim" {
		fmt.Fprintf(&b, "churn --netns: stopped (%s) %s; nothing was changed\n", r.Result, where)
	} else if c != nil {
		del := "its namespace deleted"
		if c.CNI {
			del = "its veth then its namespace deleted (CNI DEL)"
		}
		fmt.Fprintf(&b, "churn --netns: %d pods made at %g a second for %s, each %s %s after it was made, %s\n",
			c.Created, c.Rate, fmtDur(c.ForNS), del, fmtDur(c.LifetimeNS), where)
	}
	writeKernelLine(&b, r)
	if c != nil {
		verdict := "bounded: the cleanup keeps up"
		if !c.KeepsUp {
			verdict = "growing: the cleanup does not keep up"
		}
		keep := func(ok bool) string {
			if ok {
				return "on time"
			}
			return "behind"
		}
		fmt.Fprintf(&b, "runtime: %d workers each to make and delete: %.0f made and %.0f deleted a second in the steady state (%s, %s)\n",
			c.Parallel, c.MadePerSec, c.DeletedPerSec, keep(c.CreatesKeepUp), keep(c.DeletesKeepUp))
		fmt.Fprintf(&b, "backlog: %s (steady-state slope %+.2f namespaces/s; at most %d waiting; %s)\n", verdict, c.SlopePerSec, c.PeakWaiting, c.Observed)
		fmt.Fprintf(&b, "         %s\n", backlogLine(c.Backlog, 8))
		fmt.Fprintf(&b, "cleanup: %.0f namespaces freed a second in the steady state", c.FreedPerSec)
		if c.Batches != nil {
			fmt.Fprintf(&b, "; %s of cleanup_net (namespaces each: %s)", plural(*c.Batches, "run"), batchSizes(c.BatchSizes))
		}
		b.WriteString("\n")
		if l := c.Create; l != nil {
			fmt.Fprintf(&b, "create:  steady state, per pod: min %s, median %s, p99 %s, max %s\n", fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
		}
		if l := c.Delete; l != nil {
			fmt.Fprintf(&b, "delete:  per pod: min %s, median %s, p99 %s, max %s\n", fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
		}
		fmt.Fprintf(&b, "drained: %-10s the cleanup freed the last namespace%s\n", optDur(c.DrainedNS), notMeasured(c.DrainedNS))
		if c.LimitPerSec != nil {
			lim := "every rate searched"
			if !math.IsInf(*c.LimitPerSec, 1) {
				lim = fmt.Sprintf("about %.0f pods a second", *c.LimitPerSec)
			}
			fmt.Fprintf(&b, "limit:   keeps up to %s (%s)\n", lim, c.LimitHow)
		}
	}
	if r.VirtualNS != nil {
		fmt.Fprintf(&b, "virtual: %-10s what the emulated kernel takes\n", fmtDur(*r.VirtualNS))
	}
	fmt.Fprintf(&b, "wall:    %-10s what ndst took\n", fmtDur(r.WallNS))
	writeOutcome(&b, r, v)
	_, err := io.WriteString(w, b.String())
	return err
}
