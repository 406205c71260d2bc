package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/safefile"
	"github.com/ndst-project/ndst/waitrefs"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

// benchOptions are the flags of `ndst bench`. The list flags shadow the
// global single-valued flags of the same names (--strategy, --profile, --hz,
// --cpus, --preempt, --backend) for this subcommand.
type benchOptions struct {
	backends, profiles, strategies, hz, cpus, preempts, batches, counts []string
	// Namespace cells.
	netnsCounts, netnsLinks []string
	netnsVeth               []bool
	netnsLoUp               bool
	// Workload cells (bench/workloadcells.go).
	workload bench.Cell
	addrs    ndst.Addrs
	forDur   time.Duration

	runs    int
	warmup  int
	jobs    int
	yes     bool
	netns   string
	jsonOut string
	csvOut  string
	mdOut   string
	plot    string
	phases  bool
}

func newBenchCmd(g *globalOptions) *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a matrix of strategies, profiles, HZ, CPUs, preemption, batching and N; report it like hyperfine",
		Long: `Run every combination of the list flags, --runs times each (seeds --seed ..
--seed+runs-1). One run adds N devices to an empty namespace and deletes them
all; the table shows the time of the delete (virtual time for the emulated
kernel, wall time for the real one): min, median, mean ± sd, max, per device,
and relative to the fastest cell of the same backend and N, with the grace periods,
sleeps, wakeups and CPU busy time behind it.

Emulated cells run in parallel (--jobs, default all cores) with exactly the
results of a serial run. Netlink cells run afterwards, one at a time, in a
throwaway namespace that is removed at the end.

Examples:
  ndst bench                                   # all 7 strategies, N=1000, 5 runs
  ndst bench --profile 6.18 --cpus 2 --hz 250 --batch batched,one-by-one --count 100,1000,10000
  ndst bench --strategy tick,barrier,backoff --count 100,1000,10000 --plot scaling.png
  ndst bench --profile 2.6.31,2.6.32 --phases   # with where each cell's time went; expedited is n/a on 2.6.31
  ndst bench --backend netlink --batch batched,one-by-one --count 100,1000 --runs 3

With --netns-count the cells are network namespaces instead: each run adds N
namespaces (lo, --netns-links links, a veth pair with --netns-veth true) and
deletes them, all at once (--batch batched) or one at a time, each waited for
(--batch one-by-one); the time is when the kernel's cleanup was done, with
when the delete returned and when the devices were gone beside it:
  ndst bench --profile 6.18 --hz 250 --cpus 2 --strategy backoff --netns-count 10,100,1000 \
      --netns-veth false,true --batch batched,one-by-one --runs 1`,
		Args: exactArgs(0, "no arguments; the matrix is given by flags"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(g, o, cmd) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.backends, "backend", []string{"sim"}, "backends: sim, netlink (list)")
	f.StringSliceVar(&o.profiles, "profile", []string{netdev.DefaultProfile}, "kernel lines (list): "+strings.Join(netdev.ProfileNames, ", "))
	f.StringSliceVar(&o.strategies, "strategy", waitrefs.Names, "wait strategies (list); default is each line's own wait loop")
	f.StringSliceVar(&o.hz, "hz", []string{"1000"}, "timer frequencies (list)")
	f.StringSliceVar(&o.cpus, "cpus", []string{"1"}, "CPU counts (list)")
	f.StringSliceVar(&o.preempts, "preempt", []string{"none"}, "preemption models: none, voluntary, full, rt (PREEMPT_RT, lines 5.10 on), lazy (PREEMPT_LAZY, lines 6.18 on) (list)")
	f.StringSliceVar(&o.batches, "batch", []string{"batched"}, "delete modes: batched (the profile's own batching), one-by-one (list)")
	f.StringSliceVar(&o.counts, "count", []string{"1000"}, "numbers of devices N (list)")
	f.IntVar(&o.runs, "runs", 5, "runs per cell, with seeds --seed, --seed+1, ...")
	f.IntVar(&o.warmup, "warmup", 0, "real-kernel cells: runs before the measured ones, not measured (as hyperfine's --warmup)")
	f.IntVar(&o.jobs, "jobs", 0, "emulated cells run at once (0: one per core)")
	f.BoolVar(&o.yes, "yes", false, fmt.Sprintf("run a matrix of more than %d cells, or one whose runs at once may not fit in memory", bench.MaxCellsWithoutConfirm))
	f.StringVar(&o.jsonOut, "export-json", "", "write the results as JSON to this file ('-' for stdout)")
	f.StringVar(&o.csvOut, "export-csv", "", "write the results as CSV to this file ('-' for stdout)")
	f.StringVar(&o.mdOut, "export-markdown", "", "write the results as a Markdown table to this file ('-' for stdout)")
	f.BoolVar(&o.phases, "phases", false, "under the table, where each cell's time went: the deleting task's largest phases (JSON and CSV always have them all)")
	f.StringVar(&o.plot, "plot", "", "draw time per device versus N for each strategy to FILE.svg or FILE.png")
	f.StringSliceVar(&o.netnsCounts, "netns-count", nil, "namespace cells: numbers of namespaces N (list; replaces --count)")
	f.StringSliceVar(&o.netnsLinks, "netns-links", nil, "namespace cells: links in each namespace besides lo (list; default 0)")
	f.BoolSliceVar(&o.netnsVeth, "netns-veth", nil, "namespace cells: without and/or with a veth pair per namespace (list of false, true)")
	f.BoolVar(&o.netnsLoUp, "netns-lo-up", false, "namespace cells: set lo up in every namespace")
	f.StringVar(&o.netns, "bench-netns", "", "throwaway network namespace of netlink cells (default ndst-bench-PID; must not exist)")
	addBenchWorkloadFlags(cmd, o)
	return cmd
}

