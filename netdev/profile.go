package netdev

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Profile is one kernel line as the emulated kernel runs it: the path
// around the wait for references (batching, synchronize_net, rcu_barrier,
// the ready refcount), the subsystems that hold references, the RCU
// implementations the line offers, and its timer wheel, softirq limits and
// soft-lockup detector. A line is the previous one plus named changes
// (lines.go), so `ndst profiles` can print the history. A profile and a wait
// strategy are independent choices.
type Profile struct {
	Name string
	// Changes are the changes since the previous line, in order.
	Changes []Change

	// Batched: unregister_netdevice_many handles a whole list at once
	// (2.6.33+); otherwise every device has its own rollback_registered and
	// its own netdev_run_todo.
	Batched bool
	// SyncNetPerUnregister is the number of synchronize_net() calls in one
	// unregister call (per device when not batched, per batch otherwise).
	SyncNetPerUnregister int
	// SyncNetExpedited: synchronize_net is expedited because RTNL is held.
	SyncNetExpedited bool
	// SyncNetInClose: closing the devices (dev_deactivate_many) adds one
	// synchronize_net of its own.
	SyncNetInClose bool
	// BarrierBeforePut: rcu_barrier() before dropping the registration
	// references (ef885afb), replacing the last synchronize_net.
	BarrierBeforePut bool
	// BarrierInRunTodo: netdev_run_todo does one rcu_barrier() for its list
	// after dropping RTNL.
	BarrierInRunTodo bool
	// RebroadcastBarrier: the wait loop's once-a-second rebroadcast drops
	// RTNL after the NETDEV_UNREGISTER notifiers for an rcu_barrier(), then
	// takes RTNL again for the linkwatch queue.
	RebroadcastBarrier bool
	// ReadyRefcount is the refcount at which a device may be freed: 0 in
	// 2.6.3x, 1 in modern kernels (the device's own reference).
	ReadyRefcount int
	// FreeInReadyOrder frees devices as they become ready
	// (netdev_wait_allrefs_any) instead of strictly in list order.
	FreeInReadyOrder bool
	// DefaultStrategy is the line's own wait loop.
	DefaultStrategy string
	// Subsystems hold references between registration and unregistration,
	// in notifier order.
	Subsystems []Subsystem
	// FibFlush is where the IPv4 route-cache flush (a cond_resched point)
	// runs in unregister.
	FibFlush FibFlush

	// RCUs are the RCU implementations the line offers (--rcu), the first
	// being the line's default configuration.
	RCUs []RCUChoice
	// ModernRCU: Tree RCU with the grace-period kthread (kernel/rcu/tree.c);
	// otherwise 2.6.3x Tree RCU (kernel/rcutree.c).
	ModernRCU bool
	// GPEndBeforeAdvance: 2.6.33's extra GP after each GP end (rcu.Config).
	GPEndBeforeAdvance bool
	// TreeExpedited is synchronize_rcu_expedited of the non-preemptible
	// Tree RCU.
	TreeExpedited rcu.Expedited
	// ExpKthreadWorker: the expedited GP runs in an unbound kthread worker,
	// not on the caller's CPU (rcu.Config.ExpKthreadWorker; 6.12 on).
	ExpKthreadWorker bool
	// UPShortcut: synchronize_rcu[_expedited] return at once on one CPU
	// without preemptible RCU (all of 2.6.3x; modern lines before 6.1).
	UPShortcut bool
	// PreemptCount: the line's distribution build has CONFIG_PREEMPT_COUNT
	// (PREEMPT_DYNAMIC, 6.1 on in Debian), so even its non-preemptible RCU
	// counts a tick in kernel code outside preempt-disabled regions.
	PreemptCount bool
	// DeferToKsoftirqd and DivisorOfAll: see sim.SoftirqLimits and
	// rcu.Config.
	DeferToKsoftirqd bool
	DivisorOfAll     bool
	// RTTimerThread: on PREEMPT_RT the line expires timers in ktimers/N
	// (sim.SoftirqLimits.TimerThread).
	RTTimerThread bool
	// RCUStall is the RCU CPU stall timeout (0: detector off by default)
	// and RCUStallRepeat the interval of later reports.
	RCUStall, RCUStallRepeat sim.Time

	// Timers is the timer wheel; MsleepExact drops msleep's extra jiffy.
	Timers      sim.TimerWheel
	MsleepExact bool
	// MutexHandoff: a mutex's passed-over first waiter gets the lock at
	// the next unlock (sim.Config.MutexHandoff).
	MutexHandoff bool
	// SoftirqTime bounds __do_softirq's restarts (MAX_SOFTIRQ_TIME; 0:
	// none) and SoftirqResched ends them when a reschedule is pending.
	SoftirqTime    sim.Time
	SoftirqResched bool
	// Lockup is the soft-lockup threshold (whole seconds, compared with
	// 2^30 ns timestamp units) and LockupDesign how the detector checks.
	Lockup       sim.Time
	LockupDesign sim.LockupDesign

	// Netns is how the line creates and destroys network namespaces
	// (netns_lines.go).
	Netns NetnsProfile
	// Addrs is what the line does with up devices' addresses (addr.go,
	// addr_lines.go); VLAN with VLANs and macvlans (vlan.go).
	Addrs AddrProfile
	VLAN  VLANProfile

	// Knobs are the kernel's knobs the line has, with their defaults
	// (knob_lines.go).
	Knobs []LineKnob
	// RouteReleaseHurry: the route releases of an up loopback use
	// call_rcu_hurry(), never lazy (6.10 on; lazy.go).
	RouteReleaseHurry bool
	// WakeFromGPSmall: rcu_normal_wake_from_gp is on by default on
	// machines of at most 16 CPUs (6.17 on); WakeFromGPAll on every
	// machine, with its latch at WakeFromGPLatch callers in flight (7.x).
	WakeFromGPSmall bool
	WakeFromGPAll   bool
	WakeFromGPLatch int
	// GPInitSelfQS: rcu_gp_init reports the GP kthread's own CPU's QS
	// (7.x; rcu.Config).
	GPInitSelfQS bool
	// HRTick: the scheduler's HRTICK feature is on (7.x with
	// CONFIG_HRTIMER_REARM_DEFERRED; sim.Config.HRTick).
	HRTick bool

	// Preemption models (x86, the architecture of the lines' builds).
	// PreemptLazy: the line has PREEMPT_LAZY (6.13 on), --preempt lazy.
	// NoNoneVoluntary: PREEMPT_NONE and PREEMPT_VOLUNTARY cannot be
	// built, and preempt=none/voluntary is refused at boot (x86 7.x).
	// RTDynamic: the line's PREEMPT_RT build is PREEMPT_DYNAMIC, booted
	// full or lazy (preempt=), lazy when RTLazy.
	PreemptLazy, NoNoneVoluntary bool
	RTDynamic, RTLazy            bool
	// PreemptNote says where the preemption rules of the line were read.
	PreemptNote string
}

