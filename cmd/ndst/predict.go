package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/safefile"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newPredictCmd) }

// maxGuestLog bounds the --from-guest transcript (a run's is tens of KB).
const maxGuestLog = 64 << 20

// predictFromGuest compares the emulated kernel with a guest's measurements:
// the guest's own calibration sets the emulated kernel's costs, HZ, CPUs
// and preemption model (scripts/vm-predict.sh writes the transcript).
// With measuredIn, the measurements come from that second transcript
// instead: a boot of the same kernel with the same CPUs and preemption model
// (with a boot parameter added, say), predicted with the first one's
// calibration.
func (g *globalOptions) predictFromGuest(s *bench.PredictSpec, path, measuredIn string) error {
	table, rec, err := readGuestLog("--from-guest", path)
	if err != nil {
		return err
	}
	if measuredIn != "" {
		_, rec2, err := readGuestLog("--measured-in", measuredIn)
		if err != nil {
			return err
		}
		if err := sameGuest(rec.Source, rec2.Source); err != nil {
			return ndst.Usagef("--measured-in %s: %v", measuredIn, err)
		}
		if len(g.params) > 0 {
			return g.predictLever(s, table, rec, rec2)
		}
		rec = rec2
	}
	s.Costs, s.Recorded = table, rec
	s.Counts = s.Counts[:0]
	for n := range rec.Del {
		s.Counts = append(s.Counts, n)
	}
	slices.Sort(s.Counts)
	if err := s.Check(); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	prog := g.startProgress("predict: running the emulated kernel with the guest's calibration")
	s.Progress = g.progressLines(prog, "predict: ")
	p, err := bench.Predict(ctx, s)
	prog.stop()
	if err != nil {
		return err
	}
	if g.json {
		return writeJSON(g.stdout, p)
	}
	return p.WriteTable(g.stdout)
}

// predictLever compares two boots of one guest, without and with the
// --param knobs: both predicted with the first one's calibration, the
// second with the knobs set in the emulated kernel.
func (g *globalOptions) predictLever(s *bench.PredictSpec, table *costs.Table, without, with *bench.Recorded) error {
	s.Costs, s.Recorded = table, without
	s.Counts = s.Counts[:0]
	for n := range without.Del {
		if _, ok := with.Del[n]; ok {
			s.Counts = append(s.Counts, n)
		}
	}
	slices.Sort(s.Counts)
	if len(s.Counts) == 0 {
		return ndst.Usagef("--measured-in: the two transcripts have no device count in common")
	}
	if err := s.Check(); err != nil {
		return err
	}
	params := slices.Clone(g.params)
	apply := func(c *emu.Config) error {
		c.Params = append(c.Params, params...)
		return nil
	}
	// The knobs are checked against the guest's line and machine before
	// anything runs.
	if _, err := s.EmuConfig(apply); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	prog := g.startProgress("predict: the guest's two boots, without and with " + strings.Join(params, " "))
	s.Progress = g.progressLines(prog, "predict: ")
	lp, err := bench.PredictLever(ctx, s, with, params, apply)
	prog.stop()
	if err != nil {
		return err
	}
	if g.json {
		return writeJSON(g.stdout, lp)
	}
	return lp.WriteTable(g.stdout)
}

// readGuestLog reads a scripts/vm-run.sh transcript (flag names it in errors).
func readGuestLog(flag, path string) (*costs.Table, *bench.Recorded, error) {
	b, err := safefile.ReadFile(context.Background(), path, maxGuestLog, safefile.FollowLinks)
	if err != nil {
		return nil, nil, ndst.Usagef("%s: %v", flag, err)
	}
	table, rec, err := bench.ParseGuestLog(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return table, rec, nil
}

// sameGuest refuses two guests whose kernel release, CPU count or
// preemption model differ (their "@@ndst-vm guest" headers).
func sameGuest(a, b string) error {
	fa, fb := guestFields(a), guestFields(b)
	for _, k := range []string{"release", "cpus", "preempt"} {
		if fa[k] != fb[k] {
			return fmt.Errorf("its guest has %s=%s, the calibrated one %s=%s: measure the same kernel and machine", k, fb[k], k, fa[k])
		}
	}
	return nil
}

func guestFields(s string) map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(s) {
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k] = v
		}
	}
	return m
}

