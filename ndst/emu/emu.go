// Package emu is the driver's embedded backend: every command builds a fresh
// emulated kernel (sim engine, RCU model, netdev registry, wait strategy),
// restores the registry from the persisted state without spending virtual
// time, runs the command as the task that wrote to /proc/sys/net/ndst/*, and
// reports its virtual time.
//
// Invariants:
//   - Same Config, same state and same command give the same virtual
//     timings and counters; wall-clock time is measured only around the run.
//   - The state is written only after a command completed; a livelock, an
//     interruption or any error leaves the state file byte for byte as it was.
//   - The state file is locked from Open to Close, so concurrent ndst
//     processes never interleave their read-modify-write.
package emu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/devtable"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	ph "github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/safefile"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/statefile"
	"github.com/ndst-project/ndst/waitrefs"
)

// Config describes the emulated machine and kernel.
type Config struct {
	Profile  string // a kernel line (netdev.ProfileNames); "" is netdev.DefaultProfile
	Strategy string // empty: the profile's default
	HZ       int
	CPUs     int
	Preempt  string
	RCU      string // "tree" (default) or "tiny"
	Seed     uint64
	// StartPhase, when set, is where in the tick period every command
	// starts, as a fraction of a jiffy in [0, 1): the command's task waits
	// for the next instant that far into a jiffy instead of a seeded
	// random pause. Runs at evenly spaced phases (PhaseSweep) stand for a
	// real command, which starts wherever in the tick it happens to.
	StartPhase *float64
	Costs      *costs.Table // nil: costs.Default()
	// CostsPath is where Costs was read from, to name it in results.
	CostsPath string
	// Watchdog is the soft-lockup threshold in virtual time (0: the
	// profile's, 60 s for 2.6.3x and 20 s for modern lines;
	// negative: no detector).
	Watchdog time.Duration
	// Jitter is the relative spread of charged costs (negative: none).
	Jitter float64
	// NameAlloc selects the %d allocator: "bitmap" (default) or "scan"
	// (the kernel's O(n) __dev_alloc_name).
	NameAlloc string
	// Netns is the emulated network namespace that Add, Del and List act
	// in; "" is the initial one (see netns.go).
	Netns string

	// StatePath is the state file; empty with Ephemeral.
	StatePath string
	// Ephemeral keeps the registry in memory only (benchmarks, tests).
	Ephemeral bool
	// NoPhases turns the per-phase attribution off: results carry no
	// phases. Only for measuring the attribution's own cost.
	NoPhases bool
	// EveryTick runs every tick of a spinning wait loop as an event instead
	// of fast-forwarding over the steady ones (sim.Config.EveryTick): the
	// same results, slower; for the tests that show they are the same.
	EveryTick bool
	// WaitLock bounds the wait for another ndst holding the state file.
	WaitLock time.Duration
	// Holds are the --hold rules: subsystems that keep their reference
	// on some or all devices (netdev/hold.go).
	Holds []netdev.Hold
	// GiveUp is how long the wait loop waits for a device's references
	// before the run stops as stuck (0: 60 s).
	GiveUp time.Duration
	// RefTracker lists the holders in the wait loop's warning, as kernels
	// built with CONFIG_NET_DEV_REFCNT_TRACKER do (lines 6.1 on).
	RefTracker bool
	// TracePath, when set, receives the run as a Chrome trace-event JSON
	// file (Perfetto, chrome://tracing).
	TracePath string
	// Printk, if set, receives every kernel message as it is logged.
	Printk func(at time.Duration, msg string)
	// Params are the kernel's knobs as NAME=VALUE (--param; package
	// knob), ParamsFrom says where they came from ("" is --param).
	// HostParams are a host's knobs (--machine host), from HostParamsFrom;
	// Params win over them.
	Params         []string
	ParamsFrom     string
	HostParams     []string
	HostParamsFrom string
	// MachineNote says what of the machine came from where (--machine
	// host); MachineNotes are remarks about it. Both go to the results.
	MachineNote  string
	MachineNotes []string
	// Stalls is the machine's stall process (sim.Stalls): the stall
	// probe's figures of a calibrated machine (calibrate.HostModel); the
	// zero value has none.
	Stalls sim.Stalls
	// WakeLatency is the machine's wake-up latency of an idle CPU woken
	// from another (sim.Config.WakeLatency): a calibrated machine's
	// measured median (calibrate.HostModel); zero is none.
	WakeLatency sim.Time
	// TickLateness is how late the machine's ticks come
	// (sim.Config.TickLateness): a calibrated machine's measured timer
	// lateness (calibrate.HostModel); nil is on time.
	TickLateness []sim.Time
	// RCUOtherWork is the rate of the RCU callbacks the machine's other
	// work queues, a CPU a second (rcu.Config.OtherWork): a calibrated
	// machine's (calibrate.HostModel); zero is none.
	RCUOtherWork float64
	// MaxEvents bounds the events one command's run may execute (0:
	// DefaultMaxEvents), so that no setting can make a run take hours of
	// CPU (see BudgetError).
	MaxEvents int64
}