// RCUChoice is one RCU implementation a line offers.
type RCUChoice struct {
	// Name is the --rcu value: classic, tree, tree-preempt or tiny.
	Name string
	// Config is the kernel configuration option.
	Config string
	// Requires says what the option depends on ("" for nothing).
	Requires string
}

// RCUNames lists every --rcu value any line offers.
var RCUNames = []string{"classic", "tree", "tree-preempt", "tiny"}

// RCUChoice returns the named implementation, or an error naming the line
// and what it offers; "" is the line's default.
func (p Profile) RCUChoice(name string) (RCUChoice, error) {
	if name == "" {
		return p.RCUs[0], nil
	}
	for _, c := range p.RCUs {
		if c.Name == name {
			return c, nil
		}
	}
	var have []string
	for _, c := range p.RCUs {
		have = append(have, c.Name)
	}
	if !slices.Contains(RCUNames, name) {
		return RCUChoice{}, fmt.Errorf("--rcu %s: unknown RCU implementation (known: %s; kernel %s has %s)",
			name, strings.Join(RCUNames, ", "), p.Name, strings.Join(have, ", "))
	}
	return RCUChoice{}, fmt.Errorf("--rcu %s: kernel %s has no %s RCU (it has %s)", name, p.Name, name, strings.Join(have, ", "))
}

