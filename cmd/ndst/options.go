package main

import (
	"io"

	"github.com/ndst-project/ndst/knob"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

// globalOptions are the flags shared by every subcommand. They live in one
// struct handed to each subcommand's constructor (no package-level flag
// variables), so tests can run the CLI many times in one process.
type globalOptions struct {
	stdout, stderr io.Writer
	// notes are the notes printed so far (output.go: each once).
	notes noteSet

	backend  string
	json     bool
	verbose  int
	template string

	// Emulated-kernel settings.
	strategy  string
	profile   string
	hz        int
	cpus      int
	preempt   string
	seed      uint64
	rcu       string
	nameAlloc string
	costs     string
	state     string
	watchdog  time.Duration
	// params are --param NAME=VALUE: the emulated kernel's knobs.
	params []string
	// machine is --machine; hostParams the host's knobs it (or --profile
	// auto) brought, from where; machineSettings what came from where.
	machine         string
	hostParams      []string
	hostParamsFrom  string
	machineSettings []setting
	machineNotes    []string
	// holds, giveUp and refTracker: --hold rules, --give-up, --ref-tracker.
	holds     []string
	trace     string
	giveUp    time.Duration
	giveUpSet bool
	// timeout is --timeout: the real kernel's wall-time bound on a
	// teardown request (--give-up is the emulated kernel's, virtual).
	timeout    time.Duration
	refTracker bool
	// watchdogSet: --watchdog was given (0 then turns the detector off).
	watchdogSet bool

	// Netlink settings (and, with --backend sim, the emulated namespace
	// add, del and list act in: netnsSet says --netns was given).
	netns    string
	netnsSet bool
	// preemptSet says --preempt was given; without it (and without
	// --machine host) the emulated kernel runs the line's default model.
	preemptSet    bool
	kind          string
	kindExplicit  bool
	allowRootNS   bool
	nameExplicit  bool
	noMemoryCheck bool

	waitLock time.Duration

	// counters prints the raw counters of a timed command (also -v).
	counters bool

	// parsed is set once the command line has parsed and the flags hold
	// their values.
	parsed bool

	log *zap.Logger
}

func (g *globalOptions) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.backend, "backend", "sim", "backend: sim (embedded emulated kernel), netlink (real kernel) or module (real kernel, through the ndst kernel module)")
	f.BoolVarP(&g.json, "json", "j", false, "print one JSON object per command")
	f.CountVarP(&g.verbose, "verbose", "v", "print the counters and the kernel log with each result (-vv: also the backend's debug log on stderr)")
	f.BoolVar(&g.counters, "counters", false, "print the raw counters with each result (as -v does)")
	f.StringVar(&g.template, "name", "dummy%d", "name template with exactly one %d (at most 15 bytes)")

	f.StringVar(&g.strategy, "strategy", "", "netdev_wait_allrefs strategy: msleep250, tick, expedited, ben, barrier, backoff, wake (default: the profile's)")
	f.StringVar(&g.profile, "profile", netdev.DefaultProfile, "kernel line: "+strings.Join(netdev.ProfileNames, ", ")+", or auto (the line of the --costs table's host, else of the running kernel; ndst profiles lists them)")
	f.IntVar(&g.hz, "hz", 1000, "timer frequency of the emulated kernel")
	f.IntVar(&g.cpus, "cpus", 1, "number of emulated CPUs")
	f.StringVar(&g.preempt, "preempt", "none", "preemption model: none, voluntary, full, rt (PREEMPT_RT, lines 5.10 on), lazy (PREEMPT_LAZY, lines 6.18 on); line 7.2 runs full or lazy only, lazy when not given")
	f.Uint64Var(&g.seed, "seed", 1, "seed of the emulated kernel's random source (same seed, same timings)")
	f.StringVar(&g.rcu, "rcu", "", "RCU implementation: classic, tree, tree-preempt or tiny, as the kernel line had them (default: the line's for the machine; ndst profiles lists them)")
	f.StringVar(&g.nameAlloc, "name-alloc", "bitmap", "%d name allocator: bitmap, or scan (the kernel's O(n) __dev_alloc_name)")
	f.StringVar(&g.costs, "costs", "", "per-operation CPU cost table (JSON, as written by 'ndst calibrate')")
	f.StringVar(&g.state, "state", "", "state file of the emulated registry (default: $XDG_STATE_HOME/ndst/state)")
	f.StringArrayVar(&g.holds, "hold", nil, "make a holder keep its reference: HOLDER[@DEVICE]=DURATION|forever, DEVICE a name or an ifindex (holders: in_device, arp_parms, inet6_dev, nd_parms, dst, route, socket, xfrm; repeatable)")
	f.DurationVar(&g.giveUp, "give-up", 60*time.Second, "emulated kernel: stop waiting for a device's references after this much virtual time and report the run as stuck (the default is raised to just past the line's soft-lockup report when that comes later: 66.6s on 2.6.3x); on the real kernel the bound is --timeout")
	f.DurationVar(&g.timeout, "timeout", 0, "real kernel (--backend netlink or module): stop waiting for a teardown request after this much wall time and report it as stuck (default: 60s and 5ms a device); the emulated kernel's bound is --give-up")
	f.StringVar(&g.trace, "trace", "", "write the run as a Chrome trace-event JSON file (open it in Perfetto or chrome://tracing): the emulated kernel's model, or, for add, del and netns add/del on the real kernel, its scheduler and workqueue tracepoints")
	f.BoolVar(&g.refTracker, "ref-tracker", false, "list the holders in the wait loop's warning, as kernels with CONFIG_NET_DEV_REFCNT_TRACKER do")
	f.StringVar(&g.machine, "machine", "", "host: run the emulated kernel as this host, or as the --costs table's host (line, HZ, CPUs, preemption model, RCU and kernel knobs, flags given win; and a calibrated table's stalls, wake-up latency, late ticks and other work's RCU callbacks); --profile auto implies it")
	f.StringArrayVar(&g.params, "param", nil, "set a knob of the emulated kernel, named as the kernel names it: NAME=VALUE with NAME a boot parameter (rcutree.jiffies_till_first_fqs), a sysctl (net.core.netdev_unregister_timeout_secs), a build option (CONFIG_HZ) or the knob's sysfs file (repeatable; ndst profiles --knobs lists them by line)")
	f.DurationVar(&g.watchdog, "watchdog", 0, "soft-lockup threshold in whole seconds, compared with 2^30 ns units as the kernel does (default: the line's, 60s for 2.6.3x and 20s later; 0: no detector)")

	f.StringVar(&g.netns, "netns", "ndst", "the network namespace a command acts in (-n NS): on the real kernel ndst's own, made by ndst (never the host's), on the emulated kernel one that netns add made")
	f.StringVar(&g.kind, "kind", "dummy", "link kind of the netlink backend: dummy, ifb, veth")
	f.BoolVar(&g.allowRootNS, "i-really-mean-the-root-namespace", false, "allow the netlink backend to work in the host's root namespace")
	f.BoolVar(&g.noMemoryCheck, "no-memory-check", false, "let the netlink backend's add go ahead when its estimated kernel memory exceeds what is available")

	f.DurationVar(&g.waitLock, "wait-lock", 5*time.Second, "how long to wait for another ndst holding the same state or namespace")
}