// spec turns the flags into a bench.Spec; it changes nothing.
func (o *benchOptions) spec(g *globalOptions) (*bench.Spec, error) {
	s := &bench.Spec{
		Backends: o.backends, Profiles: o.profiles, Strategies: o.strategies, Preempts: o.preempts,
		Batches: o.batches, Runs: o.runs, Warmup: o.warmup, Seed: g.seed, RCU: g.rcu, NameAlloc: g.nameAlloc,
		Watchdog: g.emuWatchdog(), Workers: o.jobs, Confirmed: o.yes,
		Params: mergeParamWords(g.hostParams, g.params),
	}
	var err error
	if s.HZ, err = intList("--hz", o.hz); err != nil {
		return nil, err
	}
	if s.CPUs, err = intList("--cpus", o.cpus); err != nil {
		return nil, err
	}
	if s.Counts, err = intList("--count", o.counts); err != nil {
		return nil, err
	}
	if s.Template, err = ndst.ParseTemplate(g.template); err != nil {
		return nil, err
	}
	if s.NetnsCounts, err = intList("--netns-count", o.netnsCounts); err != nil {
		return nil, err
	}
	if s.NetnsLinks, err = intList("--netns-links", o.netnsLinks); err != nil {
		return nil, err
	}
	s.NetnsVeth, s.NetnsLoUp = o.netnsVeth, o.netnsLoUp
	if err := o.workloadSpec(s, g); err != nil {
		return nil, err
	}
	if g.costs != "" {
		if s.Costs, err = costs.Load(g.costs); err != nil {
			return nil, ndst.Usagef("%v", err)
		}
	}
	s.Netlink = g.nlOptions()
	s.Netlink.Netns = o.netns
	if s.Netlink.Netns == "" {
		s.Netlink.Netns = fmt.Sprintf("ndst-bench-%d", os.Getpid())
	}
	s.Netlink.Notef = nil // notes go into the records' warnings
	return s, nil
}

// intList parses a list of decimal integers strictly.
func intList(flag string, vs []string) ([]int, error) {
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || strings.TrimSpace(v) != v || strings.HasPrefix(v, "+") {
			return nil, ndst.Usagef("%s: %q is not a whole number", flag, v)
		}
		out = append(out, n)
	}
	return out, nil
}

// exportPaths are the files the bench will write, checked before it runs.
func (o *benchOptions) exportPaths() []struct{ flag, path string } {
	return []struct{ flag, path string }{
		{"--export-json", o.jsonOut}, {"--export-csv", o.csvOut},
		{"--export-markdown", o.mdOut}, {"--plot", o.plot},
	}
}