// DefaultMaxEvents is the default Config.MaxEvents: about 3 to 8 minutes of
// CPU at the 0.7 to 1.5 µs per event this project's 2-core machine runs
// (41 million events of a stuck delete under full preemption with the
// expedited strategy took 62 s at a load average of 5; 1.2 million events
// of a 600 s pod churn take 1.4 s). The ticks a spinning wait loop
// fast-forwards over (sim/steady.go) count as the events they stand for,
// at a few ns each: 2.6.32's expedited loop spinning a whole day with the
// detector off, 173 million events, takes 0.7 s, and the budget stops such
// a spin at the same event it always did. Every test of ndst/emu, bench,
// calibrate, netdev and cmd/ndst ran with a budget of 30 million.
const DefaultMaxEvents = 300_000_000

// BudgetError stops a run that executed Config.MaxEvents events: a wait
// for a reference that never comes, given a --give-up of hours, or a
// livelock with the soft-lockup detector off (--watchdog 0), which the
// emulated kernel would otherwise follow for as long as the virtual
// duration allows. The point it stops at depends only on the events, so
// the same inputs stop at the same virtual time.
type BudgetError struct {
	Events int64
	At     time.Duration // virtual time when it stopped
	GiveUp time.Duration // the wait loop's bound
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the emulation stopped after %d events, %v of virtual time, before its run ended (it would take minutes of CPU more): "+
		"a wait the --give-up of %v allows, or a livelock the soft-lockup detector does not end (--watchdog 0); lower --give-up, or leave the detector on",
		e.Events, e.At.Round(time.Millisecond), e.GiveUp)
}

// DefaultJitter is the spread of charged costs unless configured.
const DefaultJitter = 0.05

// resolved is a validated Config.
type resolved struct {
	cfg      Config
	profile  netdev.Profile
	strategy netdev.Waiter
	preempt  sim.Preempt
	rcu      netdev.RCUChoice
	// autoWhy says how --profile auto chose the line ("" otherwise), and
	// preemptWhy how the line chose the preemption model when none was
	// given ("" for none).
	autoWhy, preemptWhy string
	names               netdev.NameAlloc
	costs               *costs.Table
	// knobs are the line's knobs on this machine (netdev/knobs.go).
	knobs *netdev.Knobs
}

func resolve(c Config) (*resolved, error) {
	if c.TracePath != "" {
		if err := safefile.CheckOutput(c.TracePath); err != nil {
			return nil, ndst.Usagef("--trace: %v", err)
		}
	}
	if c.Profile == "" {
		c.Profile = netdev.DefaultProfile
	}
	var autoWhy string
	if c.Profile == "auto" {
		line, why, err := AutoProfile(c.Costs)
		if err != nil {
			return nil, ndst.Usagef("%v", err)
		}
		c.Profile, autoWhy = line, why
	}
	p, err := netdev.LookupProfile(c.Profile)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	if c.Netns != "" {
		if err := ndst.ValidateNetnsName(c.Netns); err != nil {
			return nil, err
		}
	}
	if c.Strategy == "" {
		c.Strategy = p.DefaultStrategy
	}
	w, err := waitrefs.Lookup(c.Strategy)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	var preemptWhy string
	if c.Preempt == "" {
		c.Preempt, preemptWhy = p.DefaultPreempt()
	}
	from := c.ParamsFrom
	if from == "" {
		from = "--param"
	}
	assigns, froms, err := knobAssignments(c.HostParams, c.HostParamsFrom, c.Params, from)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	booted, err := sim.ParsePreempt(c.Preempt)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	c.HZ, c.Preempt = machineKnobs(assigns, c.HZ, c.Preempt)
	pre, err := sim.ParsePreempt(c.Preempt)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	if c.HZ < 1 || c.HZ > 10000 {
		return nil, ndst.Usagef("--hz must be between 1 and 10000, got %d", c.HZ)
	}
	if c.CPUs < 1 || c.CPUs > 4096 {
		return nil, ndst.Usagef("--cpus must be between 1 and 4096, got %d", c.CPUs)
	}
	choice, err := p.Choose(c.RCU, c.CPUs, pre)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	c.RCU = choice.Name
	kn, err := p.ResolveKnobs(c.HZ, c.CPUs, booted, choice.Name, assigns, froms)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	if c.Strategy == "expedited" && choice.Name != "tiny" && p.RCUConfig(choice, c.HZ, c.CPUs, pre, nil).Expedited == rcu.ExpNone {
		return nil, ndst.Usagef("--strategy expedited calls synchronize_rcu_expedited(), which kernel %s does not have (it first shipped in 2.6.32, 03b042bf1dc1): use --profile 2.6.32 or later", p.Name)
	}
	names := netdev.NameBitmap
	switch c.NameAlloc {
	case "", "bitmap":
		c.NameAlloc = "bitmap"
	case "scan":
		names = netdev.NameScan
	default:
		return nil, ndst.Usagef("unknown name allocator %q (want bitmap or scan)", c.NameAlloc)
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultJitter
	} else if c.Jitter < 0 {
		c.Jitter = 0
	}
	if c.Jitter >= 1 {
		return nil, ndst.Usagef("jitter must be below 1, got %g", c.Jitter)
	}
	if c.StartPhase != nil && !(*c.StartPhase >= 0 && *c.StartPhase < 1) {
		return nil, ndst.Usagef("start phase must be in [0, 1) of a jiffy, got %g", *c.StartPhase)
	}
	ct := c.Costs
	if ct == nil {
		ct = costs.Default()
	}
	return &resolved{cfg: c, profile: p, strategy: w, preempt: pre, rcu: choice, names: names, costs: ct, autoWhy: autoWhy, preemptWhy: preemptWhy, knobs: kn}, nil
}

