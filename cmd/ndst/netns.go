package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// ndst netns add|del|list: network namespaces, each with lo, links and an
// optional veth pair into the backend's own namespace. On the emulated
// kernel --netns NAME makes add, del and list act inside one of them.

func init() { subcommands = append(subcommands, newNetnsCmd) }

func newNetnsCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "netns",
		Short: "Create, delete and list network namespaces, and time their teardown (returned, devices gone, cleanup done)",
		Long: `A container host deletes a pod by deleting its network namespace: its lo and
the container end of a veth pair, whose host end goes with it. Deleting one
returns before anything is gone: the kernel queues the namespace for its
cleanup work, which takes every namespace queued so far as one batch.
"netns del" reports three times: when the delete returned, when the devices
were gone, and when the cleanup was done.

  ndst netns add 100 --links 2 --veth --lo-up   # ndst1 .. ndst100
  ndst netns del 1 100                          # all at once
  ndst netns del 1 100 --one-by-one             # each one's whole cleanup waited for
  ndst netns del 1 100 --cni                    # a CNI plugin's DEL: each pod's veth, then its namespace
  ndst netns list
  ndst list --netns ndst1                       # the devices inside one (emulated kernel)`,
	}
	cmd.AddCommand(newNetnsAddCmd(g), newNetnsDelCmd(g), newNetnsListCmd(g))
	return cmd
}

// netnsBackends are the backends whose Backend implements
// ndst.NetnsBackend; the others are refused before anything is opened.
var netnsBackends = map[string]bool{"sim": true, "netlink": true}

// netnsBackend opens the backend and returns its namespace part.
func (g *globalOptions) netnsBackend(ctx context.Context, creates bool) (ndst.Backend, ndst.NetnsBackend, error) {
	if !netnsBackends[g.backend] {
		return nil, nil, ndst.Usagef("--backend %s has no namespace commands yet; the emulated kernel (--backend sim) and the netlink backend have them", g.backend)
	}
	// The netlink backend works from ndst's own namespace (the host ends
	// of veth pairs live there); it may make it for any of these commands
	// and removes it again when it stays empty.
	b, err := g.openBackend(ctx, creates || g.backend == "netlink")
	if err != nil {
		return nil, nil, err
	}
	nb, ok := b.(ndst.NetnsBackend)
	if !ok {
		b.Close()
		return nil, nil, ndst.Usagef("--backend %s has no namespace commands yet; the emulated kernel (--backend sim) has them", g.backend)
	}
	return b, nb, nil
}

func newNetnsAddCmd(g *globalOptions) *cobra.Command {
	var (
		links          int
		veth, loUp     bool
		tmpl, vethTmpl string
		addrs          ndst.Addrs
	)
	cmd := &cobra.Command{
		Use:   "add N",
		Short: "Create N namespaces named from --template (ndst1, ndst2, ...), each with lo and --links K links",
		Args:  exactArgs(1, "one argument N, the number of namespaces to create"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := ndst.ParseNetnsCount(args[0])
			if err != nil {
				return err
			}
			req := ndst.NetnsAddRequest{Count: n, Links: links, Kind: g.kind, Veth: veth, LoUp: loUp, Addrs: addrs}
			if req.Template, err = ndst.ParseNetnsTemplate(tmpl); err != nil {
				return err
			}
			if req.LinkTemplate, err = ndst.ParseTemplate(g.template); err != nil {
				return err
			}
			if req.VethTemplate, err = ndst.ParseTemplate(vethTmpl); err != nil {
				return err
			}
			if err := req.Normalize(); err != nil {
				return err
			}
			what := fmt.Sprintf("netns add: creating %d namespaces %s", n, g.where())
			return g.netnsTimed(true, what, func(ctx context.Context, nb ndst.NetnsBackend) (*ndst.Result, error) {
				return nb.NetnsAdd(ctx, req)
			}, netnsAddSummary(req))
		},
	}
	f := cmd.Flags()
	f.IntVar(&links, "links", 0, "links to create in each namespace besides lo, named from --name")
	f.BoolVar(&veth, "veth", false, "one veth pair per namespace: eth0 inside, the other end (named from --veth-name) in the initial namespace")
	f.BoolVar(&loUp, "lo-up", false, "set lo up in each namespace (127.0.0.1, ::1 and their routes)")
	f.StringVar(&tmpl, "template", ndst.DefaultNetnsTemplate, "namespace name template with exactly one %d (numbers start at 1)")
	f.StringVar(&vethTmpl, "veth-name", "veth%d", "name template of the veth ends in the initial namespace")
	addAddrFlags(cmd, &addrs)
	return cmd
}