// Bounds on the global durations.
const (
	// maxWatchdog is the kernel's largest soft-lockup threshold.
	maxWatchdog = 120 * time.Second
	// maxWait bounds --give-up and --wait-lock: a day, in virtual time on
	// the emulated kernel (where an event budget, emu.DefaultMaxEvents,
	// also stops a run that a livelock with --watchdog 0 would keep
	// going) and in wall time on the real one.
	maxWait = 24 * time.Hour
)

// validate checks the global flags before any subcommand runs.
func (g *globalOptions) validate(cmd *cobra.Command) error {
	g.kindExplicit = cmd.Flags().Changed("kind")
	g.watchdogSet = cmd.Flags().Changed("watchdog")
	g.giveUpSet = cmd.Flags().Changed("give-up")
	g.nameExplicit = cmd.Flags().Changed("name")
	g.netnsSet = cmd.Flags().Changed("netns") || cmd.Flags().Changed("ns")
	g.preemptSet = cmd.Flags().Changed("preempt")
	switch g.backend {
	case "sim", "netlink", "module":
	default:
		return ndst.Usagef("unknown backend %q (want sim, netlink or module)", g.backend)
	}
	if g.watchdog < 0 || (g.watchdog > 0 && (g.watchdog < time.Second || g.watchdog%time.Second != 0)) {
		return ndst.Usagef("--watchdog must be 0 (off) or whole seconds from 1s (the kernel's threshold is), got %v", g.watchdog)
	}
	if g.watchdog > maxWatchdog {
		return ndst.Usagef("--watchdog: at most %v, got %v: the kernel's soft-lockup threshold is twice watchdog_thresh, which takes 0..60 (kernel/watchdog.c; 2.6.3x: softlockup_thresh itself, 0..60)", maxWatchdog, g.watchdog)
	}
	if g.timeout < 0 || g.timeout > maxWait {
		return ndst.Usagef("--timeout: want 0 (the default) to %v, got %v", maxWait, g.timeout)
	}
	if g.giveUp > maxWait {
		return ndst.Usagef("--give-up: at most %v, got %v: the wait for a device's references is bounded so that no run can take days (the kernel warns every 10 s and never gives up; a reference held a day is a leak either way)", maxWait, g.giveUp)
	}
	if g.netns == "" {
		return ndst.Usagef("--netns must not be empty (the default is ndst)")
	}
	if g.waitLock < 0 || g.waitLock > maxWait {
		return ndst.Usagef("--wait-lock: at most %v and not negative, got %v", maxWait, g.waitLock)
	}
	if err := g.checkParams(cmd); err != nil {
		return err
	}
	if err := g.checkApplicable(cmd); err != nil {
		return err
	}
	return g.applyMachine(cmd)
}

// checkParams parses --param (the line's own checks come when the emulated
// kernel is built) and refuses one that contradicts --hz or --preempt.
func (g *globalOptions) checkParams(cmd *cobra.Command) error {
	l, err := knob.ParseAssignments(g.params)
	if err != nil {
		return ndst.Usagef("%v", err)
	}
	for _, a := range l {
		switch a.Def.Name {
		case knob.ConfigHZ:
			if f := cmd.Flags().Lookup("hz"); f != nil && f.Changed && f.Value.String() != a.Value.String() {
				return ndst.Usagef("--param %s contradicts --hz %s (give one of them)", a.Given, f.Value)
			}
		case knob.PreemptMode:
			if f := cmd.Flags().Lookup("preempt"); f != nil && f.Changed && f.Value.String() != a.Value.String() && f.Value.String() != "rt" {
				return ndst.Usagef("--param %s contradicts --preempt %s (give one of them)", a.Given, f.Value)
			}
		}
	}
	return nil
}