// Backend is the emulated kernel behind the driver contract.
type Backend struct {
	r     *resolved
	state *statefile.State
	lock  *statefile.FileLock
}

var _ ndst.Backend = (*Backend)(nil)

// Open validates the configuration, locks and loads the state file.
func Open(ctx context.Context, c Config) (*Backend, error) {
	r, err := resolve(c)
	if err != nil {
		return nil, err
	}
	b := &Backend{r: r, state: &statefile.State{}}
	if c.Ephemeral {
		return b, nil
	}
	if c.StatePath == "" {
		if c.StatePath, err = statefile.DefaultPath(); err != nil {
			return nil, err
		}
		r.cfg.StatePath = c.StatePath
	}
	if b.lock, err = statefile.LockContext(ctx, c.StatePath, c.WaitLock); err != nil {
		return nil, err
	}
	if b.state, err = statefile.LoadContext(ctx, c.StatePath); err != nil {
		_ = b.lock.Unlock()
		return nil, err
	}
	if err := b.checkStateFlags(); err != nil {
		_ = b.lock.Unlock()
		return nil, err
	}
	return b, nil
}

// Name implements ndst.Backend.
func (b *Backend) Name() string { return "sim" }

// Close releases the state file lock.
func (b *Backend) Close() error {
	if b.lock != nil {
		err := b.lock.Unlock()
		b.lock = nil
		return err
	}
	return nil
}

// StatePath returns the state file in use ("" when ephemeral).
func (b *Backend) StatePath() string { return b.r.cfg.StatePath }

// Strategy returns the strategy's name after defaults.
func (b *Backend) Strategy() string { return b.r.cfg.Strategy }

// Devices returns the number of devices in the persisted registry (of the
// namespace the backend acts in).
func (b *Backend) Devices() int { return len(b.devices()) }

// kernel is one emulated kernel for one command.
type kernel struct {
	e   *sim.Engine
	rcu *rcu.RCU
	// reg is the namespace the command acts in; ns, when the machine has
	// namespaces or the command makes some, holds them all (netns.go).
	reg *netdev.Registry
	ns  *netdev.Namespaces
	log []string
	// task is the command's task, start when its command began, phases
	// its time by phase.
	task   *sim.Task
	start  sim.Time
	phases []sim.PhaseTime
	// trace records the run for --trace.
	trace *sim.Trace
	// knobs are applied to the namespaces when they are made.
	knobs *netdev.Knobs
	// maxEvents is Config.MaxEvents.
	maxEvents int64
	// startPhase is Config.StartPhase.
	startPhase *float64
}

const maxKernelLog = 64

