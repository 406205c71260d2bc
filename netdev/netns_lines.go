package netdev

import (
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/sim"
)

// NetnsProfile is how a kernel line creates and destroys network
// namespaces (net/core/net_namespace.c, the device exits of net/core/dev.c).
// 2.6.31 is netnsBase; later lines change it through netnsChanges, merged
// into the lines' histories (lines.go). Sources: docs/netns-sources.md.
type NetnsProfile struct {
	// Batched: one cleanup_net work takes every namespace queued so far
	// (2b035b399707); otherwise each namespace has its own work item,
	// which the single-threaded netns workqueue runs one at a time.
	Batched bool
	// SyncAfterUnlist: cleanup_net waits one grace period after
	// unlisting the namespaces, before the exit methods (11a28d373ed2);
	// SyncExpedited makes it synchronize_rcu_expedited.
	SyncAfterUnlist, SyncExpedited bool
	// DeviceExitBatch: default_device_exit_batch unregisters every device
	// of the batch in one unregister_netdevice_many (2b035b399707);
	// otherwise default_device_exit gives each virtual device its own
	// unregister_netdevice under one RTNL hold per namespace, and
	// loopback_net_exit unregisters lo afterwards.
	DeviceExitBatch bool
	// DeviceExitPerNet: before the batch, default_device_exit runs for
	// each namespace with an rtnl_lock of its own (2.6.33 to 5.17).
	DeviceExitPerNet bool
	// NetMutex: setup_net and cleanup_net's exit phase both hold the one
	// net_mutex, so a namespace created while a cleanup runs waits for it;
	// later both take pernet_ops_rwsem for reading and do not wait.
	NetMutex bool
	// LoRoutesRCU: an up lo's routes drop their device references from
	// RCU callbacks (free_fib_info_rcu, fib6_info_destroy_rcu) instead of
	// at once.
	LoRoutesRCU bool
	// ExitCondResched: ops_exit_list calls cond_resched() after each
	// namespace's exit method.
	ExitCondResched bool
	// ExitRCUFrees is how many call_rcu callbacks one namespace's exit
	// methods queue to free memory, which the final rcu_barrier() waits
	// for (an estimate: the count is not derived, the wait is).
	ExitRCUFrees int
	// UmountSync is what deleting a namespace bound under /run/netns (as
	// `ip netns del` and ndst do) waits for before its last reference
	// drops: umount2(MNT_DETACH)'s namespace_unlock() waits for a grace
	// period before the final mntput of the nsfs mount. UmountNone: a line
	// without named namespaces (setns and the nsfs bind mount came with
	// 3.0), whose namespace dies with its last task.
	UmountSync UmountSync
	// VethQueueSync: veth_newlink ends with veth_init_queues for the
	// device and its peer, which cuts each one's transmit queues (one per
	// possible CPU, veth_get_num_queues) to one with
	// netif_set_real_num_tx_queues, and disabling queues of a registered
	// device waits in synchronize_net(): two grace periods under RTNL per
	// veth pair made, on a machine with more than one CPU.
	VethQueueSync bool
}

// UmountSync is the grace period namespace_unlock() waits for.
type UmountSync uint8

// What namespace_unlock waits for.
const (
	UmountNone      UmountSync = iota // no bind mount to undo
	UmountNormal                      // synchronize_rcu() (48a066e72d97, 3.13)
	UmountExpedited                   // synchronize_rcu_expedited() (22cb7405fada, 4.20)
)

func (u UmountSync) String() string {
	return [...]string{"none", "synchronize_rcu", "synchronize_rcu_expedited"}[u]
}

// netnsBase is 2.6.31: per-namespace work items on the single-threaded
// netns workqueue, net_mutex held from before the exits to their end, no
// grace period before the exit methods, default_device_exit deleting each
// virtual device with dellink (one unregister_netdevice each), then
// loopback_net_exit [31 net/core/net_namespace.c cleanup_net, __put_net;
// 31 net/core/dev.c default_device_exit; 31 drivers/net/loopback.c].
func netnsBase() NetnsProfile {
	return NetnsProfile{NetMutex: true}
}

