package netdev

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Kernel lines. Each line is the previous one plus named changes to the
// teardown path, RCU or the scheduler, each with its commit (abbreviated id;
// "" where the id could not be confirmed from a source, or where the change
// is a distribution's configuration rather than a commit), its first
// release, and what it changes in the model. The facts and their sources are in
// docs/kernel-2.6-sources.md and docs/kernel-modern-sources.md.

// Change is one behaviour change of the teardown path, as the model applies
// it to the previous line.
type Change struct {
	Commit  string // abbreviated commit id
	Release string // first release that has it
	Title   string // the commit's subject
	Effect  string // what changes in the model
	apply   func(*Profile)
}

// base is 2.6.31, the line of the 2009 experiment's default configuration
// (docs/kernel-2.6-sources.md §1, §2, §4-§6, read at 2.6.31.14).
func base() Profile {
	return Profile{
		Name: "2.6.31",
		// rollback_registered per device: synchronize_net, NETDEV_UNREGISTER,
		// synchronize_net, dev_put; netdev_run_todo waits for refcount 0
		// with the msleep(250) loop.
		SyncNetPerUnregister: 2,
		ReadyRefcount:        0,
		DefaultStrategy:      "msleep250",
		// Notifier order: devinet (arp_parms, in_device), then addrconf
		// (nd_parms, inet6_dev).
		Subsystems: []Subsystem{
			{Holder: HolderARPParms, Release: ReleaseAtUnregister, RCUFrees: 1,
				Source: "2.6.31 net/core/neighbour.c neigh_parms_release: dev_put at once, memory by call_rcu"},
			{Holder: HolderIPv4, Release: ReleaseRCU,
				Source: "2.6.31 net/ipv4/devinet.c inetdev_destroy: call_rcu(in_dev_rcu_put)"},
			{Holder: HolderNDParms, Release: ReleaseAtUnregister, RCUFrees: 1,
				Source: "2.6.31 net/ipv6/addrconf.c addrconf_ifdown -> neigh_parms_release"},
			{Holder: HolderIPv6, Release: ReleaseAtUnregister, RCUFrees: 1,
				Source: "2.6.31 net/ipv6/addrconf.c addrconf_ifdown -> in6_dev_finish_destroy: dev_put at once, kfree by call_rcu"},
		},
		FibFlush: FibFlushPerEvent,
		RCUs: []RCUChoice{
			{Name: "tree", Config: "CONFIG_TREE_RCU (the default, 31c9a24ec829)"},
			{Name: "classic", Config: "CONFIG_CLASSIC_RCU"},
		},
		TreeExpedited: rcu.ExpNone,
		UPShortcut:    true, // rcu_blocking_is_gp: num_online_cpus() == 1
		RCUStall:      0,    // CONFIG_RCU_CPU_STALL_DETECTOR defaults to n
		Timers:        sim.TimerCascade,
		Lockup:        60 * sim.Second, // softlockup_thresh
		LockupDesign:  sim.LockupTick,  // softlockup_tick in every tick
	}
}

