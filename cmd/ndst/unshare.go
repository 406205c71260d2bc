package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// ndst unshare N: namespaces that die with their process (ndst.UnshareBackend).

func init() { subcommands = append(subcommands, newUnshareCmd) }

func newUnshareCmd(g *globalOptions) *cobra.Command {
	var req ndst.UnshareRequest
	var vethTmpl string
	cmd := &cobra.Command{
		Use:   "unshare N",
		Short: "Make N namespaces that die with their process (unshare(CLONE_NEWNET), then exit) and time their cleanup",
		Long: `A container's network namespace usually dies with its last process: nothing
is mounted, the kernel drops the namespace's last reference when the process
exits and queues it for the cleanup work. "unshare N --parallel P" has P
workers each make a namespace (unshare(CLONE_NEWNET); with --lo-up and
--veth also lo up and a veth pair into ndst's own namespace) and exit, N in
all, and reports the rate they were made at, the backlog of namespaces
waiting for the cleanup over time, when it drained, and whether the
creations waited for the cleanup (net_mutex on 2.6.3x to 4.16, which the
cleanup holds; pernet_ops_rwsem after, which it shares).

On the real kernel (--backend netlink, root) each worker is a thread of ndst
that unshares and ends; no process or shell per namespace.

  ndst --profile 6.18 --cpus 2 --hz 250 unshare 10000 --parallel 40
  ndst --profile 2.6.32 unshare 100 --parallel 4 --lo-up
  sudo ndst --backend netlink unshare 1000 --parallel 8 --lo-up --veth`,
		Args: exactArgs(1, "one argument N, the number of namespaces to make"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := ndst.ParseNetnsCount(args[0])
			if err != nil {
				return err
			}
			req.Count = n
			if req.VethTemplate, err = ndst.ParseTemplate(vethTmpl); err != nil {
				return err
			}
			if err := req.Normalize(); err != nil {
				return err
			}
			return g.unshareTimed(req)
		},
	}
	f := cmd.Flags()
	f.IntVar(&req.Parallel, "parallel", 1, "workers making namespaces at once")
	f.BoolVar(&req.LoUp, "lo-up", false, "set each namespace's lo up before its worker exits")
	f.BoolVar(&req.Veth, "veth", false, "give each namespace a veth pair, eth0 inside and the other end in the initial namespace (emulated) or ndst's namespace (netlink)")
	f.StringVar(&vethTmpl, "veth-name", "uv%d", "name template of the veth ends outside the namespaces")
	return cmd
}

// unshareBackends are the backends with an unshare.
var unshareBackends = map[string]bool{"sim": true, "netlink": true}

func (g *globalOptions) unshareTimed(req ndst.UnshareRequest) error {
	if !unshareBackends[g.backend] {
		return ndst.Usagef("--backend %s has no unshare; the emulated kernel (--backend sim) and the netlink backend have it", g.backend)
	}
	return g.timedAs(g.backend == "netlink", fmt.Sprintf("unshare: %d namespaces by %d workers %s", req.Count, req.Parallel, g.where()),
		func(ctx context.Context, b ndst.Backend) (*ndst.Result, error) {
			ub, ok := b.(ndst.UnshareBackend)
			if !ok {
				return nil, ndst.Usagef("--backend %s has no unshare", g.backend)
			}
			return ub.Unshare(ctx, req)
		}, writeUnshareText)
}

