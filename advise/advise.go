// Package advise answers the question users ask once teardown is slow:
// "is there any option to make this faster?". For a workload as ndst runs
// it (N devices deleted in one batch or one by one; N namespaces, with or
// without a veth pair, deleted all at once or one at a time) on one emulated
// machine (a kernel line, HZ, CPUs, preemption model, RCU, cost table and
// kernel knobs), it emulates every lever the line offers and ranks them by
// the time they save:
//   - runtime knobs (sysfs and /proc/sys files root can write now);
//   - boot parameters;
//   - build options (HZ, the preemption model, RCU's callback offloading);
//   - each later kernel line;
//   - changes to the workload itself (one batch instead of one by one).
//
// Each lever says how to apply it (the command or the boot parameter),
// whether it takes effect at run time, at boot or only in another build,
// what it costs elsewhere, the predicted time before and after, and why,
// from the two runs' own phases and counters.
//
// Every emulation is a cell of package bench (bench.Spec.CellList): advise
// is a client of the runs bench makes, never a runner of its own. The
// runtime levers carry what a measurement on the real kernel needs (the
// file, the value to write, the value now): a Verifier registered from its
// own file measures them (verify.go).
//
// Invariants: the same Options give the same advice (the emulated kernel is
// deterministic); a lever that the line or machine cannot take is listed as
// not applicable with the reason, never silently dropped.
package advise

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/netdev"
)

// Workload is what the user's machine does.
type Workload struct {
	// Devices is the number of dummy devices created and deleted; zero
	// for a namespace workload.
	Devices int `json:"devices,omitempty"`
	// Namespaces is the number of network namespaces (each with lo, and
	// with Veth a veth pair into the initial namespace; LoUp sets lo up).
	Namespaces int  `json:"namespaces,omitempty"`
	Veth       bool `json:"veth,omitempty"`
	LoUp       bool `json:"lo_up,omitempty"`
	// OneByOne deletes the devices one by one, or the namespaces one at a
	// time each waited for; otherwise in one batch, or all at once.
	OneByOne bool `json:"one_by_one"`
	// The workloads of bench's workload cells (bench/workloadcells.go):
	// Addrs sets the devices up with addresses; Child makes them VLANs or
	// macvlans on one device, deleted as ChildDel says (one-by-one,
	// batched, stream, parent); Unshare makes the namespaces by Parallel
	// workers that unshare and exit; Rate and ForNS are a pod churn (its
	// time is that between pods at the rate the node sustains); CNI
	// deletes a namespace workload's pods as a CNI plugin's DEL does.
	Addrs    *ndst.Addrs `json:"addrs,omitempty"`
	Child    string      `json:"child,omitempty"`
	ChildDel string      `json:"child_delete,omitempty"`
	Unshare  bool        `json:"unshare,omitempty"`
	Parallel int         `json:"parallel,omitempty"`
	Rate     float64     `json:"churn_rate,omitempty"`
	ForNS    int64       `json:"churn_for_ns,omitempty"`
	CNI      bool        `json:"cni,omitempty"`
}

// N is the workload's count.
func (w Workload) N() int { return max(w.Devices, w.Namespaces, 1) }

func (w Workload) String() string {
	if s := w.workloadString(); s != "" {
		return s
	}
	if w.Namespaces > 0 {
		what := "with lo"
		if w.Veth {
			what = "with lo and a veth pair"
		}
		if w.LoUp {
			what += " (lo up)"
		}
		style := "all at once"
		if w.OneByOne {
			style = "one at a time, each waited for"
		}
		return fmt.Sprintf("%d namespaces %s deleted %s", w.Namespaces, what, style)
	}
	style := "in one batch"
	if w.OneByOne {
		style = "one by one"
	}
	return fmt.Sprintf("%d devices deleted %s", w.Devices, style)
}