func (b *Backend) boot(ctx context.Context) (*kernel, error) {
	r := b.r
	wd := sim.Time(r.cfg.Watchdog)
	scfg := sim.Config{
		HZ: r.cfg.HZ, CPUs: r.cfg.CPUs, Preempt: r.preempt, Seed: r.cfg.Seed,
		Watchdog: wd, Jitter: r.cfg.Jitter, NoPhases: r.cfg.NoPhases, EveryTick: r.cfg.EveryTick,
		Stalls:        r.cfg.Stalls,
		WakeLatency:   r.cfg.WakeLatency,
		TickLateness:  r.cfg.TickLateness,
		ContextSwitch: sim.Time(r.costs.Lookup(costs.ContextSwitch)),
		TickCost:      sim.Time(r.costs.Lookup(costs.Tick)),
	}
	r.profile.SimConfig(&scfg)
	r.knobs.ApplySim(&scfg)
	e, err := sim.New(scfg)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	rcfg := r.profile.RCUConfig(r.rcu, r.cfg.HZ, r.cfg.CPUs, r.preempt, r.costs)
	r.knobs.ApplyRCU(&rcfg)
	rcfg.OtherWork = r.cfg.RCUOtherWork
	rc, err := rcu.New(e, rcfg)
	if err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	reg := netdev.New(e, rc, netdev.Options{
		Profile: r.profile, Costs: r.costs, Waiter: r.strategy,
		NameAlloc: r.names, NextIfindex: int(b.state.NextIfindex),
	})
	if rc, ok := r.strategy.(waitrefs.ReleaseChecker); ok && rc.ChecksOnRelease() {
		reg.CheckOnRelease = true
	}
	reg.SetHolds(r.cfg.Holds)
	if r.cfg.GiveUp > 0 {
		reg.GiveUp = sim.Time(r.cfg.GiveUp)
	}
	reg.RefTracker = r.cfg.RefTracker
	r.knobs.ApplyRegistry(reg)
	k := &kernel{e: e, rcu: rc, reg: reg, knobs: r.knobs, maxEvents: r.cfg.MaxEvents, startPhase: r.cfg.StartPhase}
	if r.cfg.TracePath != "" {
		k.trace = &sim.Trace{}
		e.SetTrace(k.trace)
	}
	e.SetLogger(func(at sim.Time, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if len(k.log) < maxKernelLog {
			k.log = append(k.log, fmt.Sprintf("[%12.6f] %s", at.Seconds(), msg))
		}
		if r.cfg.Printk != nil {
			r.cfg.Printk(time.Duration(at), msg)
		}
	})
	for i, d := range b.state.Devices {
		if i%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := k.restore(d); err != nil {
			return nil, fmt.Errorf("state file %s: %w", b.r.cfg.StatePath, err)
		}
	}
	if err := b.bootNetns(ctx, k); err != nil {
		return nil, err
	}
	if err := b.restoreLowers(k); err != nil {
		return nil, err
	}
	return k, nil
}

// run executes body as the task that writes the command to /proc (the
// emulated ndst module, which calls cond_resched() between devices), starting
// at a seeded phase within the first jiffy (or at Config.StartPhase of the
// next one), and returns its virtual time.
func (k *kernel) run(ctx context.Context, body func(t *sim.Task, sys sim.Time)) (sim.Time, error) {
	var start, end sim.Time = -1, -1
	period := k.e.Period()
	phase := sim.Time(k.e.Rand().Int64N(int64(period)))
	if k.startPhase != nil {
		at := sim.Time(*k.startPhase * float64(period))
		phase = ((at-k.e.Now())%period + period) % period
	}
	defer func() {
		if k.phases == nil && k.task != nil {
			k.phases = k.task.Phases() // a stopped run: up to where it stopped
		}
	}()
	sys := sim.Time(k.reg.Cost(costs.Syscall))
	k.e.Go("ndst", 0, false, func(t *sim.Task) {
		t.SetMode(sim.ModeUser)
		t.Nanosleep(phase)
		start = t.Now()
		k.task, k.start = t, start
		t.SetMode(sim.ModeKernel)
		t.SetPhase(ph.Syscall)
		t.Charge(sys)
		t.SetPhase(ph.Other)
		body(t, sys)
		t.SetMode(sim.ModeUser)
		end = t.Now()
		k.phases = t.Phases()
		if k.e.Tracing() {
			t.SetPhase("") // close the last phase's span
		}
	})
	budget := k.maxEvents
	if budget <= 0 {
		budget = DefaultMaxEvents
	}
	k.e.SetInterrupt(func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ev := k.e.Stats().Events; ev >= budget {
			return &BudgetError{Events: ev, At: time.Duration(k.e.Now()), GiveUp: time.Duration(k.reg.GiveUp)}
		}
		return nil
	})
	err := k.e.Run()
	if end < 0 && err == nil {
		err = errors.New("command did not complete")
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = k.e.Now()
	}
	return end - start, err
}

