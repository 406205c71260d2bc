package knob

import (
	"math"
	"strings"
)

// The knobs, each as the kernel defines it (types and files read in 5.10,
// 6.1, 6.6, 6.12 and 6.18: kernel/rcu/update.c, kernel/ksysfs.c,
// kernel/rcu/tree.c, kernel/rcu/tree_nocb.h, net/core/sysctl_net_core.c,
// kernel/ucount.c, kernel/sched/core.c). Which line has which, and its
// default there, is in netdev/knob_lines.go.

// Names of the knobs, for the code that applies them.
const (
	RCUExpedited       = "rcupdate.rcu_expedited"
	RCUNormal          = "rcupdate.rcu_normal"
	RCUNormalAfterBoot = "rcupdate.rcu_normal_after_boot"
	FirstFQS           = "rcutree.jiffies_till_first_fqs"
	NextFQS            = "rcutree.jiffies_till_next_fqs"
	SchedQS            = "rcutree.jiffies_till_sched_qs"
	Blimit             = "rcutree.blimit"
	QHiMark            = "rcutree.qhimark"
	QLowMark           = "rcutree.qlowmark"
	Divisor            = "rcutree.rcu_divisor"
	ReschedNS          = "rcutree.rcu_resched_ns"
	UseSoftirq         = "rcutree.use_softirq"
	WakeFromGP         = "rcutree.rcu_normal_wake_from_gp"
	EnableLazy         = "rcutree.enable_rcu_lazy"
	NoCBs              = "rcu_nocbs"
	NohzFull           = "nohz_full"
	PreemptMode        = "preempt"
	UnregisterTimeout  = "net.core.netdev_unregister_timeout_secs"
	MaxNetNamespaces   = "user.max_net_namespaces"
	ConfigHZ           = "CONFIG_HZ"
	ConfigNoCB         = "CONFIG_RCU_NOCB_CPU"
	ConfigLazy         = "CONFIG_RCU_LAZY"
)

const (
	sysKernel = "/sys/kernel/"
	rcupdateP = "/sys/module/rcupdate/parameters/"
	rcutreeP  = "/sys/module/rcutree/parameters/"
)

const ipiCost = "every expedited grace period sends an IPI to each CPU that is not idle, interrupting whatever runs there (real-time latency); RCU uses more CPU time"