// history lists the lines after base, each with its changes.
var history = []struct {
	name    string
	changes []Change
}{
	{"2.6.32", []Change{
		{"c17ef45342cc", "2.6.32", "rcu: Remove Classic RCU",
			"--rcu classic is gone", func(p *Profile) { p.RCUs = withoutRCU(p.RCUs, "classic") }},
		{"f41d911f8c49", "2.6.32", "rcu: Merge preemptable-RCU functionality into hierarchical RCU",
			"--rcu tree-preempt (TREE_PREEMPT_RCU, needs CONFIG_PREEMPT)", func(p *Profile) {
				p.RCUs = append(p.RCUs, RCUChoice{Name: "tree-preempt", Config: "CONFIG_TREE_PREEMPT_RCU", Requires: "CONFIG_PREEMPT"})
			}},
		{"03b042bf1dc1", "2.6.32", "rcu: Add synchronize_sched_expedited() primitive",
			"synchronize_rcu_expedited exists: empty on UP, migration threads on SMP", func(p *Profile) { p.TreeExpedited = rcu.ExpMigration }},
	}},
	{"2.6.33", []Change{
		{"9b5e383c11b0", "2.6.33", "net: Introduce unregister_netdevice_many()",
			"one rollback_registered_many and one netdev_run_todo per batch (two synchronize_net a batch)", func(p *Profile) { p.Batched = true }},
		{"", "2.6.33", "ipv4: flush the route cache once per unregister batch",
			"rt_do_flush (a cond_resched point) once per batch, not in every NETDEV_UNREGISTER", func(p *Profile) { p.FibFlush = FibFlushPerBatch }},
		{"", "2.6.33", "rcu: RCU_CPU_STALL_DETECTOR defaults to y",
			"the RCU CPU stall warning at 10 s, then every 30 s", func(p *Profile) {
				p.RCUStall, p.RCUStallRepeat = 10*sim.Second, 30*sim.Second
			}},
		{"", "2.6.33", "rcu: GP end starts the next GP before advancing the ending CPU's callbacks",
			"Tree RCU: a GP end with callbacks queued on the reporting CPU starts one more GP, even when they all waited for the GP just ended (read at 2.6.33.3 kernel/rcutree.c l.172-175, l.626-757; the commit was not identified: no 2.6.33 history)", func(p *Profile) {
				p.GPEndBeforeAdvance = true
			}},
		{"9b1d82fa1611", "2.6.33", "rcu: \"Tiny RCU\", The Bloatwatch Edition",
			"--rcu tiny (TINY_RCU, !SMP)", func(p *Profile) {
				p.RCUs = append(p.RCUs, RCUChoice{Name: "tiny", Config: "CONFIG_TINY_RCU", Requires: "!SMP"})
			}},
	}},
	{"2.6.36", []Change{
		{"ef885afbf8a3", "2.6.36", "net: use rcu_barrier() in rollback_registered_many",
			"rcu_barrier() instead of the second synchronize_net, before the registration puts", func(p *Profile) {
				p.BarrierBeforePut = true
			}},
	}},
	{"5.10", to510},
	{"5.15", []Change{
		{"add2d7363107", "5.13", "net: set initial device refcount to 1",
			"a device is ready at refcount 1: its own reference, dropped by free_netdev", func(p *Profile) { p.ReadyRefcount = 1 }},
	}},
	{"6.1", []Change{
		{"faab39f63c1f", "5.18", "net: allow out-of-order netdev unregistration",
			"netdev_wait_allrefs_any: devices are freed in the order they become ready", func(p *Profile) { p.FreeInReadyOrder = true }},
		{"258f887aba60", "6.1", "rcu: Disable run-time single-CPU grace-period optimization",
			"synchronize_rcu[_expedited] wait for a real grace period on one CPU too", func(p *Profile) { p.UPShortcut = false }},
		{"", "6.1-rt", "softirq: Use a dedicated thread for timer wakeups (RT patch queue)",
			"--preempt rt: expired timers run in the ktimers/N thread (SCHED_FIFO) instead of ksoftirqd (Debian 6.1.176-1 debian/patches-rt/0012, rt commit 0f7755153711; 5.10-rt has no such thread)", func(p *Profile) {
				p.RTTimerThread = true
			}},
		{"", "6.1", "Debian's configuration, not a kernel commit: Debian builds PREEMPT_DYNAMIC",
			"preemptible RCU even when booted with preempt=none (the default --rcu tree-preempt); a tick in kernel code outside a reader is a QS", func(p *Profile) {
				p.PreemptCount = true
				p.RCUs = []RCUChoice{
					{Name: "tree-preempt", Config: "CONFIG_PREEMPT_RCU (PREEMPT_DYNAMIC, Debian's build)"},
					{Name: "tree", Config: "CONFIG_TREE_RCU, a build without PREEMPT_RCU", Requires: "!PREEMPT"},
					{Name: "tiny", Config: "CONFIG_TINY_RCU", Requires: "!SMP, !PREEMPT"},
				}
			}},
	}},
	{"6.6", []Change{
		{"9d40c84cf5bc", "6.2", "net: devinet: Reduce refcount before grace period",
			"the in_device drops its device reference at once; only its memory waits for call_rcu", func(p *Profile) {
				for i := range p.Subsystems {
					if p.Subsystems[i].Holder == HolderIPv4 {
						p.Subsystems[i] = Subsystem{Holder: HolderIPv4, Release: ReleaseAtUnregister, RCUFrees: 1,
							Source: "6.6 net/ipv4/devinet.c inetdev_destroy: in_dev_put, memory by call_rcu(in_dev_free_rcu)"}
					}
				}
			}},
		{"d15121be7485", "6.5", "Revert \"softirq: Let ksoftirqd do its job\"",
			"interrupt exit runs pending softirqs even when ksoftirqd is runnable", func(p *Profile) { p.DeferToKsoftirqd = false }},
		{"253cbbff6214", "6.3", "rcu: Throttle callback invocation based on number of ready callbacks",
			"the batch limit is max(blimit, ready >> rcu_divisor)", func(p *Profile) { p.DivisorOfAll = false }},
	}},
	{"6.12", []Change{
		{"(not identified)", "6.12", "rcu: expedited grace periods run in the rcu_exp_gp_kthread_worker kthread",
			"synchronize_rcu_expedited queues its grace period on one kthread worker not bound to a CPU, whatever the configuration (6.12.19 kernel/rcu/tree_exp.h l.486-490, tree.c l.4939-4952), where 6.1 queued it on the per-CPU rcu_gp workqueue of the caller's CPU (6.1 tree_exp.h l.524-528, tree.c l.4871): the scheduler places the worker on an idle CPU while the caller runs, and it wakes the caller back on the caller's idle CPU, two wake-ups of an idle CPU from another per expedited grace period on a machine with one (rcu/expworker.go)", func(p *Profile) {
				p.ExpKthreadWorker = true
			}},
		{"4381b895f544", "6.12", "timers: Remove historical extra jiffie for timeout in msleep()",
			"msleep(ms) sleeps msecs_to_jiffies(ms): each backoff sleep one jiffy shorter", func(p *Profile) { p.MsleepExact = true }},
		{"c4e86b4363ac", "6.10", "net: add two more call_rcu_hurry()",
			"the route releases of an up loopback (free_fib_info_rcu, nexthop_free_rcu; fib6_info_release from b5327b9a300e) use call_rcu_hurry(): never held back by lazy RCU", func(p *Profile) {
				p.RouteReleaseHurry = true
			}},
		{"", "6.12-rt", "Debian's configuration, not a kernel commit: Debian 6.12's RT build is PREEMPT_DYNAMIC with PREEMPT_LAZY",
			"--preempt rt boots lazy (its ordinary tasks preempted at the next tick, sim/lazy.go) and takes preempt=full or lazy: the 6.12.118-1 rt config has PREEMPT_RT, PREEMPT_DYNAMIC, PREEMPT_LAZY and ARCH_HAS_PREEMPT_LAZY (the 6.13 series carried in its RT patch queue), and its guest logs \"Dynamic Preempt: lazy\" (/sys/kernel/debug/sched/preempt: \"full (lazy) laziest\"; laziest, the queue's own mode, is not modelled)", func(p *Profile) {
				p.RTDynamic, p.RTLazy = true, true
			}},
	}},
	{"6.18", []Change{
		{"7c70cb94d29c", "6.13", "sched: Add Lazy preemption model",
			"--preempt lazy (x86: 476e8583ca16 \"sched, x86: Enable Lazy preemption\"): an ordinary task woken where another runs sets only the lazy flag, honoured at the return to user mode and made a full reschedule by the next tick (sim/lazy.go); a real-time wakeup preempts at once. A PREEMPT_RT build may be PREEMPT_DYNAMIC (35772d627b55), booted full or lazy (preempt=); the 6.18 RT build's model was not read: full", func(p *Profile) {
				p.PreemptLazy, p.RTDynamic, p.RTLazy = true, true, false
				p.PreemptNote = "6.18 kernel/Kconfig.preempt l.75-79, kernel/sched/core.c l.7638-7657"
			}},
		{"a7f6af1322ad", "6.17", "rcu: Enable rcu_normal_wake_from_gp on small systems",
			"with at most 16 CPUs a normal synchronize_rcu() starts its grace period at once and is woken at its end (rcu_normal_wake_from_gp, 988f569ae041 in 6.10, default off until here)", func(p *Profile) {
				p.WakeFromGPSmall = true
			}},
		{"88df16f851ad", "6.14", "net: sched: calls synchronize_net() only when needed",
			"dev_deactivate_many syncs only when a qdisc that can enqueue was deactivated: none for a down device (2 synchronize_net a batch, not 3)", func(p *Profile) {
				p.SyncNetInClose = false
			}},
	}},
	{"7.2", to72},
}