// CheckMachine says whether the RCU choice can run on the machine: the
// Kconfig dependencies of the line.
func (p Profile) CheckMachine(c RCUChoice, cpus int, preempt sim.Preempt) error {
	if preempt == sim.PreemptRT && !p.ModernRCU {
		return fmt.Errorf("--preempt rt: kernel %s is modelled without PREEMPT_RT (the RT patches were out of tree then; the RT model starts at line 5.10)", p.Name)
	}
	if err := p.checkPreempt(preempt); err != nil {
		return err
	}
	switch c.Name {
	case "tiny":
		if cpus != 1 {
			return fmt.Errorf("--rcu tiny is %s, which needs a kernel without SMP: one CPU, not --cpus %d", c.Config, cpus)
		}
		if preempt.Preemptive() {
			return fmt.Errorf("--rcu tiny is %s, which is not preemptible: not --preempt %s", c.Config, preempt)
		}
	case "classic", "tree":
		if p.ModernRCU && c.Name == "tree" && preempt.Preemptive() {
			return fmt.Errorf("kernel %s builds preemptible RCU with --preempt %s: use --rcu tree-preempt", p.Name, preempt)
		}
	case "tree-preempt":
		if !p.ModernRCU && preempt != sim.PreemptFull {
			return fmt.Errorf("--rcu tree-preempt is %s, which needs CONFIG_PREEMPT in kernel %s: --preempt full", c.Config, p.Name)
		}
	}
	return nil
}

// DefaultPreempt is the preemption model a run of the line gets when none
// is asked for: none, the model of the 2009 machine, except on a line that
// cannot build it (NoNoneVoluntary), whose x86 build defaults to lazy
// (Kconfig.preempt: default PREEMPT_LAZY if ARCH_HAS_PREEMPT_LAZY); the
// note says so ("" for none).
func (p Profile) DefaultPreempt() (string, string) {
	if p.NoNoneVoluntary {
		return "lazy", "preempt lazy: line " + p.Name + " has no PREEMPT_NONE on x86 and its build boots lazy (" + p.PreemptNote + "); --preempt full is the other model it has"
	}
	return "none", ""
}

// HostPreempt maps a host's preemption model (as calibrate and --machine
// host read it: none, voluntary, full, lazy, rt, or "" when unknown) onto
// the line's emulated models, with a note when it had to change it: lazy
// runs as full on a line without PREEMPT_LAZY, unknown as the line's
// default (DefaultPreempt).
func (p Profile) HostPreempt(host string) (string, string) {
	switch host {
	case "":
		def, _ := p.DefaultPreempt()
		return def, "unknown; " + def + " assumed"
	case "lazy":
		if !p.PreemptLazy {
			return "full", "lazy, emulated as full: line " + p.Name + " has no PREEMPT_LAZY"
		}
	}
	return host, ""
}

// checkPreempt refuses a preemption model the line's builds do not have.
func (p Profile) checkPreempt(preempt sim.Preempt) error {
	switch {
	case preempt == sim.PreemptLazy && !p.PreemptLazy:
		return fmt.Errorf("--preempt lazy: kernel %s has no PREEMPT_LAZY (lazy preemption came in 6.13: \"sched: Add Lazy preemption model\", 7c70cb94d29c, and for x86 476e8583ca16; the first modelled line with it is 6.18)", p.Name)
	case (preempt == sim.PreemptNone || preempt == sim.PreemptVoluntary) && p.NoNoneVoluntary:
		return fmt.Errorf("--preempt %s: an x86 kernel of line %s cannot run it: PREEMPT_NONE depends on ARCH_NO_PREEMPT and PREEMPT_VOLUNTARY on !ARCH_HAS_PREEMPT_LAZY, which x86 selects, and a PREEMPT_DYNAMIC kernel refuses preempt=%s at boot (\"Dynamic Preempt: unsupported mode\"): %s; use --preempt lazy (the default of its build) or full", preempt, p.Name, preempt, p.PreemptNote)
	}
	return nil
}

// Choose returns the RCU choice for the flag value and machine: the named
// one, or the line's default for that machine.
func (p Profile) Choose(name string, cpus int, preempt sim.Preempt) (RCUChoice, error) {
	if name == "" {
		for _, c := range p.RCUs {
			if p.CheckMachine(c, cpus, preempt) == nil {
				return c, nil
			}
		}
	}
	c, err := p.RCUChoice(name)
	if err != nil {
		return c, err
	}
	return c, p.CheckMachine(c, cpus, preempt)
}