// checkOutputs makes sure every output can be written, before anything runs.
func (o *benchOptions) checkOutputs(json bool) error {
	seen := map[string]string{}
	stdout := 0
	for _, e := range o.exportPaths() {
		if e.path == "" {
			continue
		}
		if e.path == "-" {
			if e.flag == "--plot" {
				return ndst.Usagef("--plot needs a file name ending in .svg or .png, not '-'")
			}
			stdout++
			continue
		}
		if prev, ok := seen[e.path]; ok {
			return ndst.Usagef("%s and %s both write %s", prev, e.flag, e.path)
		}
		seen[e.path] = e.flag
		if e.flag == "--plot" {
			if err := bench.CheckPlotPath(e.path); err != nil {
				return ndst.Usagef("--plot: %v", err)
			}
		}
		if err := checkWritable(e.path); err != nil {
			return ndst.Usagef("%s: %v", e.flag, err)
		}
	}
	if stdout > 1 {
		return ndst.Usagef("only one export may go to stdout ('-')")
	}
	if f := o.stdoutExport(); json && f != "" && f != "--export-json" {
		return ndst.Usagef("--json prints the report as JSON on stdout, and %s - would print there too; give %s a file", f, f)
	}
	return nil
}

// stdoutExport is the flag of the export that goes to stdout ('-'), if any.
func (o *benchOptions) stdoutExport() string {
	for _, e := range o.exportPaths() {
		if e.path == "-" && e.flag != "--plot" {
			return e.flag
		}
	}
	return ""
}

// checkWritable reports whether path can be created or overwritten, without
// changing an existing file.
func checkWritable(path string) error {
	return safefile.CheckOutput(path)
}

func runBench(g *globalOptions, o *benchOptions, cmd *cobra.Command) error {
	machineNote, err := g.benchMachine(cmd, o)
	if err != nil {
		return err
	}
	s, err := o.spec(g)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	if err := s.Check(ctx); err != nil {
		return err
	}
	if err := o.checkOutputs(g.json); err != nil {
		return err
	}
	p := g.startProgress(fmt.Sprintf("bench: %d cells × %d runs", s.NumCells(), s.Runs))
	p.set(0, s.NumCells()*s.Runs)
	rep, err := bench.Run(ctx, s, p.set)
	p.stop()
	if err != nil {
		return err
	}
	rep.ShowPhases = o.phases
	if machineNote != "" {
		rep.Notes = append([]string{machineNote}, rep.Notes...)
	}
	// An export to stdout ('-') is the command's output; otherwise the
	// table, or the JSON report with --json.
	toStdout := o.stdoutExport() != ""
	switch {
	case toStdout:
	case g.json:
		err = rep.WriteJSON(g.stdout)
	default:
		err = rep.WriteTable(g.stdout)
	}
	if err != nil {
		return err
	}
	// "wrote FILE" lines go with the table, or to stderr when stdout
	// carries JSON or an export.
	wrote := func(path, what string) {
		if g.json || toStdout {
			fmt.Fprintf(g.stderr, "ndst: wrote %s (%s)\n", path, what)
		} else {
			fmt.Fprintf(g.stdout, "wrote %s (%s)\n", path, what)
		}
	}
	for _, e := range []struct {
		path, what string
		write      func(io.Writer) error
	}{{o.jsonOut, "JSON", rep.WriteJSON}, {o.csvOut, "CSV", rep.WriteCSV}, {o.mdOut, "Markdown", rep.WriteMarkdown}} {
		if err := writeOutput(g.stdout, e.path, e.write); err != nil {
			return err
		}
		if e.path != "" && e.path != "-" {
			wrote(e.path, e.what)
		}
	}
	if o.plot != "" {
		if err := rep.SavePlot(o.plot); err != nil {
			return err
		}
		wrote(o.plot, "plot")
	}
	for _, r := range rep.Results {
		if r.Errors > 0 {
			return &failedError{fmt.Errorf("%d cell(s) had failed runs", countFailed(rep))}
		}
	}
	return nil
}

func countFailed(rep *bench.Report) int {
	n := 0
	for _, r := range rep.Results {
		if r.Errors > 0 {
			n++
		}
	}
	return n
}

// writeOutput writes one export to path ("-": stdout, "": nowhere).
func writeOutput(stdout io.Writer, path string, write func(io.Writer) error) error {
	switch path {
	case "":
		return nil
	case "-":
		return write(stdout)
	}
	return bench.WriteFile(path, write)
}