// to72 is 7.2 as read in Debian sid's linux-source-7.2 7.2.13-1 (the source
// of the sid kernel the VM rig boots), against 6.18.19. The commits were not
// identified (no history of 7.x was read): each change cites the 7.2.13
// file and line, "7.x" stands for the release between 6.19 and 7.2 that
// brought it, and a title is the posted patch's subject where one was read,
// else what the change does.
var to72 = []Change{
	{"(not found)", "7.x", "rcu: Reduce synchronize_rcu() latency by reporting GP kthread's CPU QS early",
		"rcu_gp_init reports the GP kthread's own CPU's quiescent state (rcu_qs + rcu_report_qs_rdp), so on an idle machine the first FQS scan's snapshot ends the GP instead of a second scan (7.2.13 kernel/rcu/tree.c l.2015-2024; Joel Fernandes's patch of that title, as in paulmck/linux-rcu's dev branch)", func(p *Profile) {
			p.GPInitSelfQS = true
		}},
	{"(not found)", "7.x", "rcu_normal_wake_from_gp on by default, latched back at 64 callers in flight",
		"a normal synchronize_rcu() starts its GP at once and is woken by the GP kthread on every machine (rcu_normal_wake_from_gp = 1; the 6.17 rule of at most 16 CPUs is gone from rcu_init), until 64 callers are in flight (RCU_SR_NORMAL_LATCH_THR): from the 64th the next ones take the callback wait until every one queued has been woken (7.2.13 kernel/rcu/tree.c l.1632-1663, l.1806-1827, l.3305-3338)", func(p *Profile) {
			p.WakeFromGPAll, p.WakeFromGPLatch = true, 64
		}},
	{"(not found)", "7.x", "no PREEMPT_NONE or PREEMPT_VOLUNTARY where the architecture has lazy preemption (x86)",
		"--preempt none and voluntary are refused: PREEMPT_NONE depends on ARCH_NO_PREEMPT and PREEMPT_VOLUNTARY on !ARCH_HAS_PREEMPT_LAZY (x86 selects it), the default model is PREEMPT_LAZY, and sched_dynamic_mode takes none and voluntary only without PREEMPT_RT and ARCH_HAS_PREEMPT_LAZY, so preempt=none boots lazy after \"Dynamic Preempt: unsupported mode: none\" (7.2.13 kernel/Kconfig.preempt l.17-43, l.78-90; kernel/sched/core.c l.7977-7995; Debian 7.2.13's config: PREEMPT_LAZY, PREEMPT_DYNAMIC). Its RT build boots full (Debian 7.2.13-rt: CONFIG_PREEMPT=y, PREEMPT_DYNAMIC, no PREEMPT_LAZY) and takes preempt=lazy", func(p *Profile) {
			p.NoNoneVoluntary, p.RTDynamic, p.RTLazy = true, true, false
			p.PreemptNote = "7.2.13 kernel/Kconfig.preempt l.22-43, kernel/sched/core.c l.7977-7995"
		}},
	{"(not found)", "7.x", "HRTICK on with CONFIG_HRTIMER_REARM_DEFERRED",
		"the HRTICK feature is on (CONFIG_HRTIMER_REARM_DEFERRED, y in Debian 7.2.13): while another ordinary task waits, the running one's slice ends at its deadline by a high-resolution timer that reschedules at once, not at the next tick (7.2.13 kernel/sched/features.h l.68-74, fair.c hrtick_start_fair l.7873-7907, entity_tick l.6650-6658; sim/hrtick.go)", func(p *Profile) {
			p.HRTick = true
		}},
}