// SimConfig fills in the line's scheduler, timer and softirq behaviour.
func (p Profile) SimConfig(c *sim.Config) {
	c.Timers = p.Timers
	c.MsleepExact = p.MsleepExact
	c.MutexHandoff = p.MutexHandoff
	c.Softirq = sim.SoftirqLimits{MaxTime: p.SoftirqTime, StopOnResched: p.SoftirqResched, DeferToKsoftirqd: p.DeferToKsoftirqd}
	if c.Preempt == sim.PreemptRT {
		c.Softirq.Threaded, c.Softirq.TimerThread = true, p.RTTimerThread
		c.RTLazy = p.RTDynamic && p.RTLazy
	}
	c.HRTick = p.HRTick
	c.Lockup = p.LockupDesign
	if c.Watchdog == 0 { // the line's own threshold
		c.Watchdog = p.Lockup
	}
}

// RCUConfig derives the RCU model's configuration for the choice on a
// machine with the given HZ, CPU count and preemption model. PREEMPT_RT
// (docs/kernel-modern-sources.md §6): use_softirq=0 puts RCU's core work in
// the rcuc/N kthreads, RCU_BOOST's kthread_prio makes them and the GP kthread
// real-time, and rcu_normal_after_boot turns every expedited grace period
// into a normal one.
func (p Profile) RCUConfig(c RCUChoice, hz, cpus int, preempt sim.Preempt, ct *costs.Table) rcu.Config {
	cfg := rcu.Config{
		StallTimeout: p.RCUStall,
		StallRepeat:  p.RCUStallRepeat,
		CallRCUCost:  sim.Time(ct.Lookup(costs.CallRCU)),
		CallbackCost: sim.Time(ct.Lookup(costs.RCUCallback)),
		IPICost:      sim.Time(ct.Lookup(costs.IPI)),
		KthreadCost:  sim.Time(ct.Lookup(costs.ContextSwitch)),
	}
	switch c.Name {
	case "classic":
		cfg.Flavor, cfg.SyncUPShortcut, cfg.Expedited = rcu.Classic, true, rcu.ExpNone
	case "tiny":
		cfg.Flavor, cfg.Expedited = rcu.Tiny, rcu.ExpCondResched
		cfg.TinyTickResched = p.ModernRCU
	case "tree", "tree-preempt":
		cfg.Flavor = rcu.Tree
		cfg.Preemptible = c.Name == "tree-preempt"
		switch {
		case !p.ModernRCU:
			cfg.SyncUPShortcut = p.UPShortcut
			cfg.GPEndBeforeAdvance = p.GPEndBeforeAdvance
			cfg.Expedited = p.TreeExpedited
			if cfg.Preemptible {
				cfg.Expedited = rcu.ExpNormal
			}
		default:
			cfg.GPKthread = true
			cfg.SyncUPShortcut = p.UPShortcut
			cfg.PreemptCount = p.PreemptCount
			cfg.DivisorOfAll = p.DivisorOfAll
			first := modernFQSJiffies(hz, cpus)
			cfg.FQSFirst, cfg.FQSNext = first, first
			cfg.CondReschedQS = !cfg.Preemptible // rcu_all_qs: !PREEMPT_RCU only
			cfg.Expedited = rcu.ExpIPI
			cfg.ExpKthreadWorker = p.ExpKthreadWorker
			cfg.Barrier = rcu.BarrierEntrain
			cfg.Divisor = 7
			cfg.ReschedTime = 3 * sim.Millisecond
			cfg.BatchOnlyIfBusy = true
			if preempt == sim.PreemptRT {
				cfg.CoreKthread, cfg.NormalOnly = true, true
			}
			cfg.WakeFromGP = p.WakeFromGPAll || p.WakeFromGPSmall && cpus <= wakeFromGPCPUs
			cfg.WakeFromGPLatch = p.WakeFromGPLatch
			cfg.GPInitSelfQS = p.GPInitSelfQS
		}
	}
	return cfg
}

// modernFQSJiffies is the default of jiffies_till_first_fqs and _next_fqs:
// 1 + (HZ > 250) + (HZ > 500) + nr_cpu_ids/256.
func modernFQSJiffies(hz, cpus int) int {
	j := 1 + cpus/256
	if hz > 250 {
		j++
	}
	if hz > 500 {
		j++
	}
	return j
}