// writeUnshareText prints an unshare's result: the creations, the backlog
// and its drain, the pernet lock, and the outcome.
func writeUnshareText(w io.Writer, r *ndst.Result, v textDetail) error {
	var b strings.Builder
	where := "on the real kernel (--backend " + r.Backend + ")"
	if r.Backend == "sim" {
		where = "on the emulated kernel (--backend sim)"
	}
	u := r.Unshare
	switch {
	case r.Result != ndst.ResultOK && r.Backend == "sim":
		fmt.Fprintf(&b, "unshare: stopped (%s) %s; nothing was changed\n", r.Result, where)
	case u != nil:
		fmt.Fprintf(&b, "unshare: %s made by %s and exited %s\n", plural(u.Namespaces, "namespace"), plural(u.Parallel, "worker"), where)
	}
	writeKernelLine(&b, r)
	clock := "virtual"
	if r.VirtualNS == nil {
		clock = "wall"
	}
	if u != nil {
		fmt.Fprintf(&b, "created: %-10s the last unshare returned (%s time): %.0f namespaces/s\n", fmtDur(u.CreatedNS), clock, u.CreateRate)
		fmt.Fprintf(&b, "exited:  %-10s the last worker exited, dropping its namespace's last reference\n", fmtDur(u.ExitedNS))
		fmt.Fprintf(&b, "drained: %-10s the cleanup freed the last namespace%s\n", optDur(u.DrainedNS), notMeasured(u.DrainedNS))
	}
	if r.VirtualNS != nil {
		fmt.Fprintf(&b, "virtual: %-10s what the emulated kernel takes\n", fmtDur(*r.VirtualNS))
	}
	fmt.Fprintf(&b, "wall:    %-10s what ndst took\n", fmtDur(r.WallNS))
	if u != nil {
		if l := u.Create; l != nil {
			fmt.Fprintf(&b, "per namespace, its worker's unshare to exit: min %s, median %s, p99 %s, max %s\n",
				fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
		}
		fmt.Fprintf(&b, "backlog: at most %d waiting for cleanup (at %s, %s); %s\n", u.PeakWaiting, fmtDur(u.PeakNS), u.Observed, backlogLine(u.Backlog, 8))
		if u.Batches != nil {
			fmt.Fprintf(&b, "cleanup: %s of cleanup_net (namespaces each: %s)\n", plural(*u.Batches, "run"), batchSizes(u.BatchSizes))
		}
		switch {
		case u.CreatesWaited == nil:
			fmt.Fprintf(&b, "pernet:  %s; whether creations waited for the cleanup was not observed\n", u.PernetLock)
		case *u.CreatesWaited > 0:
			fmt.Fprintf(&b, "pernet:  %s; %d creations waited for a running cleanup (the longest %s)\n", u.PernetLock, *u.CreatesWaited, fmtDur(*u.WaitedNS))
		default:
			fmt.Fprintf(&b, "pernet:  %s; no creation waited for the cleanup\n", u.PernetLock)
		}
		if u.RTNLWaitNS != nil && *u.RTNLWaitNS > 0 {
			fmt.Fprintf(&b, "rtnl:    the workers waited %s for RTNL in all (%s a namespace): lo, lo up and the veth pair take it, and a cleanup holds it while it unregisters its batch's devices\n",
				fmtDur(*u.RTNLWaitNS), fmtDur(*u.RTNLWaitNS/int64(max(u.Namespaces, 1))))
		}
	}
	writeOutcome(&b, r, v)
	_, err := io.WriteString(w, b.String())
	return err
}

// backlogLine samples a backlog series at about n evenly spaced times:
// "waiting/live at t: 0/0 at 0, 12/14 at 10.0ms, ...".
func backlogLine(pts []ndst.BacklogPoint, n int) string {
	if len(pts) == 0 {
		return "no samples"
	}
	end := pts[len(pts)-1].AtNS
	var parts []string
	j := 0
	for i := range n + 1 {
		at := end * int64(i) / int64(n)
		for j+1 < len(pts) && pts[j+1].AtNS <= at {
			j++
		}
		w := pts[j].Waiting
		if pts[j].AtNS > at {
			w = 0 // before the first change
		}
		parts = append(parts, fmt.Sprintf("%d at %s", w, fmtDur(at)))
	}
	return "waiting: " + strings.Join(parts, ", ")
}

// writeKernelLine prints the emulated kernel's settings line of a result.
func writeKernelLine(b *strings.Builder, r *ndst.Result) {
	if r.Profile == nil {
		return
	}
	fmt.Fprintf(b, "kernel:  profile %s, strategy %s, HZ=%d, %s, preempt %s, seed %d",
		*r.Profile, deref(r.Strategy), derefInt(r.HZ), plural(derefInt(r.CPUs), "CPU"), deref(r.Preempt), derefU64(r.Seed))
	if r.CostTable != nil {
		fmt.Fprintf(b, ", cost table %s", *r.CostTable)
	}
	b.WriteString("\n")
}