// Machine is the emulated machine the advice is for.
type Machine struct {
	Profile  string `json:"profile"`
	Strategy string `json:"strategy,omitempty"` // "" the line's own
	HZ       int    `json:"hz"`
	CPUs     int    `json:"cpus"`
	Preempt  string `json:"preempt"`
	RCU      string `json:"rcu,omitempty"`
	// Params are the machine's knobs as they are (a host's, --param), as
	// NAME=VALUE words.
	Params []string     `json:"params,omitempty"`
	Costs  *costs.Table `json:"-"`
	// Settings say where each setting came from (--machine host), for the
	// output only.
	Settings []Setting `json:"settings,omitempty"`
}

// Setting is one machine setting and where it came from.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	From  string `json:"from"`
}

// Options are one advice request.
type Options struct {
	Workload Workload
	Machine  Machine
	// Runs per emulation (seeds Seed..Seed+Runs-1); default 1.
	Runs int
	Seed uint64
	// Workers is the number of emulations run at once (0: GOMAXPROCS).
	Workers int
}

// Kinds of lever, in the order the output explains them.
const (
	KindRuntime  = "runtime"
	KindBoot     = "boot"
	KindBuild    = "build"
	KindKernel   = "kernel"
	KindWorkload = "workload"
)

// Lever is one change and what the emulated kernel predicts of it.
type Lever struct {
	// Kind is runtime, boot, build, kernel or workload; Setting the change
	// as NAME=VALUE words (knobs), "line X" or what the workload does.
	Kind    string `json:"kind"`
	Setting string `json:"setting"`
	// Apply is the exact command or boot parameter that applies it.
	Apply string `json:"apply"`
	// RuntimeSettable says that Apply works on the running kernel (root
	// writes Path); Path, Value and Current are the file, the value to
	// write and the value now (what a measurement restores).
	RuntimeSettable bool   `json:"runtime_settable"`
	Path            string `json:"path,omitempty"`
	Value           string `json:"value,omitempty"`
	Current         string `json:"current,omitempty"`
	// Cost is what it costs elsewhere.
	Cost string `json:"cost"`
	// BeforeNS and AfterNS are the predicted times without and with it
	// (the workload's time: the deletes, or the namespaces' cleanup);
	// SavedNS their difference, Saved its share of BeforeNS.
	BeforeNS int64   `json:"predicted_before_ns"`
	AfterNS  int64   `json:"predicted_after_ns"`
	SavedNS  int64   `json:"saved_ns"`
	Saved    float64 `json:"saved_fraction"`
	// Result is the emulation's outcome with the lever (ok, livelock,
	// error); Reason says why the time changes, from the runs' phases and
	// counters.
	Result string `json:"result"`
	Reason string `json:"reason"`
	// NotApplicable says why the lever could not be emulated on this line
	// or machine.
	NotApplicable string `json:"not_applicable,omitempty"`
	// Measured is the real kernel's answer, when a Verifier measured it.
	Measured *Measurement `json:"measured,omitempty"`

	cell   bench.Cell
	record *bench.Record
}

// Advice is the outcome.
type Advice struct {
	Op       string   `json:"op"`
	Workload Workload `json:"workload"`
	Machine  Machine  `json:"machine"`
	// Baseline is the workload as it is: its predicted time and where it
	// goes.
	Baseline Baseline `json:"baseline"`
	// Levers are ranked by time saved, largest first; NoEffect changed the
	// time by less than Threshold; Slower made it slower; NotApplicable
	// could not be emulated.
	Levers        []Lever  `json:"levers"`
	NoEffect      []Lever  `json:"no_effect"`
	Slower        []Lever  `json:"slower"`
	NotApplicable []Lever  `json:"not_applicable"`
	Runs          int      `json:"runs"`
	Seed          uint64   `json:"seed"`
	Emulations    int      `json:"emulations"`
	Notes         []string `json:"notes,omitempty"`
	Result        string   `json:"result"`
	WallNS        int64    `json:"wall_ns"`
	// Verified says that a Verifier measured the runtime levers.
	Verified bool `json:"verified"`
}