func (b *Backend) newResult(op string, batched bool) *ndst.Result {
	c := b.r.cfg
	strategy, profile, preempt := c.Strategy, c.Profile, c.Preempt
	hz, cpus, seed := c.HZ, c.CPUs, c.Seed
	rcuName, table := c.RCU, b.r.costs.Source
	if c.CostsPath != "" {
		table = c.CostsPath
	}
	res := &ndst.Result{
		Op: op, Backend: "sim", Strategy: &strategy, Profile: &profile,
		HZ: &hz, CPUs: &cpus, Preempt: &preempt, Seed: &seed, RCU: &rcuName,
		CostTable: &table, Batched: batched, Result: ndst.ResultOK,
	}
	if b.r.autoWhy != "" {
		res.Notes = append(res.Notes, b.r.autoWhy)
	}
	if b.r.preemptWhy != "" {
		res.Notes = append(res.Notes, b.r.preemptWhy)
	}
	if c.MachineNote != "" {
		res.Notes = append(res.Notes, c.MachineNote)
	}
	res.Notes = append(res.Notes, c.MachineNotes...)
	if away := b.r.knobs.AwayFromDefault(); len(away) > 0 {
		res.Notes = append(res.Notes, "knobs away from the line's defaults: "+strings.Join(away, ", "))
	}
	if op == "del" && len(b.r.cfg.Holds) > 0 {
		res.Notes = append(res.Notes, "--hold: "+describeHolds(b.r.cfg.Holds))
	}
	return res
}

// Add implements ndst.Backend: N register_netdev calls, each under RTNL.
func (b *Backend) Add(ctx context.Context, req ndst.AddRequest) (*ndst.Result, error) {
	if req.Count < 1 || req.Count > ndst.MaxCount {
		return nil, ndst.Usagef("count must be between 1 and %d, got %d", ndst.MaxCount, req.Count)
	}
	if err := b.checkNetns(); err != nil {
		return nil, err
	}
	if ndst.IsChildKind(req.Kind) || req.Parent != "" {
		return b.addChildren(ctx, req)
	}
	if err := req.Addrs.Normalize(); err != nil {
		return nil, err
	}
	link, err := linkOf(req)
	if err != nil {
		return nil, err
	}
	if err := b.r.profile.CheckAddrs(link); err != nil {
		return nil, ndst.Usagef("%v", err)
	}
	if free := req.Template.MaxNumber() + 1 - b.countMatching(req.Template); req.Count > free {
		return nil, ndst.Usagef("template %s has room for %d more names, asked for %d", req.Template, free, req.Count)
	}
	if err := checkMemory(b.stateUnits() + req.Count); err != nil {
		return nil, err
	}
	res := b.newResult("add", false)
	if !req.Addrs.IsZero() {
		res.Notes = append(res.Notes, "each device "+req.Addrs.String())
	}
	wall := time.Now()
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	lat := make([]int64, 0, req.Count)
	var addErr error
	created := 0
	var addrNS sim.Time // setting the devices up with their addresses
	virt, runErr := k.run(ctx, func(t *sim.Task, sys sim.Time) {
		// As the netlink backend adds: every device created, then every
		// one set up with its addresses.
		devs := make([]*netdev.Device, 0, req.Count)
		for range req.Count {
			if err := ctx.Err(); err != nil { // signal_pending(): the loop stops between devices
				addErr = err
				return
			}
			s := t.Now()
			k.reg.RTNLLock(t)
			d, err := k.reg.Register(t, req.Template)
			k.reg.RTNLUnlock(t)
			if err != nil {
				addErr = err
				return
			}
			created++
			devs = append(devs, d)
			lat = append(lat, int64(t.Now()-s))
			t.CondResched() // a long module loop must let others run
		}
		s := t.Now()
		for _, d := range devs {
			if err := ctx.Err(); err != nil {
				addErr = err
				return
			}
			if err := k.reg.SetUp(t, d, link, sys); err != nil {
				addErr = err
				return
			}
			if link.Up {
				t.CondResched() // the requests' return to user space
			}
		}
		addrNS = t.Now() - s
	})
	if runErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped after %v virtual: %d of %d devices had been created; the state file is unchanged", virt, created, req.Count))
	}
	res, err = b.finish(k, res, virt, time.Since(wall), lat, created, errors.Join(runErr, addErr))
	if res != nil && res.Counters != nil && !req.Addrs.IsZero() {
		res.Counters["addr_ns"] = int64(addrNS)
	}
	return res, err
}

func (b *Backend) countMatching(t ndst.Template) int {
	n := 0
	for _, d := range b.devices() {
		if t.Number(d.Name) >= 0 {
			n++
		}
	}
	return n
}