// predictNetns compares the emulated kernel's namespace teardown with this
// host's (see bench.PredictNetns).
func (g *globalOptions) predictNetns(ctx context.Context, s *bench.PredictSpec) error {
	if !calibrate.HasNetnsCosts(s.Costs) {
		return ndst.Usagef("--costs %s has no namespace calibration (netns_setup_ns, netns_put_ns, netns_exit_ns): run ndst calibrate -o FILE again (without --no-netns)", g.costs)
	}
	prog := g.startProgress("predict: namespaces")
	p, err := bench.PredictNetns(ctx, bench.NetnsPredictSpec{Counts: s.Counts, LoUp: true, Runs: s.SimRuns, Seed: s.Seed,
		Costs: s.Costs, RealRuns: s.Runs, Netlink: s.Netlink, Progress: g.progressLines(prog, "predict: "), Step: prog.set})
	prog.stop()
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("predict interrupted; the namespaces it created and the throwaway namespace were removed")
		}
		return err
	}
	if g.json {
		return writeJSONIndent(g.stdout, p)
	}
	return p.WriteTable(g.stdout)
}

// maxPredictNetns bounds predict --netns's sizes (each is created, and
// deleted one at a time, on the real kernel).
const maxPredictNetns = 10000

func newPredictCmd(g *globalOptions) *cobra.Command {
	var (
		counts        []string
		runs, simRuns int
		netns         string
		saveCosts     string
		fromGuest     string
		measuredIn    string
		noAttribute   bool
		netnsMode     bool
		workloads     bool
		only          []string
		addrs         ndst.Addrs
	)
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Check the emulated kernel of this host's line, calibrated on this host, against the real kernel",
		Long: `For each N, add N devices and delete them (as one batch, and one by one) on
the real kernel (netlink backend, in a throwaway namespace) and on the
emulated kernel of the host's line (the one its calibration chose) loaded
with this host's calibration, and print the predicted and measured times with
the relative error, and for each delete where its time went on both: the
real one's phases from its kernel stack sampled at 1 kHz (--no-attribute:
not sampled), the emulated one's from its own attribution.

The calibration comes from --costs FILE (written by 'ndst calibrate -o FILE');
without it, ndst calibrate runs first. HZ, CPUs and the preemption model of
the emulated kernel come from its host section. The calibration never sees a
one-by-one delete nor a batched delete of more than 300 devices: those are
what the emulated kernel predicts. Needs root.

With --netns it predicts namespace teardown instead: N = 10, 100, 1000
namespaces with lo up, without and with a veth pair into predict's own
namespace, deleted all at once and one at a time, each cell's returned, gone
and done times on both kernels (the calibration measured 40 and 200
namespaces deleted all at once, without veth).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && netnsMode {
				return ndst.Usagef("predict --netns takes no value (got %q); the namespace predict works in is named with --predict-netns", args[0])
			}
			return exactArgs(0, "no arguments")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := intList("--count", counts)
			if err != nil {
				return err
			}
			tmpl, err := ndst.ParseTemplate(g.template)
			if err != nil {
				return err
			}
			if netnsMode {
				if fromGuest != "" {
					return ndst.Usagef("--netns with --from-guest: guest transcripts record device deletes only; run predict --netns in the guest")
				}
				if !cmd.Flags().Changed("count") {
					ns = []int{10, 100, 1000}
				}
				if !cmd.Flags().Changed("runs") {
					runs = 3
				}
				for _, n := range ns {
					if n > maxPredictNetns {
						return ndst.Usagef("--count %d: want 1..%d namespaces", n, maxPredictNetns)
					}
				}
			}
			if err := addrs.Normalize(); err != nil {
				return err
			}
			if workloads && (netnsMode || fromGuest != "" || !addrs.IsZero()) {
				return ndst.Usagef("--workloads runs every workload cell of its own; it does not go with --netns, --from-guest or --addr4/--addr6")
			}
			if len(only) > 0 && !workloads {
				return ndst.Usagef("--only chooses among --workloads' cells")
			}
			if !addrs.IsZero() && (netnsMode || fromGuest != "") {
				return ndst.Usagef("--addr4, --addr6, --ipv6-forwarding and --up set up the devices of the device predict, not with --netns or --from-guest")
			}
			s := &bench.PredictSpec{Counts: ns, Runs: runs, SimRuns: simRuns, Seed: g.seed, Template: tmpl, Attribute: !noAttribute, Addrs: addrs}
			if measuredIn != "" && fromGuest == "" {
				return ndst.Usagef("--measured-in goes with --from-guest (whose calibration predicts its measurements)")
			}
			if fromGuest != "" {
				return g.predictFromGuest(s, fromGuest, measuredIn)
			}
			s.Netlink = g.nlOptions()
			s.Netlink.Netns = netns
			if netns == "" {
				s.Netlink.Netns = fmt.Sprintf("ndst-predict-%d", os.Getpid())
			}
			if saveCosts != "" {
				if err := safefile.CheckOutput(saveCosts); err != nil {
					return ndst.Usagef("--save-costs %s: %v", saveCosts, err)
				}
			}
			ctx, cancel := signalContext()
			defer cancel()
			if g.costs != "" {
				if s.Costs, err = costs.Load(g.costs); err != nil {
					return ndst.Usagef("%v", err)
				}
				if err := s.Check(); err != nil {
					return err
				}
				if drift := calibrate.KnobDrift(s.Costs.Host); len(drift) > 0 {
					g.note("the kernel's knobs changed since %s was calibrated (%s): its emulated host runs with the knobs it recorded; calibrate again to predict the kernel as it is now", g.costs, strings.Join(drift, "; "))
				}
				if note := calibrate.HostKnobNote(s.Costs); note != "" {
					g.note("%s", note)
				}
			} else {
				s.Costs = &costs.Table{Host: &costs.Host{HZ: 1, CPUs: 1, Profile: netdev.DefaultProfile}} // placeholder to check the rest
				if err := s.Check(); err != nil {
					return err
				}
				fmt.Fprintln(g.stderr, "ndst: no --costs given; calibrating this host first (ndst calibrate)")
				p := g.startProgress("predict: calibrating this host")
				rep, err := calibrate.Run(ctx, calibrate.Options{Kind: g.kind, KindExplicit: g.kindExplicit,
					Notef:    g.note,
					Progress: g.progressLines(p, "predict: calibrating: ")})
				p.stop()
				if err != nil {
					if ctx.Err() != nil {
						return errors.New("calibration interrupted; nothing was run")
					}
					return fmt.Errorf("calibrate: %w", err)
				}
				s.Costs = rep.Table
				if saveCosts != "" {
					if err := calibrate.Save(rep.Table, saveCosts); err != nil {
						return err
					}
				}
			}
			if netnsMode {
				return g.predictNetns(ctx, s)
			}
			if workloads {
				return g.predictWorkloads(ctx, s, only, cmd.Flags().Changed("count"))
			}
			prog := g.startProgress("predict: measuring the real kernel and running the emulated one")
			s.Progress = g.progressLines(prog, "predict: ")
			s.Step = prog.set
			p, err := bench.Predict(ctx, s)
			prog.stop()
			if err != nil {
				if ctx.Err() != nil {
					return errors.New("predict interrupted; the throwaway namespace was removed")
				}
				return err
			}
			if g.json {
				return writeJSONIndent(g.stdout, p)
			}
			return p.WriteTable(g.stdout)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&counts, "count", []string{"100", "1000", "4000"}, "numbers of devices N (list); with --netns, of namespaces (default 10,100,1000)")
	f.IntVar(&runs, "runs", 1, "real-kernel runs per N and mode (the mean of their middle half is shown, their mean for three or fewer; with --netns, the median, default 3)")
	f.BoolVar(&netnsMode, "netns", false, "predict namespace teardown instead: N namespaces with lo up, without and with a veth pair, deleted all at once and one at a time (the calibration must have its namespace costs)")
	f.IntVar(&simRuns, "sim-runs", calibrate.ClosurePhases, "emulated runs per N and mode, at evenly spaced start phases in the tick, seeds --seed.. (the mean of their middle half is shown, as calibrate closes with; with --netns and --workloads, seeds only and the median)")
	f.BoolVar(&workloads, "workloads", false, "predict the workload cells instead: 100 devices up with an IPv6 address (with and without forwarding) deleted one by one and at once, 100 macvlans and VLANs (where the kernel has them) deleted one by one, in a stream, at once and with their lower device, 100 pods deleted with and without CNI DEL, unshare 1000 by 8 workers with lo up and a veth pair, and churn of 50 pods a second for 20 s (the calibration must have its workload costs)")
	f.StringSliceVar(&only, "only", nil, "with --workloads: only these of addrs, children, cni, unshare, churn")
	addAddrFlags(cmd, &addrs)
	f.StringVar(&netns, "predict-netns", "", "throwaway network namespace (default ndst-predict-PID; must not exist)")
	f.StringVar(&saveCosts, "save-costs", "", "when calibrating first, also write the cost table to FILE")
	f.BoolVar(&noAttribute, "no-attribute", false, "do not sample the real deletes' kernel stacks (no real phases beside the emulated ones)")
	f.StringVar(&fromGuest, "from-guest", "", "compare with the measurements and calibration in a scripts/vm-run.sh transcript (see scripts/vm-predict.sh) instead of this host")
	f.StringVar(&measuredIn, "measured-in", "", "with --from-guest: compare with the measurements of this second transcript (the same kernel, CPUs and preemption, booted with a parameter added: scripts/vm-predict.sh --param), predicted with the first one's calibration")
	return cmd
}