// Baseline is the workload's predicted time as the machine is.
type Baseline struct {
	NS        int64    `json:"predicted_ns"`
	PerItemNS float64  `json:"per_item_ns"`
	Result    string   `json:"result"`
	Phases    []string `json:"phases"`
	Why       string   `json:"why"`
}

// Threshold is the share of the baseline below which a lever counts as
// having no effect.
const Threshold = 0.01

// Run emulates the workload as it is and with each lever, and ranks them.
func Run(ctx context.Context, o Options) (*Advice, error) {
	start := time.Now()
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Runs == 0 {
		o.Runs = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	base := o.baseCell()
	if err := o.checkMachine(ctx, base); err != nil {
		return nil, err
	}
	levers, na := candidates(o)
	cells := []bench.Cell{base}
	for i := range levers {
		cells = append(cells, levers[i].cell)
	}
	s := &bench.Spec{
		Backends: []string{"sim"}, Runs: o.Runs, Seed: o.Seed, Costs: o.Machine.Costs,
		CellList: cells, Workers: o.Workers, Confirmed: true,
		Profiles: []string{o.Machine.Profile}, HZ: []int{o.Machine.HZ}, CPUs: []int{o.Machine.CPUs},
		Preempts: []string{o.Machine.Preempt}, Strategies: []string{base.Strategy}, Counts: []int{o.Workload.N()},
	}
	if o.Workload.Namespaces > 0 && base.Workload == "" {
		s.NetnsCounts, s.NetnsVeth, s.NetnsLoUp = []int{o.Workload.Namespaces}, []bool{o.Workload.Veth}, o.Workload.LoUp
	}
	rep, err := bench.Run(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	a := &Advice{Op: "advise", Workload: o.Workload, Machine: o.Machine, Runs: o.Runs, Seed: o.Seed,
		Emulations: len(cells) * o.Runs, Result: ndst.ResultOK}
	b := &rep.Results[0]
	if b.NotApplicable != "" {
		return nil, ndst.Usagef("the machine cannot run the workload: %s", b.NotApplicable)
	}
	if b.OK == 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("the workload does not complete as it is (%s): the levers are compared with the time it ran before it stopped", resultOf(b)))
	}
	a.Baseline = baselineOf(b, o.Workload)
	if n := extrapolationNote(o.Machine.Costs, o.Workload); n != "" {
		a.Notes = append(a.Notes, n)
	}
	if o.Machine.Costs == nil {
		a.Notes = append(a.Notes, "the cost table is the built-in one of the 2009 machine (an 800 MHz ppc750): its CPU work per device is that machine's, not this host's; 'ndst calibrate -o FILE' measures this host and --costs FILE uses it")
	}
	for i := range levers {
		l := &levers[i]
		l.record = &rep.Results[i+1]
		l.evaluate(b, o.Workload)
		switch {
		case l.NotApplicable != "":
			a.NotApplicable = append(a.NotApplicable, *l)
		case l.Result == ndst.ResultOK && l.Saved >= Threshold:
			a.Levers = append(a.Levers, *l)
		case l.Result == ndst.ResultOK && l.Saved > -Threshold:
			a.NoEffect = append(a.NoEffect, *l)
		default:
			a.Slower = append(a.Slower, *l)
		}
	}
	a.NotApplicable = append(a.NotApplicable, na...)
	slices.SortStableFunc(a.Levers, func(x, y Lever) int { return cmpInt64(y.SavedNS, x.SavedNS) })
	slices.SortStableFunc(a.Slower, func(x, y Lever) int { return cmpInt64(y.SavedNS, x.SavedNS) })
	a.WallNS = int64(time.Since(start))
	return a, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (o *Options) check() error {
	w := o.Workload
	switch {
	case w.Devices > 0 && w.Namespaces > 0:
		return ndst.Usagef("advise: give devices or namespaces, not both")
	case w.Devices == 0 && w.Namespaces == 0 && w.Rate == 0:
		return ndst.Usagef("advise: the workload has no devices and no namespaces")
	case w.Devices < 0 || w.Devices > ndst.MaxCount:
		return ndst.Usagef("--count: %d is out of range; want 1..%d", w.Devices, ndst.MaxCount)
	case w.Namespaces < 0 || w.Namespaces > ndst.MaxNetnsCount:
		return ndst.Usagef("--netns-count: %d is out of range; want 1..%d", w.Namespaces, ndst.MaxNetnsCount)
	case o.Runs < 0 || o.Runs > 100:
		return ndst.Usagef("--runs: %d is out of range; want 1..100", o.Runs)
	}
	if _, err := netdev.LookupProfile(o.Machine.Profile); err != nil {
		return ndst.Usagef("%v", err)
	}
	return w.checkWorkload()
}

// baseCell is the workload on the machine as it is.
func (o *Options) baseCell() bench.Cell {
	m, w := o.Machine, o.Workload
	c := bench.Cell{Backend: "sim", Profile: m.Profile, Strategy: bench.DefaultStrategy, HZ: m.HZ, CPUs: m.CPUs,
		Preempt: m.Preempt, Batch: "batched", Count: w.N(), RCU: m.RCU}
	if m.Strategy != "" {
		c.Strategy = m.Strategy
	}
	if w.OneByOne {
		c.Batch = "one-by-one"
	}
	if w.Namespaces > 0 {
		c.Namespaces, c.Veth, c.LoUp = w.Namespaces, w.Veth, w.LoUp
	}
	w.cell(&c)
	c.Params = joinParams(m.Params)
	return c
}

// checkMachine opens the workload's own emulated kernel once, so that a
// machine it refuses (a knob the line lacks, a value out of range) is the
// command line's error before anything runs.
func (o *Options) checkMachine(ctx context.Context, base bench.Cell) error {
	m := o.Machine
	strategy := base.Strategy
	if strategy == bench.DefaultStrategy {
		strategy = ""
	}
	b, err := emu.Open(ctx, emu.Config{Profile: m.Profile, Strategy: strategy, HZ: m.HZ, CPUs: m.CPUs, Preempt: m.Preempt,
		RCU: m.RCU, Costs: m.Costs, Params: m.Params, Ephemeral: true})
	if err != nil {
		return err
	}
	return b.Close()
}

func resultOf(r *bench.Record) string {
	switch {
	case r.OK == r.Runs:
		return ndst.ResultOK
	case r.Livelocks > 0:
		return ndst.ResultLivelock
	}
	return ndst.ResultError
}

// extrapolationNote says, for a batched delete of more plain devices than
// a calibrated table's largest fitted batch, how far the table's own check
// (a batch beyond the fitted sizes, timed on its host) came out in the
// emulated kernel: the error a prediction of such a batch carries there.
func extrapolationNote(t *costs.Table, w Workload) string {
	c, ok := calibrate.CheckOf(t)
	if !ok || w.Devices <= c.FittedDevices || w.OneByOne || w.Namespaces > 0 || w.Addrs != nil || w.Child != "" {
		return ""
	}
	if c.CheckDevices == 0 {
		return fmt.Sprintf("the cost table's per-device costs are fitted to batched deletes of up to %d devices, and this batch of %d extrapolates them; the table has no check of a larger batch (calibrate writes one from its --check)",
			c.FittedDevices, w.Devices)
	}
	return fmt.Sprintf("the cost table's per-device costs are fitted to batched deletes of up to %d devices; its check, a batched delete of %d devices timed on its host, came out %+.1f%% in the emulated kernel: a prediction of this batch of %d carries about that error",
		c.FittedDevices, c.CheckDevices, 100*c.CheckError, w.Devices)
}