// Catalog is every knob, in the order `ndst profiles --knobs` lists them.
var Catalog = []*Def{
	{Name: RCUExpedited, Path: sysKernel + "rcu_expedited", Aliases: []string{rcupdateP + "rcu_expedited"},
		Kind: Runtime, Type: Int, Min: math.MinInt32, Max: math.MaxInt32,
		Range: "an int (0 off, anything else on)",
		What:  "every synchronize_rcu() waits for an expedited grace period instead of a normal one (rcu_gp_is_expedited); rcu_barrier() and call_rcu() are not affected",
		Cost:  ipiCost},
	{Name: RCUNormal, Path: sysKernel + "rcu_normal", Aliases: []string{rcupdateP + "rcu_normal"},
		Kind: Runtime, Type: Int, Min: math.MinInt32, Max: math.MaxInt32,
		Range:   "an int (0 off, anything else on)",
		What:    "every synchronize_rcu_expedited() waits for a normal grace period instead (rcu_gp_is_normal); it wins over rcu_expedited",
		Cost:    "no expedited IPIs (what real-time systems want), but each expedited caller (synchronize_net under RTNL) waits milliseconds instead of microseconds",
		CostOff: "expedited grace periods come back: " + ipiCost},
	{Name: RCUNormalAfterBoot, Path: rcupdateP + "rcu_normal_after_boot",
		Kind: Boot, Type: Int, Min: math.MinInt32, Max: math.MaxInt32,
		Range:   "an int (0 off, anything else on)",
		What:    "rcu_normal is set to 1 when boot ends (rcu_end_inkernel_boot); PREEMPT_RT kernels default it on",
		Cost:    "as rcu_normal: no expedited IPIs, slower expedited callers",
		CostOff: "expedited grace periods come back after boot: " + ipiCost},
	{Name: FirstFQS, Path: rcutreeP + "jiffies_till_first_fqs", Kind: Runtime, Type: Int, Min: 0, Max: math.MaxInt64,
		Unit: "jiffies", Range: "0..ULONG_MAX jiffies (the kernel caps it at HZ)",
		What: "jiffies from a grace period's start to its first force-quiescent-state scan, which reports idle CPUs (0: scan at once)",
		Cost: "a smaller value wakes the grace-period kthread sooner and more often (CPU time, wakeups of idle CPUs' state)"},
	{Name: NextFQS, Path: rcutreeP + "jiffies_till_next_fqs", Kind: Runtime, Type: Int, Min: 0, Max: math.MaxInt64,
		Unit: "jiffies", Range: "0..ULONG_MAX jiffies (the kernel takes 0 as 1 and caps it at HZ)",
		What: "jiffies between later force-quiescent-state scans of a grace period",
		Cost: "a smaller value wakes the grace-period kthread more often"},
	{Name: SchedQS, Path: rcutreeP + "jiffies_till_sched_qs", Kind: Boot, Type: Int, Min: 0, Max: math.MaxInt64,
		Unit: "jiffies", Range: "0..ULONG_MAX jiffies",
		What: "jiffies into a grace period before RCU asks CPUs that hold it up to reschedule (default: first + 2*next FQS, at least HZ/10)",
		Cost: "a smaller value forces reschedules of busy CPUs sooner (latency of whatever runs there)"},
	{Name: Blimit, Path: rcutreeP + "blimit", Kind: Boot, Type: Int, Min: 1, Max: math.MaxInt64,
		Unit: "callbacks", Range: "1..LONG_MAX callbacks (the kernel takes any long; below 1 is not modelled)",
		What: "callbacks invoked per softirq batch (rcu_do_batch), before later lines' rcu_divisor share",
		Cost: "a larger value keeps a CPU longer in softirq when many callbacks are ready (latency)"},
	{Name: QHiMark, Path: rcutreeP + "qhimark", Kind: Boot, Type: Int, Min: 1, Max: math.MaxInt64,
		Unit: "callbacks", Range: "1..LONG_MAX callbacks (the kernel takes any long; below 1 is not modelled)",
		What: "queued callbacks above which a CPU lifts its batch limit",
		Cost: "a smaller value makes callback floods run in longer softirq batches sooner"},
	{Name: QLowMark, Path: rcutreeP + "qlowmark", Kind: Boot, Type: Int, Min: 0, Max: math.MaxInt64,
		Unit: "callbacks", Range: "0..LONG_MAX callbacks (the kernel takes any long)",
		What: "queued callbacks at or below which the batch limit returns to blimit",
		Cost: "none worth naming"},
	{Name: Divisor, Path: rcutreeP + "rcu_divisor", Kind: Runtime, Type: Int, Min: math.MinInt32, Max: math.MaxInt32,
		Range: "an int (the kernel takes a negative value as 7 and caps it at 62)",
		What:  "a softirq batch invokes at least the queued callbacks >> rcu_divisor",
		Cost:  "a smaller value means longer softirq batches under load"},
	{Name: ReschedNS, Path: rcutreeP + "rcu_resched_ns", Kind: Runtime, Type: Int, Min: math.MinInt64, Max: math.MaxInt64,
		Unit: "ns", Range: "a long (the kernel keeps it within 1 ms..1 s)",
		What: "a callback batch stops after this long once its limit exceeds 100",
		Cost: "a larger value keeps a CPU in softirq longer"},
	{Name: UseSoftirq, Path: rcutreeP + "use_softirq", Kind: Boot, Type: Bool,
		What: "RCU's core work runs in RCU_SOFTIRQ (1) or in per-CPU rcuc kthreads (0; PREEMPT_RT's default)",
		Cost: "0 adds a context switch to every RCU core pass; with RCU_BOOST the kthreads are real-time"},
	{Name: WakeFromGP, Path: rcutreeP + "rcu_normal_wake_from_gp", Kind: Runtime, Type: Int, Min: math.MinInt32, Max: math.MaxInt32,
		Range: "an int (6.10-6.16: nonzero on; 6.17 on: 1 or more on, -1 the default that turns on at boot with at most 16 CPUs)",
		What:  "a normal synchronize_rcu() starts its grace period at once and is woken by the grace-period kthread when it ends, instead of waiting for a callback",
		Cost:  "the grace-period kthread does the wakeups (up to 5 inline, the rest from a workqueue); more grace periods started on demand"},
	{Name: EnableLazy, Path: rcutreeP + "enable_rcu_lazy", Kind: Boot, Type: Bool,
		What: "call_rcu() on an offloaded CPU may hold callbacks back up to 10 s to batch them (CONFIG_RCU_LAZY); call_rcu_hurry() never does",
		Cost: "0 gives up lazy RCU's power saving (fewer grace periods, fewer wakeups on idle machines)"},
	{Name: NoCBs, Path: "", Kind: Boot, Type: CPUList,
		What: "these CPUs' callbacks are offloaded: rcuog kthreads wait for their grace periods and rcuo kthreads invoke them (CONFIG_RCU_NOCB_CPU)",
		Cost: "two more kthreads per offloaded CPU group, and callback invocation competes with ordinary tasks for CPU time; needed for lazy RCU"},
	{Name: NohzFull, Path: "/sys/devices/system/cpu/nohz_full", Kind: Boot, Type: CPUList,
		What: "adaptive-tick CPUs; they are offloaded as with rcu_nocbs (the model does not stop the tick of a busy nohz_full CPU)",
		Cost: "system calls and scheduling cost more on those CPUs (context tracking); housekeeping work moves to the other CPUs"},
	{Name: PreemptMode, Path: "/sys/kernel/debug/sched/preempt", Kind: Boot, Type: Choice,
		Choices: []string{"none", "voluntary", "full", "lazy"},
		What:    "the preemption model of a PREEMPT_DYNAMIC kernel (a PREEMPT_RT one from 6.13: full or lazy); its RCU stays preemptible RCU whatever the mode (a run-time change goes through debugfs)",
		Cost:    "full preemption adds preemption points (throughput); lazy defers an ordinary task's preemption to the next tick; none lets kernel work delay wakeups (latency)"},
	{Name: UnregisterTimeout, Path: "/proc/sys/net/core/netdev_unregister_timeout_secs",
		Kind: Runtime, Type: Int, Min: 1, Max: 3600, Unit: "s",
		What: "seconds between the \"waiting for DEV to become free\" warnings of the unregister wait loop; it changes nothing else",
		Cost: "none; only the warning cadence"},
	{Name: MaxNetNamespaces, Path: "/proc/sys/user/max_net_namespaces",
		Kind: Runtime, Type: Int, Min: 0, Max: math.MaxInt32, Unit: "namespaces",
		What: "network namespaces a user namespace may hold, counting those still waiting for cleanup_net; creating one more fails with ENOSPC",
		Cost: "a smaller value makes creates fail while the cleanup is behind"},
	{Name: ConfigHZ, Kind: Build, Type: Int, Min: 1, Max: 10000, Unit: "Hz",
		Range: "1..10000 Hz (Kconfig offers 100, 250, 300 and 1000)",
		What:  "the tick rate: every jiffy-based wait (grace-period scans, msleep, the wait loop's backoff) scales with it",
		Cost:  "a higher HZ costs more timer interrupts (CPU time, power)"},
	{Name: ConfigNoCB, Kind: Build, Type: Bool,
		What: "the kernel can offload callbacks (rcu_nocbs=, nohz_full=)",
		Cost: "none until CPUs are offloaded"},
	{Name: ConfigLazy, Kind: Build, Type: Bool,
		What: "call_rcu() on offloaded CPUs may be lazy (needs CONFIG_RCU_NOCB_CPU)",
		Cost: "callbacks of offloaded CPUs may wait up to 10 s unless flushed"},
}

// Lookup finds a knob by name, alias or file; nil when there is none.
func Lookup(name string) *Def {
	for _, d := range Catalog {
		if d.Name == name || (d.Path != "" && d.Path == name) {
			return d
		}
		for _, a := range d.Aliases {
			if a == name {
				return d
			}
		}
	}
	// A sysctl by its /proc/sys path.
	if rest, ok := strings.CutPrefix(name, "/proc/sys/"); ok {
		return Lookup(strings.ReplaceAll(rest, "/", "."))
	}
	return nil
}

// MustLookup is Lookup for the catalogue's own names.
func MustLookup(name string) *Def {
	d := Lookup(name)
	if d == nil {
		panic("knob: no knob " + name)
	}
	return d
}