func netnsAddSummary(req ndst.NetnsAddRequest) string {
	parts := []string{"lo"}
	if req.Links > 0 {
		parts = append(parts, plural(req.Links, "link"))
	}
	if req.Veth {
		parts = append(parts, "a veth pair")
	}
	s := "each with " + joinAnd(parts)
	if req.LoUp {
		s += ", lo up"
	}
	if !req.Addrs.IsZero() {
		s += ", each link " + req.Addrs.String()
	}
	return s
}

func newNetnsDelCmd(g *globalOptions) *cobra.Command {
	var (
		oneByOne, cni bool
		recreate      int
		tmpl          string
	)
	cmd := &cobra.Command{
		Use:   "del START STOP",
		Short: "Delete the namespaces numbered START..STOP and wait until the kernel's cleanup is done",
		Args:  exactArgs(2, "two arguments, START and STOP namespace numbers"),
		RunE: func(cmd *cobra.Command, args []string) error {
			start, stop, err := ndst.ParseNetnsRange(args[0], args[1])
			if err != nil {
				return err
			}
			t, err := ndst.ParseNetnsTemplate(tmpl)
			if err != nil {
				return err
			}
			if recreate != 0 && g.backend != "sim" {
				return ndst.Usagef("--recreate is the emulated kernel's (--backend sim); on the real kernel, run netns add while the delete's cleanup runs")
			}
			how := "all at once"
			switch {
			case oneByOne && cni:
				return ndst.Usagef("--one-by-one and --cni: choose one (--cni also deletes one pod after another, waiting only for its veth)")
			case oneByOne:
				how = "one at a time"
			case cni:
				how = "one pod after another (CNI DEL: the veth, then the namespace)"
			}
			what := fmt.Sprintf("netns del: deleting %s %d..%d %s %s", t, start, stop, how, g.where())
			return g.netnsTimed(false, what, func(ctx context.Context, nb ndst.NetnsBackend) (*ndst.Result, error) {
				return nb.NetnsDel(ctx, ndst.NetnsDelRequest{Start: start, Stop: stop, Template: t, OneByOne: oneByOne, CNI: cni, Recreate: recreate})
			}, "")
		},
	}
	cmd.Flags().IntVar(&recreate, "recreate", 0, "as soon as the deletes return, create this many new namespaces (the next free numbers) while the cleanup runs, as a host restarting its pods does, and say whether they waited for it (emulated kernel)")
	cmd.Flags().BoolVar(&oneByOne, "one-by-one", false, "delete one namespace, wait until its whole cleanup is done (cleanup_net: devices freed, its final rcu_barrier()), then the next; no CNI plugin waits that long (see --cni)")
	cmd.Flags().BoolVar(&oneByOne, "one-at-a-time", false, "the earlier name of --one-by-one")
	_ = cmd.Flags().MarkHidden("one-at-a-time")
	cmd.Flags().BoolVar(&cni, "cni", false, "delete one pod after another as a CNI plugin's DEL and the runtime do: the veth from inside the namespace, waiting for that request (both ends unregistered and freed), then the namespace, whose cleanup the next pod does not wait for")
	cmd.Flags().StringVar(&tmpl, "template", ndst.DefaultNetnsTemplate, "namespace name template with exactly one %d")
	return cmd
}

func newNetnsListCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the namespaces (devices, lo, veth peers)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			b, nb, err := g.netnsBackend(ctx, false)
			if err != nil {
				return err
			}
			defer b.Close()
			list, err := nb.NetnsList(ctx, ndst.NetnsListRequest{})
			if err != nil {
				return err
			}
			return g.printNetnsList(b.Name(), list)
		},
	}
}

// netnsTimed is timed for the namespace commands.
func (g *globalOptions) netnsTimed(creates bool, what string, op func(context.Context, ndst.NetnsBackend) (*ndst.Result, error), summary string) error {
	ctx, cancel := signalContext()
	defer cancel()
	p := g.startProgress(what)
	b, nb, err := g.netnsBackend(ctx, creates)
	if err != nil {
		p.stop()
		return err
	}
	defer b.Close()
	return g.finishTimed(ctx, p, func(ctx context.Context) (*ndst.Result, error) { return op(ctx, nb) },
		func(w io.Writer, r *ndst.Result, v textDetail) error { return writeNetnsText(w, r, summary, v) })
}

