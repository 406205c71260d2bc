package main

import (
	"os"
	"slices"

	"github.com/ndst-project/ndst/advise"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newAdviseCmd) }

type adviseOptions struct {
	count, netnsCount int
	oneByOne          bool
	veth, loUp        bool
	runs, jobs        int
	verify            bool
	verifier          *hostVerifier
	// wl are the flags of the workloads of adviseworkload.go.
	wl adviseWorkloadFlags
}

func newAdviseCmd(g *globalOptions) *cobra.Command {
	o := &adviseOptions{}
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Rank what would make a teardown faster: runtime knobs, boot parameters, build options, kernel lines and workload changes",
		Long: `For a workload (N devices deleted in one batch or one by one, or N namespaces with
or without a veth pair deleted all at once or one at a time), emulate every lever the
kernel line offers and rank them by the time they save: runtime knobs (sysfs, sysctl),
boot parameters, build options (HZ, the preemption model, RCU callback offloading),
each later kernel line, and changes to the workload itself. Each lever says how to
apply it, whether it takes effect at once, at boot or only in another build, what it
costs elsewhere, the predicted time before and after, and why, from the emulated
runs' own phases and counters.

The machine is this host (--machine host: its kernel line, HZ, CPUs, preemption model
and knobs, or those of the --costs table's host) unless an emulation flag is given.

Examples:
  ndst advise                                   # 1000 devices deleted in one batch, on this host
  ndst advise --count 1000 --one-by-one
  ndst advise --netns-count 100 --veth --one-by-one
  ndst advise --count 100 --addr6 1 --ipv6-forwarding --one-by-one
  ndst advise --count 100 --child macvlan --child-del one-by-one
  ndst advise --netns-count 100 --veth --lo-up --cni
  ndst advise --netns-count 1000 --unshare --parallel 8
  ndst advise --churn-rate 100 --churn-for 20s
  ndst advise --profile 6.1 --hz 250 --cpus 2 --preempt rt --count 100 --one-by-one --json`,
		Args: exactArgs(0, "no arguments; the workload is given by flags"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runAdvise(g, o, cmd) },
	}
	f := cmd.Flags()
	f.IntVar(&o.count, "count", 1000, "devices created and deleted (a device workload)")
	f.BoolVar(&o.oneByOne, "one-by-one", false, "delete the devices one by one instead of in one batch, or the namespaces (--netns-count) one at a time, each waited for")
	f.IntVar(&o.netnsCount, "netns-count", 0, "namespaces created and deleted (a namespace workload; replaces --count)")
	f.BoolVar(&o.veth, "veth", false, "namespace workload: each namespace has a veth pair into the initial namespace (a pod)")
	f.BoolVar(&o.loUp, "lo-up", false, "namespace workload: set lo up in every namespace")
	f.BoolVar(&o.oneByOne, "one-at-a-time", false, "the earlier name of --one-by-one for namespaces")
	_ = f.MarkHidden("one-at-a-time")
	f.IntVar(&o.runs, "runs", 1, "runs of each emulation (seeds --seed, --seed+1, ...)")
	f.IntVar(&o.jobs, "jobs", 0, "emulations run at once (0: one per core)")
	f.BoolVar(&o.verify, "verify", false, "measure each runtime lever on this host's real kernel, before and after setting it, restoring it after (root)")
	o.verifier = addVerifier(g, cmd)
	addAdviseWorkloadFlags(cmd, &o.wl)
	return cmd
}

func (o *adviseOptions) workload(cmd *cobra.Command) (advise.Workload, error) {
	changed := func(n string) bool { return cmd.Flags().Changed(n) }
	if w, ok, err := o.otherWorkload(cmd); ok {
		return w, err
	}
	if o.netnsCount != 0 || changed("netns-count") {
		if changed("count") {
			return advise.Workload{}, ndst.Usagef("--count describes a device workload; --netns-count describes a namespace one (give one of them)")
		}
		if o.netnsCount < 1 || o.netnsCount > ndst.MaxNetnsCount {
			return advise.Workload{}, ndst.Usagef("--netns-count: %d is out of range; want 1..%d", o.netnsCount, ndst.MaxNetnsCount)
		}
		return advise.Workload{Namespaces: o.netnsCount, Veth: o.veth, LoUp: o.loUp, OneByOne: o.oneByOne}, nil
	}
	if f := slices.IndexFunc([]string{"veth", "lo-up", "one-at-a-time"}, changed); f >= 0 {
		return advise.Workload{}, ndst.Usagef("--%s describes a namespace workload; give --netns-count N", []string{"veth", "lo-up", "one-at-a-time"}[f])
	}
	if o.count < 1 || o.count > ndst.MaxCount {
		return advise.Workload{}, ndst.Usagef("--count: %d is out of range; want 1..%d", o.count, ndst.MaxCount)
	}
	return advise.Workload{Devices: o.count, OneByOne: o.oneByOne}, nil
}

func runAdvise(g *globalOptions, o *adviseOptions, cmd *cobra.Command) error {
	w, err := o.workload(cmd)
	if err != nil {
		return err
	}
	if o.runs < 1 || o.runs > 100 {
		return ndst.Usagef("--runs: %d is out of range; want 1..100", o.runs)
	}
	if o.jobs < 0 {
		return ndst.Usagef("--jobs must not be negative")
	}
	changed := func(n string) bool { f := cmd.Flags().Lookup(n); return f != nil && f.Changed }
	if g.machine == "" && !slices.ContainsFunc([]string{"profile", "hz", "cpus", "preempt", "rcu"}, changed) {
		g.machine = "host"
		if err := g.applyMachine(cmd); err != nil {
			return err
		}
	}
	m := advise.Machine{Profile: g.profile, Strategy: g.strategy, HZ: g.hz, CPUs: g.cpus, Preempt: g.preempt, RCU: g.rcu,
		Params: mergeParamWords(g.hostParams, g.params)}
	for _, s := range g.machineSettings {
		m.Settings = append(m.Settings, advise.Setting{Name: s.Name, Value: s.Value, From: s.From})
	}
	if p, ok := netdev.Profiles[m.Profile]; ok && !g.preemptSet && len(g.machineSettings) == 0 {
		m.Preempt, _ = p.DefaultPreempt() // none, or lazy on a line without it
	}
	if g.costs != "" {
		if m.Costs, err = costs.Load(g.costs); err != nil {
			return ndst.Usagef("--costs: %v", err)
		}
	}
	if o.verify {
		if g.backend != "netlink" && changed("backend") {
			return ndst.Usagef("--verify measures on the real kernel; --backend %s cannot", g.backend)
		}
		if os.Geteuid() != 0 {
			return ndst.Usagef("--verify writes the kernel's knobs and measures the real kernel: it needs root")
		}
		if err := advise.CheckVerify(&advise.Advice{Workload: w, Machine: m}); err != nil {
			return ndst.Usagef("--verify: %v", err)
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	a, err := advise.Run(ctx, advise.Options{Workload: w, Machine: m, Runs: o.runs, Seed: g.seed, Workers: o.jobs})
	if err != nil {
		return err
	}
	if o.verify {
		if err := advise.Verify(ctx, a); err != nil {
			return err
		}
	}
	if g.json {
		return a.WriteJSON(g.stdout)
	}
	if err := a.WriteText(g.stdout); err != nil {
		return err
	}
	return o.verifier.writeVerification(a)
}