// netnsChanges are the namespace changes of each line, appended to the
// line's own changes in lines.go.
var netnsChanges = map[string][]Change{
	"2.6.32": {
		{"11a28d373ed2", "2.6.32", "net: make namespace iteration possible under RCU",
			"cleanup_net waits one synchronize_rcu() after unlisting the namespace, before its exit methods", func(p *Profile) {
				p.Netns.SyncAfterUnlist = true
			}},
	},
	"2.6.33": {
		{"2b035b399707", "2.6.33", "net: Batch network namespace destruction.",
			"one cleanup_net takes every namespace queued so far; default_device_exit_batch unregisters all their devices (host-side veth peers too, lo last in each) in one unregister_netdevice_many; default_device_exit still takes RTNL once per namespace first", func(p *Profile) {
				p.Netns.Batched, p.Netns.DeviceExitBatch, p.Netns.DeviceExitPerNet = true, true, true
			}},
	},
	"5.10": {
		{"", "3.x-5.x", "ipv4/ipv6: route nexthops release their device from the RCU callback that frees them",
			"an up lo's IPv4 and IPv6 routes drop their lo references in RCU callbacks (free_fib_info_rcu, fib6_info_destroy_rcu), so they outlive the unregister notifiers", func(p *Profile) {
				p.Netns.LoRoutesRCU = true
			}},
		{"885842d89a9b", "4.17", "Merge branch 'Replacing-net_mutex-with-rw_semaphore'",
			"setup_net and cleanup_net take pernet_ops_rwsem for reading: creating a namespace no longer waits for a running cleanup", func(p *Profile) {
				p.Netns.NetMutex = false
			}},
		{"", "4.x", "fib_trie: tables are freed by call_rcu (fib_free_table)",
			"a namespace's exit methods leave RCU callbacks behind (2 a namespace: an estimate, not derived), so the final rcu_barrier() waits for a grace period", func(p *Profile) {
				p.Netns.ExitRCUFrees = 2
			}},
		{"22cb7405fada", "4.20", "VFS: use synchronize_rcu_expedited() in namespace_unlock()",
			"deleting a named namespace (umount2 of its /run/netns bind mount, MNT_DETACH) waits for an expedited grace period before the mount's final mntput drops the namespace's last reference; from 3.13 (48a066e72d97, \"RCU'd vfsmounts\") to 4.19 it was a normal one", func(p *Profile) {
				p.Netns.UmountSync = UmountExpedited
			}},
		{"", "5.10", "netns: ops_exit_list calls cond_resched() between namespaces",
			"a scheduling point after each namespace's exit method in a batch", func(p *Profile) { p.Netns.ExitCondResched = true }},
	},
	"6.1": {
		{"", "6.1", "veth: a new pair's real queue counts are cut to one (veth_init_queues)",
			"a veth pair's creation cuts both ends' transmit queues to one once they are registered, each waiting in synchronize_net() (expedited under RTNL) when the machine has more than one CPU (6.1 drivers/net/veth.c l.1646-1661 veth_init_queues, called at l.1768 and l.1774, queues per possible CPU at l.1831; net/core/dev.c l.2961-2962; 6.18 veth.c l.1793, l.1901, l.1907, l.1968 and net/core/dev.c l.3242-3243; absent from 5.10's veth_newlink, the release between that added it not confirmed)", func(p *Profile) {
				p.Netns.VethQueueSync = true
			}},
		{"ee403248fa6d", "5.18", "net: remove default_device_exit()",
			"part of \"net: speedup netns dismantles\": default_device_exit_net runs inside default_device_exit_batch's one RTNL hold, not with an rtnl_lock per namespace", func(p *Profile) {
				p.Netns.DeviceExitPerNet = false
			}},
	},
	"6.12": {
		{"", "6.12", "netns: cleanup_net uses synchronize_rcu_expedited()",
			"the grace period after unlisting a batch is expedited", func(p *Profile) { p.Netns.SyncExpedited = true }},
	},
}

// NetnsCosts are the CPU costs of namespace work that the cost table does
// not name as operations. A table can set them in its "extra" map under
// the keys below; otherwise the built-in estimates are used, scaled by the
// table's register cost against the built-in one (so that a calibrated
// host table gets host-sized figures).
type NetnsCosts struct {
	Setup  sim.Time // setup_net: every pernet init method ("netns_setup_ns")
	Exit   sim.Time // the pernet exit methods of one namespace ("netns_exit_ns")
	Put    sim.Time // dropping the last reference: umount and close ("netns_put_ns")
	LoUp   sim.Time // dev_open(lo) with 127.0.0.1 and ::1 and routes ("lo_up_ns")
	LoDown sim.Time // taking an up lo's addresses and routes down ("lo_down_ns")
	// Veth is a veth pair's creation across two namespaces beyond its
	// two registrations ("netns_veth_ns"; 0 unless calibrated).
	Veth sim.Time
	// Files is what naming a new namespace costs beyond the kernel's
	// create: the ownership record, the mount point under /run/netns and
	// the bind mount that a named namespace's creator makes
	// ("netns_files_ns"; 0 unless calibrated, and in a table calibrated
	// before it was measured, whose netns_setup_ns holds it; netnsfiles.go).
	Files sim.Time
	// ExitBatch is what a cleanup_net run costs once, whatever the
	// namespaces it takes, besides its waits: the walks of the pernet
	// operations' list and every operation's exit_batch method
	// ("netns_exit_batch_ns"; 0 unless calibrated, fitted to the fixed
	// part of the cleanup runs' line).
	ExitBatch sim.Time
}

// DefaultNetnsCosts are estimates for the built-in table's machine (an
// 800 MHz ppc750), not fitted to any timing: a namespace's init methods
// cost a few registrations' worth of work (proc and sysctl trees, per-CPU
// control sockets), its exit methods somewhat less.
var DefaultNetnsCosts = NetnsCosts{
	Setup:  3 * sim.Millisecond,
	Exit:   2 * sim.Millisecond,
	Put:    20 * sim.Microsecond,
	LoUp:   400 * sim.Microsecond,
	LoDown: 300 * sim.Microsecond,
}

// NetnsCostsOf returns the namespace costs for a cost table.
func NetnsCostsOf(t *costs.Table) NetnsCosts {
	c := DefaultNetnsCosts
	if t == nil {
		return c
	}
	def := costs.Default()
	if t.Source != def.Source {
		if reg, base := t.Lookup(costs.Register), def.Lookup(costs.Register); reg > 0 && reg != base {
			scale := func(d sim.Time) sim.Time { return sim.Time(int64(d) * reg / base) }
			c = NetnsCosts{Setup: scale(c.Setup), Exit: scale(c.Exit), Put: scale(c.Put), LoUp: scale(c.LoUp), LoDown: scale(c.LoDown)}
		}
	}
	for key, f := range map[string]*sim.Time{"netns_setup_ns": &c.Setup, "netns_exit_ns": &c.Exit,
		"netns_put_ns": &c.Put, "lo_up_ns": &c.LoUp, "lo_down_ns": &c.LoDown, "netns_veth_ns": &c.Veth, "netns_files_ns": &c.Files,
		"netns_exit_batch_ns": &c.ExitBatch} {
		if v, ok := t.Extra[key]; ok && v >= 0 {
			*f = sim.Time(v)
		}
	}
	return c
}
