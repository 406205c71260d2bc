package netdev

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Kernel lines. Each line is the previous one plus named changes to the
// teardown path, RCU or the scheduler, each with its commit (abbreviated id;
// "" where the id could not be read in a mirror), its first release, and
// what it changes in the model. The facts and their sources are in
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
		RCUStall:      0, // CONFIG_RCU_CPU_STALL_DETECTOR defaults to n
		Timers:        sim.TimerCascade,
		Lockup:        60 * sim.Second, // softlockup_thresh
		LockupKick:    30 * sim.Second, // the tick wakes the thread at thresh/2
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
		{"", "2.6.33", "net: Introduce unregister_netdevice_many()",
			"one rollback_registered_many and one netdev_run_todo per batch (two synchronize_net a batch)", func(p *Profile) { p.Batched = true }},
		{"", "2.6.33", "ipv4: flush the route cache once per unregister batch",
			"rt_do_flush (a cond_resched point) once per batch, not in every NETDEV_UNREGISTER", func(p *Profile) { p.FibFlush = FibFlushPerBatch }},
		{"", "2.6.33", "rcu: RCU_CPU_STALL_DETECTOR defaults to y",
			"the RCU CPU stall warning at 10 s, then every 30 s", func(p *Profile) {
				p.RCUStall, p.RCUStallRepeat = 10*sim.Second, 30*sim.Second
			}},
		{"", "2.6.33", "rcu: \"Tiny RCU\", The Bloatwatch Edition",
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
	{"6.18", modernChanges},
}

// modernChanges bring 2.6.36 to 6.18.
var modernChanges = []Change{
	{"", "3.x", "rcu: the grace-period kthread drives grace periods",
		"GPs asked for from the softirq and started, scanned and ended by the unbound GP kthread; FQS after jiffies_till_first_fqs", func(p *Profile) {
			p.ModernRCU = true
			p.TreeExpedited = rcu.ExpIPI
			p.RCUs = []RCUChoice{
				{Name: "tree-preempt", Config: "CONFIG_PREEMPT_RCU (PREEMPT_DYNAMIC distribution kernels)"},
				{Name: "tree", Config: "CONFIG_TREE_RCU without PREEMPT_RCU", Requires: "!PREEMPT"},
				{Name: "tiny", Config: "CONFIG_TINY_RCU", Requires: "!SMP, !PREEMPT"},
			}
			p.RCUStall = 21 * sim.Second
		}},
	{"", "3.6", "ipv4: Kill routing cache",
		"no rt_do_flush in unregister", func(p *Profile) { p.FibFlush = FibFlushNone }},
	{"500462a9de65", "4.8", "timers: Switch to a non-cascading wheel",
		"timers fire at their level's bucket boundary above the expiry: a 1-jiffy timeout fires two ticks later", func(p *Profile) {
			p.Timers = sim.TimerLevels
		}},
	{"", "3.9", "softirq: reduce latencies",
		"__do_softirq stops restarting after MAX_SOFTIRQ_TIME (2 ms) or when a reschedule is pending", func(p *Profile) {
			p.SoftirqTime = 2 * sim.Millisecond
			p.SoftirqResched = true
		}},
	{"", "4.5", "watchdog: the soft-lockup threshold is 2*watchdog_thresh",
		"soft lockup at 20 s, the hrtimer kicks the stopper every 4 s", func(p *Profile) {
			p.Lockup, p.LockupKick = 20*sim.Second, 4*sim.Second
		}},
	{"", "4.x", "net: synchronize_net() expedited under RTNL",
		"both synchronize_net calls are expedited (RTNL is held)", func(p *Profile) { p.SyncNetExpedited = true }},
	{"", "4.x", "net: dev_deactivate_many synchronize_net",
		"closing the devices adds one synchronize_net", func(p *Profile) { p.SyncNetInClose = true }},
	{"", "4.x", "net: netdev_run_todo does rcu_barrier once per list",
		"the rcu_barrier moves from rollback_registered_many to netdev_run_todo", func(p *Profile) {
			p.BarrierBeforePut, p.BarrierInRunTodo = false, true
		}},
	{"", "4.15", "net: dev refcount ready at 1",
		"a device may be freed at refcount 1 (its own reference)", func(p *Profile) { p.ReadyRefcount = 1 }},
	{"0e4be9e57e8c", "5.8", "net: use exponential backoff in netdev_wait_allrefs",
		"the wait loop sleeps 1, 2, 4 ... 250 ms", func(p *Profile) { p.DefaultStrategy = "backoff" }},
	{"faab39f63c1f", "5.18", "net: allow out-of-order netdev unregistration",
		"netdev_wait_allrefs_any frees devices in the order they become ready", func(p *Profile) { p.FreeInReadyOrder = true }},
	{"", "6.13", "timers: Remove historical extra jiffie for timeout in msleep()",
		"msleep(ms) sleeps msecs_to_jiffies(ms)", func(p *Profile) { p.MsleepExact = true }},
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
	Profiles[p.Name] = p
	ProfileNames = append(ProfileNames, p.Name)
	for _, l := range history {
		p = clone(p)
		p.Name = l.name
		p.Changes = l.changes
		for _, c := range l.changes {
			c.apply(&p)
		}
		Profiles[p.Name] = p
		ProfileNames = append(ProfileNames, p.Name)
	}
}

func clone(p Profile) Profile {
	p.Subsystems = append([]Subsystem(nil), p.Subsystems...)
	p.RCUs = append([]RCUChoice(nil), p.RCUs...)
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