// Del implements ndst.Backend.
func (b *Backend) Del(ctx context.Context, req ndst.DelRequest) (*ndst.Result, error) {
	if err := ndst.CheckRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	if err := b.checkNetns(); err != nil {
		return nil, err
	}
	all := b.devices()
	lo, _ := slices.BinarySearchFunc(all, int32(req.Start), func(d statefile.Device, v int32) int { return int(d.Ifindex - v) })
	hi := lo
	for hi < len(all) && int(all[hi].Ifindex) <= req.Stop {
		hi++
	}
	if hi == lo {
		return nil, fmt.Errorf("%w: ifindex %d..%d (%s)", ndst.ErrNoDevices, req.Start, req.Stop, b.describe())
	}
	if err := b.checkHolds(lo, hi); err != nil {
		return nil, err
	}
	batched := b.r.profile.Batched && !req.OneByOne && !req.Stream
	res := b.newResult("del", batched)
	res.Stream = req.Stream
	wall := time.Now()
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	devs := make([]*netdev.Device, 0, hi-lo)
	for _, sd := range all[lo:hi] {
		if !req.Selects(sd.Name) {
			continue
		}
		d, _ := k.reg.ByIndex(int(sd.Ifindex))
		devs = append(devs, d)
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: no device named like %q in ifindex %d..%d (%s)", ndst.ErrNoDevices, req.Match, req.Start, req.Stop, b.describe())
	}
	devs, skipped := k.deletable(res, devs)
	if note := childNote(k.reg, devs); note != "" {
		res.Notes = append(res.Notes, note)
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: ifindex %d..%d holds only lo, which the kernel does not delete (%s)", ndst.ErrNoDevices, req.Start, req.Stop, b.describe())
	}
	lat := make([]int64, 0, len(devs))
	k.reg.OnFree = func(d *netdev.Device) { lat = append(lat, int64(k.e.Now()-d.UnregisterStart)) }
	gap := sim.Time(k.reg.Cost(costs.RequestGap))
	virt, runErr := k.run(ctx, func(t *sim.Task, sys sim.Time) {
		if batched {
			k.reg.RTNLLock(t)
			k.reg.UnregisterMany(t, devs)
			k.reg.RTNLUnlock(t)
			return
		}
		for i, d := range devs {
			if ctx.Err() != nil { // signal_pending(): stop between devices
				return
			}
			if i > 0 && req.OneByOne {
				// Each device is a request of its own: the tool's work
				// between two requests in user space (attributed to
				// "other", as the real backend attributes the time
				// outside its requests), then the next request's
				// syscall (run charged the first one's).
				t.SetMode(sim.ModeUser)
				t.Charge(gap)
				t.SetMode(sim.ModeKernel)
				t.SetPhase(ph.Syscall)
				t.Charge(sys)
				t.SetPhase(ph.Other)
			}
			k.reg.RTNLLock(t)
			k.reg.UnregisterMany(t, []*netdev.Device{d})
			k.reg.RTNLUnlock(t)
			t.CondResched()
		}
	})
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	if runErr != nil {
		res.Notes = append(res.Notes, b.progress(k, devs))
	}
	res.Skipped = skipped
	return b.finish(k, res, virt, time.Since(wall), lat, len(lat), runErr)
}

// describe summarises the persisted registry for error messages.
func (b *Backend) describe() string {
	devs := b.devices()
	n := len(devs)
	where := "the emulated namespace"
	if b.r.cfg.Netns != "" {
		where = "emulated namespace " + b.r.cfg.Netns
	}
	if n == 0 {
		return where + " is empty; run 'ndst add N' first"
	}
	return fmt.Sprintf("%s has %d devices, ifindex %d..%d", where, n, devs[0].Ifindex, devs[n-1].Ifindex)
}

// progress says how far a teardown got when it was stopped.
func (b *Backend) progress(k *kernel, devs []*netdev.Device) string {
	freed := 0
	var stuck *netdev.Device
	for _, d := range devs {
		if d.State == netdev.Freed {
			freed++
		} else if stuck == nil && d.State != netdev.Registered {
			stuck = d
		}
	}
	msg := fmt.Sprintf("teardown stopped after %v virtual: %d of %d devices freed", k.e.Now(), freed, len(devs))
	if stuck != nil {
		msg += fmt.Sprintf("; %s is %s with refcount %d (held by: %s)", stuck.Name, stuck.State, stuck.Refcount(), stuck.Holders())
	}
	return msg + "; the state file is unchanged"
}