// to510 brings 2.6.36 to 5.10, the oldest long-term line modelled after it.
var to510 = []Change{
	{"9d659ae14b54", "4.10", "locking/mutex: Add lock handoff to avoid starvation",
		"a mutex's first waiter that finds the lock taken when it wakes has the next unlock hand it over: RTNL passes over a waiter at most once (read in 5.10 and 6.18 kernel/locking/mutex.c, __mutex_trylock_or_handoff and __mutex_handoff; the commit id and release are from its follow-up e274795ea7b7, not from a history-bearing tree)", func(p *Profile) { p.MutexHandoff = true }},
	{"89aef8921bfb", "3.6", "ipv4: Delete routing cache.",
		"no route-cache flush (and its cond_resched) in unregister", func(p *Profile) { p.FibFlush = FibFlushNone }},
	{"0115e8e30d6f", "3.5", "net: remove delay at device dismantle",
		"the rcu_barrier moves to netdev_run_todo, after RTNL is dropped; both synchronize_net stay in unregister", func(p *Profile) {
			p.BarrierBeforePut, p.BarrierInRunTodo = false, true
		}},
	{"be3fc413da9e", "before 5.10", "net: use synchronize_rcu_expedited()",
		"synchronize_net is expedited while RTNL is held (rtnl_is_locked(), read in 5.10 net/core/dev.c l.10664-10671; the commit's release was not confirmed from a history-bearing tree)", func(p *Profile) { p.SyncNetExpedited = true }},
	{"", "5.10", "net: dev_deactivate_many synchronizes unconditionally",
		"closing the devices adds one synchronize_net, even for down devices (3 a batch)", func(p *Profile) { p.SyncNetInClose = true }},
	{"755609a9087f", "3.7", "rcu: Move RCU grace-period initialization into a kthread",
		"GPs asked for from the softirq and started, scanned and ended by the unbound GP kthread (with jiffies_till_first/next_fqs, rcu_do_batch's rcu_divisor and rcu_resched_ns, rcu_barrier entraining)", func(p *Profile) {
			p.ModernRCU = true
			p.TreeExpedited = rcu.ExpIPI
			p.UPShortcut = true // rcu_blocking_is_gp on one CPU without PREEMPTION
			p.DivisorOfAll = true
			p.RCUs = []RCUChoice{
				{Name: "tree", Config: "CONFIG_TREE_RCU (Debian's PREEMPT_VOLUNTARY build)"},
				{Name: "tree-preempt", Config: "CONFIG_PREEMPT_RCU", Requires: "CONFIG_PREEMPT"},
				{Name: "tiny", Config: "CONFIG_TINY_RCU", Requires: "!SMP, !PREEMPT"},
			}
			p.RCUStall, p.RCUStallRepeat = 21*sim.Second, 0
		}},
	{"c10d73671ad3", "3.9", "softirq: reduce latencies",
		"__do_softirq stops restarting after MAX_SOFTIRQ_TIME (2 ms) or when a reschedule is pending", func(p *Profile) {
			p.SoftirqTime, p.SoftirqResched = 2*sim.Millisecond, true
		}},
	{"4cd13c21b207", "4.9", "softirq: Let ksoftirqd do its job",
		"interrupt exit leaves pending softirqs to ksoftirqd when it is runnable", func(p *Profile) { p.DeferToKsoftirqd = true }},
	{"500462a9de65", "4.8", "timers: Switch to a non-cascading wheel",
		"a timer fires at its level's bucket boundary above the expiry: a 1-jiffy timeout two ticks later", func(p *Profile) {
			p.Timers = sim.TimerLevels
		}},
	{"58687acba592", "2.6.36", "lockup_detector: Combine nmi_watchdog and softlockup detector",
		"kernel/watchdog.c as read at 5.10 and 6.18: the threshold is 2*watchdog_thresh (20 units of 2^30 ns), checked from a per-CPU hrtimer every 4 s that queues the watchdog work: reports at 22-26 s (the model's 2.6.36 line keeps 2.6.35's softlockup.c, whose successor was not read at 2.6.36)", func(p *Profile) {
			p.Lockup, p.LockupDesign = 20*sim.Second, sim.LockupSampled
		}},
	{"", "5.10", "net: the wait loop's rebroadcast waits in rcu_barrier() between its NETDEV_UNREGISTER and linkwatch passes",
		"each rebroadcast: NETDEV_UNREGISTER under RTNL, RTNL dropped, rcu_barrier(), RTNL again for a pending linkwatch event (read in 5.10 net/core/dev.c l.10479-10499, 6.1 l.10495-10518, 6.18 l.11649-11672; the introducing commit was not identified)", func(p *Profile) {
			p.RebroadcastBarrier = true
		}},
	{"0e4be9e57e8c", "5.10", "net: use exponential backoff in netdev_wait_allrefs",
		"the wait loop: rcu_barrier, then sleeps of 1, 2, 4 ... 250 ms (rcu_barrier on every pass from cd42ba1c8ac9's stable backport)", func(p *Profile) {
			p.DefaultStrategy = "backoff"
		}},
}