// writeNetnsText prints a namespace command's result: what was done, the
// three times of a delete, the per-namespace latencies, where the cleanup
// worker's time went, and the outcome.
func writeNetnsText(w io.Writer, r *ndst.Result, summary string, v textDetail) error {
	var b strings.Builder
	where := "on the real kernel (--backend " + r.Backend + ")"
	if r.Backend == "sim" {
		where = "on the emulated kernel (--backend sim)"
	}
	op := strings.Replace(r.Op, "-", " ", 1)
	switch {
	case r.Result != ndst.ResultOK && r.Backend == "sim":
		fmt.Fprintf(&b, "%s: stopped (%s) %s; nothing was changed\n", op, r.Result, where)
	case r.Op == "netns-add":
		fmt.Fprintf(&b, "%s: %s created %s", op, plural(r.Count, "namespace"), where)
		if summary != "" {
			fmt.Fprintf(&b, ", %s", summary)
		}
		b.WriteString("\n")
	default:
		style := "at once"
		switch {
		case r.Netns != nil && r.Netns.Style == ndst.StyleOneByOne:
			style = "one at a time"
		case r.Netns != nil && r.Netns.Style == ndst.StyleCNI:
			style = "one pod after another, each veth deleted first (CNI DEL)"
		}
		fmt.Fprintf(&b, "%s: %s deleted %s %s\n", op, plural(r.Count, "namespace"), style, where)
	}
	if r.Profile != nil {
		fmt.Fprintf(&b, "kernel:  profile %s, strategy %s, HZ=%d, %s, preempt %s, seed %d",
			*r.Profile, deref(r.Strategy), derefInt(r.HZ), plural(derefInt(r.CPUs), "CPU"), deref(r.Preempt), derefU64(r.Seed))
		if r.CostTable != nil {
			fmt.Fprintf(&b, ", cost table %s", *r.CostTable)
		}
		b.WriteString("\n")
	}
	clock := "virtual"
	if r.VirtualNS == nil {
		clock = "wall"
	}
	if n := r.Netns; n != nil {
		fmt.Fprintf(&b, "returned: %-10s the last delete returned (%s time; a delete only queues its namespace for cleanup)\n", fmtDur(n.ReturnedNS), clock)
		fmt.Fprintf(&b, "gone:     %-10s the last of their devices was unregistered (host-side veth ends included)%s\n", optDur(n.GoneNS), notMeasured(n.GoneNS))
		fmt.Fprintf(&b, "done:     %-10s the kernel's cleanup was done: devices freed, final rcu_barrier(), namespaces freed%s\n", optDur(n.DoneNS), notMeasured(n.DoneNS))
	}
	if r.VirtualNS != nil {
		fmt.Fprintf(&b, "virtual: %-10s what the emulated kernel takes\n", fmtDur(*r.VirtualNS))
	}
	fmt.Fprintf(&b, "wall:    %-10s what ndst took\n", fmtDur(r.WallNS))
	if n := r.Netns; n != nil {
		if l := n.Gone; l != nil {
			fmt.Fprintf(&b, "per namespace, delete to devices gone: min %s, median %s, p99 %s, max %s\n",
				fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
		}
		if l := n.Done; l != nil {
			fmt.Fprintf(&b, "per namespace, delete to cleanup done: min %s, median %s, p99 %s, max %s\n",
				fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
		}
		if l := n.CNIDelete; l != nil {
			fmt.Fprintf(&b, "per pod, its veth's delete from inside (CNI DEL): min %s, median %s, p99 %s, max %s\n",
				fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
		}
		if n.Batches != nil {
			fmt.Fprintf(&b, "cleanup: %s of cleanup_net (namespaces each: %s)\n", plural(*n.Batches, "run"), batchSizes(n.BatchSizes))
		}
		if len(n.Cleanup) > 0 {
			fmt.Fprintf(&b, "cleanup worker: %s\n", phaseLine(n.Cleanup))
		}
		if rc := n.Recreate; rc != nil {
			fmt.Fprintf(&b, "recreate: %d of %d new namespaces created while the cleanup ran", rc.Created, rc.Requested)
			if l := rc.Latency; l != nil {
				fmt.Fprintf(&b, " (the last %s after the deletes returned)", fmtDur(l.MaxNS))
			}
			switch {
			case rc.Blocked == 0:
				b.WriteString("; none waited for the cleanup\n")
			case rc.Created < rc.Requested:
				fmt.Fprintf(&b, "; the next one waited %s for net_mutex, which the cleanup holds while it waits for the devices: on this line a stuck cleanup blocks every new namespace (ip netns add, a container start hang)\n", fmtDur(rc.WaitedNS))
			default:
				fmt.Fprintf(&b, "; %d waited for net_mutex, held by the cleanup (up to %s)\n", rc.Blocked, fmtDur(rc.WaitedNS))
			}
		}
	} else if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "per namespace: min %s, median %s, p99 %s, max %s\n",
			fmtDur(l.MinNS), fmtDur(l.MedianNS), fmtDur(l.P99NS), fmtDur(l.MaxNS))
	}
	if len(r.Phases) > 0 {
		fmt.Fprintf(&b, "ndst's task: %s\n", phaseLine(r.Phases))
	}
	writeOutcome(&b, r, v)
	_, err := io.WriteString(w, b.String())
	return err
}

func optDur(p *int64) string {
	if p == nil {
		return "n/a"
	}
	return fmtDur(*p)
}

// notMeasured explains an n/a time.
func notMeasured(p *int64) string {
	if p == nil {
		return ": not measured (the notes say why)"
	}
	return ""
}

// batchSizes prints run sizes compactly: "1, 9" or "1, 1, ... (100 runs of 1)".
func batchSizes(s []int) string {
	if len(s) > 6 {
		if slices.Max(s) == slices.Min(s) {
			return fmt.Sprintf("%d in every run", s[0])
		}
		return fmt.Sprintf("%d, %d, %d ... %d (largest %d)", s[0], s[1], s[2], s[len(s)-1], slices.Max(s))
	}
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

// phaseLine lists phases by time, largest first, with what each is.
func phaseLine(ps []ndst.Phase) string {
	ps = slices.Clone(ps)
	slices.SortStableFunc(ps, func(a, b ndst.Phase) int { return int(b.TotalNS() - a.TotalNS()) })
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.TotalNS() == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", p.Name, fmtDur(p.TotalNS())))
	}
	return strings.Join(parts, ", ")
}

// printNetnsList renders a namespace listing.
func (g *globalOptions) printNetnsList(backend string, list []ndst.Netns) error {
	if g.json {
		return writeJSON(g.stdout, struct {
			Backend    string       `json:"backend"`
			Count      int          `json:"count"`
			Namespaces []ndst.Netns `json:"namespaces"`
		}{backend, len(list), list})
	}
	bw := bufio.NewWriter(g.stdout)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDEVICES\tLO\tVETH PEERS")
	for _, n := range list {
		name := n.Name
		switch {
		case n.Leftover:
			name += " (left by an interrupted ndst; reset removes it)"
		case n.Foreign:
			name += " (not ndst's)"
		}
		lo := "down"
		if n.LoUp {
			lo = "up"
		}
		peers := strings.Join(n.Peers, ",")
		if peers == "" {
			peers = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", name, n.Devices, lo, peers)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(bw, "%s\n", plural(len(list), "namespace"))
	return bw.Flush()
}

// checkNetnsCmd refuses the flags a namespace command would ignore: the
// emulated kernel's settings with a real-kernel backend, the real kernel's
// with the emulated one, and --netns, which names the namespace the device
// commands act in, not the ones these commands make.
func (g *globalOptions) checkNetnsCmd(cmd *cobra.Command) error {
	if err := refuse(setFlags(cmd, []string{"netns"}),
		"netns "+cmd.Name()+" works on namespaces of its own (named from --template); --netns names the namespace that add, del and list act inside"); err != nil {
		return err
	}
	if g.backend != "sim" {
		emu := emuFlags
		if g.backend == "netlink" && (cmd.Name() == "add" || cmd.Name() == "del") {
			emu = without(emu, "trace") // the real kernel's tracepoints (package ktrace)
		}
		return refuse(setFlags(cmd, emu), "--backend "+g.backend+" runs this host's kernel as it is, not the emulated kernel")
	}
	return refuse(setFlags(cmd, without(netlinkFlags, "netns")),
		"--backend sim (the default) runs the emulated kernel, not the real kernel")
}