// finish fills in the result, persists the state on success, and maps run
// errors to result kinds.
func (b *Backend) finish(k *kernel, res *ndst.Result, virt sim.Time, wall time.Duration, lat []int64, count int, runErr error) (*ndst.Result, error) {
	v := int64(virt)
	res.VirtualNS = &v
	res.WallNS = int64(wall)
	res.Count = count
	if runErr != nil {
		res.Count = 0 // nothing took effect: the state is as before (progress is in the notes)
	}
	res.Latency = ndst.Summarize(lat)
	res.Counters = counters(k)
	defer func() { res.Explain = explain(b.r, res) }()
	for _, p := range k.phases {
		if p.CPU+p.Wait > 0 {
			res.Phases = append(res.Phases, ndst.Phase{Name: p.Name, CPUNS: int64(p.CPU), WaitNS: int64(p.Wait)})
		}
	}
	res.KernelLog = k.log
	if k.trace != nil {
		// A requested trace that cannot be written fails the command (the
		// old file, if any, is left as it was); a run that failed anyway
		// keeps its own error, with the trace's in a note.
		err := safefile.WriteOutput(b.r.cfg.TracePath, 0o644, func(w io.Writer) error { return k.trace.Write(w, k.e) }, nil)
		switch {
		case err == nil:
			res.Notes = append(res.Notes, fmt.Sprintf("wrote %s: the run as Chrome trace events (open it in https://ui.perfetto.dev or chrome://tracing)", b.r.cfg.TracePath))
		case runErr == nil:
			res.Count = 0
			res.Result = ndst.ResultError
			res.Error = fmt.Sprintf("--trace: %v; the run's changes were not saved", err)
			return res, fmt.Errorf("--trace: %w; the run's changes were not saved", err)
		default:
			res.Notes = append(res.Notes, fmt.Sprintf("--trace: %v", err))
		}
	}
	if runErr != nil {
		var lock *sim.LockupError
		var stuck *netdev.StuckError
		switch {
		case errors.As(runErr, &stuck):
			res.Result = ndst.ResultStuck
			res.Error = runErr.Error()
			res.Stuck = make([]ndst.StuckDevice, 0, len(stuck.Devices))
			for _, d := range stuck.Devices {
				res.Stuck = append(res.Stuck, ndst.StuckDevice{Name: d.Name, UsageCount: d.UsageCount, Holders: d.Holders})
			}
			res.Notes = append(res.Notes, fmt.Sprintf("the wait loop gave up after %v (--give-up): a reference was not released; "+
				"the kernel would keep printing the warning every 10 s (-v shows the log)", stuck.Waited))
			return res, fmt.Errorf("%w: %v", ndst.ErrStuck, runErr)
		case errors.As(runErr, &lock):
			res.Result = ndst.ResultLivelock
			res.Error = runErr.Error()
			res.Notes = append(res.Notes, remedy(b.r, res.Op, k))
			return res, fmt.Errorf("%w: %v", ndst.ErrLivelock, runErr)
		case errors.As(runErr, new(*BudgetError)):
			res.Result = ndst.ResultError
			res.Error = runErr.Error()
			return res, runErr
		case errors.Is(runErr, context.Canceled):
			res.Result = ndst.ResultError
			res.Error = "interrupted"
			return res, fmt.Errorf("interrupted: %w", runErr)
		default:
			res.Result = ndst.ResultError
			res.Error = runErr.Error()
			return res, runErr
		}
	}
	next := k.state()
	if !b.r.cfg.Ephemeral {
		if err := statefile.Save(b.r.cfg.StatePath, next); err != nil {
			res.Result = ndst.ResultError
			res.Error = err.Error()
			return res, err
		}
	}
	b.state = next
	return res, nil
}

// remedy is the advice printed with a livelock: what kept the machine from
// making progress, and which setting avoids it.
func remedy(r *resolved, op string, k *kernel) string {
	switch {
	case op != "del":
		return fmt.Sprintf("the %s loop ran in kernel mode for the watchdog threshold without letting the watchdog "+
			"thread run; raise --watchdog or turn it off with --watchdog 0", op)
	case k.rcu.Stats().ExpeditedNoops > 0:
		return fmt.Sprintf("the %s wait loop never sleeps and synchronize_rcu_expedited() is a no-op on %d CPU(s) "+
			"with non-preemptible RCU, so no quiescent state lets the callbacks holding the references run; "+
			"try --strategy tick or barrier, --preempt full, or --cpus 2", r.cfg.Strategy, r.cfg.CPUs)
	}
	return "a reference was never released; the kernel log names its holders (-v prints it as it happens)"
}