// DefaultProfile is the line the 2009 experiment ran: synchronize_rcu_expedited
// first shipped in 2.6.32, so the published expedited row needs it (and
// Classic RCU was gone there); its teardown path is 2.6.31's.
const DefaultProfile = "2.6.32"

// Profiles are the built-in kernel lines, by name.
var Profiles = map[string]Profile{}

// ProfileNames lists the lines in release order.
var ProfileNames []string

func init() {
	p := base()
	p.Netns = netnsBase()
	p.Knobs = knobsFor(p.Name, nil)
	Profiles[p.Name] = p
	ProfileNames = append(ProfileNames, p.Name)
	for _, l := range history {
		p = clone(p)
		p.Name = l.name
		p.Changes = append(l.changes[:len(l.changes):len(l.changes)], netnsChanges[l.name]...)
		p.Changes = append(p.Changes, addrChanges[l.name]...)
		for _, c := range p.Changes {
			c.apply(&p)
		}
		p.Knobs = knobsFor(p.Name, p.Knobs)
		Profiles[p.Name] = p
		ProfileNames = append(ProfileNames, p.Name)
	}
}

func clone(p Profile) Profile {
	p.Subsystems = append([]Subsystem(nil), p.Subsystems...)
	p.RCUs = append([]RCUChoice(nil), p.RCUs...)
	p.Knobs = append([]LineKnob(nil), p.Knobs...)
	p.Changes = nil
	return p
}

func withoutRCU(l []RCUChoice, name string) []RCUChoice {
	var out []RCUChoice
	for _, c := range l {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// LookupProfile returns the named line.
func LookupProfile(name string) (Profile, error) {
	p, ok := Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames, ", "))
	}
	return p, nil
}