func counters(k *kernel) map[string]int64 {
	rs := k.rcu.Stats()
	ns := k.reg.Stats()
	es := k.e.Stats()
	var busy, idleIRQ int64
	for _, c := range k.e.CPUs() {
		// A charge is accounted when it starts; a run stopped (a lockup,
		// the give-up) in the middle of one did not run its rest, which
		// is left out: a CPU is never busier than the run is long.
		busy += min(int64(c.Busy[sim.ModeKernel]+c.Busy[sim.ModeUser]+c.Busy[sim.ModeIRQ]), int64(k.e.Now()))
		idleIRQ += int64(c.Busy[sim.ModeIRQ])
	}
	m := map[string]int64{
		"grace_periods":       rs.GPsCompleted,
		"grace_periods_begun": rs.GPsStarted,
		"expedited_gps":       rs.ExpeditedGPs,
		"expedited_noops":     rs.ExpeditedNoops,
		"synchronize_noops":   rs.SyncNoops,
		"callbacks_queued":    rs.CallbacksQueued,
		"callbacks":           rs.CallbacksInvoked,
		"rcu_barriers":        rs.Barriers,
		"fqs_scans":           rs.FQSScans,
		"fqs_resched":         rs.FQSResched,
		"urgent_qs":           rs.UrgentQS,
		"tick_resched":        rs.TickResched,
		"gp_time_ns":          int64(rs.GPTime),
		"rcu_stalls":          rs.Stalls,
		"synchronize_net":     ns.SyncNet,
		"wait_checks":         ns.WaitChecks,
		"sleeps":              ns.WaitSleeps,
		"rebroadcasts":        ns.Rebroadcasts,
		"warnings":            ns.Warnings,
		"release_checks":      ns.ReleaseChecks,
		"devices_freed":       ns.Freed,
		"context_switches":    es.ContextSwitches,
		"wakeups":             es.Wakeups,
		"ticks":               es.Ticks,
		"preemptions":         es.Preemptions,
		"newidle_pulls":       es.NewidlePulls,
		"cpu_busy_ns":         busy,
		"events":              es.Events,
	}
	for src := rcu.QSSource(0); src < rcu.NumQSSources; src++ {
		if src == rcu.QSGPInit && rs.QSBy[src] == 0 {
			continue // only the lines whose rcu_gp_init reports one (7.x)
		}
		m["qs_"+src.Name()] = rs.QSBy[src]
	}
	if rs.WakeFromGPLatched > 0 {
		m["wake_from_gp_latched"] = rs.WakeFromGPLatched
	}
	addrCounters(ns, m)
	// A stalling machine's counters exist only where it stalls.
	if k.e.Config().Stalls.Enabled() {
		var n, d int64
		for _, c := range k.e.CPUs() {
			n, d = n+c.StallCount, d+int64(c.Stalled)
		}
		m["machine_stalls"] = n
		m["machine_stalled_ns"] = d
	}
	// So do a machine's late ticks (sim/ticklate.go).
	if len(k.e.Config().TickLateness) > 0 {
		var n, d int64
		for _, c := range k.e.CPUs() {
			n, d = n+c.LateTicks, d+int64(c.TicksLate)
		}
		m["late_ticks"] = n
		m["ticks_late_ns"] = d
	}
	// Lazy RCU's counters exist only where a run had lazy callbacks.
	if rs.LazyCallbacks > 0 {
		m["lazy_callbacks"] = rs.LazyCallbacks
		m["lazy_flushes"] = rs.LazyFlushes
		m["lazy_timer_flushes"] = rs.LazyWakeups
	}
	return m
}

// List implements ndst.Backend: the persisted registry, read through the
// device table's resumable cursor in pages of req.PageSize (all at once
// when 0), ordered by ifindex.
func (b *Backend) List(ctx context.Context, req ndst.ListRequest) ([]ndst.Device, error) {
	if req.PageSize < 0 {
		return nil, ndst.Usagef("page size must not be negative")
	}
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ndst.Device, 0, k.reg.Len())
	page := req.PageSize
	if page == 0 {
		page = k.reg.Len() + 1
	}
	tab := k.reg.Table()
	visit := func(ifindex int, name string, d *netdev.Device) {
		out = append(out, ndst.Device{Name: name, Ifindex: ifindex, Kind: k.kind(d),
			State: d.State.String(), Refcount: ndst.Known(d.Refcount())})
	}
	if req.Naive {
		for pos, done := 0, false; !done; {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			pos, done = tab.ListNaive(pos, page, visit)
		}
	} else {
		var c devtable.Cursor
		for !c.Done() {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			c = tab.List(c, page, visit)
		}
	}
	slices.SortFunc(out, func(a, b ndst.Device) int { return a.Ifindex - b.Ifindex })
	return out, nil
}

// PhaseSweep is c at k evenly spaced start phases: the i-th copy starts
// every command (i+1/2)/k of the way into a jiffy (Config.StartPhase) and
// draws its other randomness (the jitter of charged costs) from seed
// c.Seed+i. A real command starts wherever in the tick it happens to, so
// its runs' times are spread as these copies' are; the copies are the
// emulated counterpart of a measured set of rounds, and their median the
// counterpart of the rounds' median. Same c and k, same copies.
func PhaseSweep(c Config, k int) []Config {
	out := make([]Config, k)
	for i := range out {
		ph := (float64(i) + 0.5) / float64(k)
		out[i] = c
		out[i].Seed = c.Seed + uint64(i)
		out[i].StartPhase = &ph
	}
	return out
}
