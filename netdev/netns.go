package netdev

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Network namespaces. One emulated kernel holds the initial namespace (the
// host Registry, whose RTNL, todo list and notifier chain are the kernel's
// global ones) and any number of others, each a Registry of its own (its
// name and index tables and ifindex cursor) sharing the host's RTNL.
//
// The life of a namespace follows net/core/net_namespace.c and the device
// exit paths of net/core/dev.c, per kernel line (NetnsProfile; the rules and
// their sources are in docs/netns-sources.md):
//
//   - Create is copy_net_ns + setup_net: the pernet lock (the single
//     net_mutex in 2.6.3x, which a running cleanup holds), the pernet init
//     methods, lo registered by loopback_net_init.
//   - Unmount is the umount of its /run/netns bind mount, where the line
//     has named namespaces: a grace period before the last mntput, which
//     frees the mount's nsfs dentry, inode and mount by RCU callbacks on
//     the deleting CPU (ReleaseMount).
//   - Put drops the delete's reference; when it is the last (__put_net),
//     the namespace goes on the cleanup list and the cleanup work is
//     queued. A netlink socket opened in it holds one more until its
//     RCU-deferred free (socket.go), which then queues it.
//   - The cleanup work (one kernel thread, the ordered netns workqueue)
//     takes every namespace queued so far as one batch (2.6.33+; one per
//     work item before), unlists them, waits one grace period, runs the
//     device exit (one unregister_netdevice_many for every device of the
//     batch, host-side veth peers with them and lo last in each namespace;
//     before 2.6.33 one unregister per device and lo by loopback_net_exit),
//     whose rtnl_unlock runs netdev_run_todo, then the other pernet exit
//     methods, releases the pernet lock, and does the final rcu_barrier()
//     before the namespaces are freed.
//
// Invariants: every namespace is freed at most once, only after all its
// devices are freed; batches run one at a time, in the order their
// namespaces were queued; a device's home (the namespace it is listed in)
// never changes; every wait of the cleanup is one of the registry's bounded
// waits (a device that never loses its references stops the run with a
// StuckError after the give-up time), and the caller's wait for a cleanup is
// bounded too (NetnsStuckError), so a stuck namespace is a result, not a hang.

// Phases of namespace work that package phase does not name.
const (
	PhasePernetLock = "net_mutex"  // waiting for the pernet lock
	PhaseSetupNet   = "setup_net"  // the pernet init methods (CPU)
	PhaseExitNet    = "exit_net"   // the pernet exit methods (CPU)
	PhaseLoUp       = "dev_open"   // setting lo up: addresses and routes (CPU)
	PhaseUmount     = "umount"     // namespace_unlock's grace period before the last mntput
	phaseIdle       = "netns-idle" // the cleanup worker with nothing to do
)

// NetnsState is where a namespace is in its life.
type NetnsState uint8

// Namespace states.
const (
	NetnsAlive    NetnsState = iota // created, referenced
	NetnsQueued                     // deleted: on the cleanup list, or to be once its sockets are freed (socket.go)
	NetnsCleaning                   // taken by a cleanup run
	NetnsFreed                      // cleanup done
)

func (s NetnsState) String() string {
	return [...]string{"alive", "queued", "cleaning", "freed"}[s]
}

// Kind is what a device is, as far as namespaces care.
type Kind uint8

// Device kinds.
const (
	KindDummy Kind = iota
	KindLoopback
	KindVeth
	// Kinds of LinkConfig (addr.go, vlan.go).
	KindIfb
	KindVLAN
	KindMacvlan
)

func (k Kind) String() string {
	return [...]string{"dummy", "loopback", "veth", "ifb", "vlan", "macvlan"}[k]
}

// Netns is one network namespace other than the initial one.
type Netns struct {
	Name  string
	Reg   *Registry
	Lo    *Device
	State NetnsState
	// CreatedAt is when its creation began (when it was allocated, as far
	// as a count of live struct nets goes). QueuedAt, GoneAt and DoneAt are
	// when its delete dropped its reference (Put: the last one, but for
	// sockets still being freed), when its last device (a
	// host-side veth peer included) was unregistered, and when its cleanup
	// was done; -1 until then.
	CreatedAt                sim.Time
	QueuedAt, GoneAt, DoneAt sim.Time
	// Batch is the cleanup run that took it (1-based; 0 before).
	Batch int
	// pending counts its devices not yet unregistered during its cleanup.
	pending int
	// sockets counts the sockets holding a reference to it (socket.go).
	sockets int
}

// devInfo is what the namespace layer knows of a device.
type devInfo struct {
	kind Kind
	up   bool
	// routes is the number of references an up lo's routes hold.
	routes int32
	peer   *Device
	// ns is the namespace the device is listed in (nil: the initial one)
	// and owner the namespace whose cleanup takes it (a host-side veth
	// peer goes with its namespace).
	ns, owner *Netns
}

// NetnsStats are the namespace layer's counters.
type NetnsStats struct {
	Created      int64
	Queued       int64
	Freed        int64
	Batches      int64
	MaxBatch     int64
	PernetWaits  int64    // creations that found the pernet lock held
	PernetWaitNS sim.Time // their time waiting for it
	// CleanupWaits counts the creations that found the pernet lock held by
	// a running cleanup, CleanupWaitMax the longest of their waits.
	CleanupWaits   int64
	CleanupWaitMax sim.Time
}

// Namespaces is every namespace of one emulated kernel and the machinery
// that creates and destroys them.
type Namespaces struct {
	host  *Registry
	prof  NetnsProfile
	costs NetnsCosts

	byName map[string]*Netns
	info   map[*Device]*devInfo

	// netMutex is net_mutex, where the line has one; cleanupHolds says the
	// cleanup worker holds it.
	netMutex     sim.Mutex
	cleanupHolds bool
	// queued is the cleanup list; work wakes the worker.
	queued []*Netns
	work   sim.WaitQueue
	worker *sim.Task
	// done is woken whenever a cleanup run ends.
	done    sim.WaitQueue
	batches []int
	// batchNS is each cleanup run's duration, in order.
	batchNS []sim.Time

	stats NetnsStats
	// OnFree, if set, sees every namespace as the cleanup frees it.
	OnFree func(*Netns)
	// MaxNetNamespaces is user.max_net_namespaces (ucount.go); restored
	// counts the namespaces loaded from a state file, which count too.
	MaxNetNamespaces int
	restored         int64
	// creating counts the creates under way (ucount.go).
	creating int64
}

// NewNamespaces attaches a namespace set to the initial namespace's
// registry.
func NewNamespaces(host *Registry, c NetnsCosts) *Namespaces {
	ns := &Namespaces{host: host, prof: host.prof.Netns, costs: c,
		byName: map[string]*Netns{}, info: map[*Device]*devInfo{}, MaxNetNamespaces: defaultMaxNetns}
	host.netns = ns
	host.notifiers = append(host.notifiers, netnsNotifier{ns})
	return ns
}

// CostTable returns the registry's cost table.
func (r *Registry) CostTable() *costs.Table { return r.costs }

// Host returns the initial namespace's registry.
func (ns *Namespaces) Host() *Registry { return ns.host }

// Stats returns the counters.
func (ns *Namespaces) Stats() NetnsStats { return ns.stats }

// Batches returns the sizes of the cleanup runs so far, in order.
func (ns *Namespaces) Batches() []int { return ns.batches }

// BatchTimes returns the durations of the cleanup runs so far, in order.
func (ns *Namespaces) BatchTimes() []sim.Time { return ns.batchNS }

// Lookup returns the namespace named name.
func (ns *Namespaces) Lookup(name string) (*Netns, bool) {
	n, ok := ns.byName[name]
	return n, ok
}

// Len returns the number of namespaces not yet freed.
func (ns *Namespaces) Len() int { return len(ns.byName) }

// Range visits the namespaces not yet freed, in name order.
func (ns *Namespaces) Range(visit func(n *Netns) bool) {
	for _, name := range slices.Sorted(mapKeys(ns.byName)) {
		if !visit(ns.byName[name]) {
			return
		}
	}
}

func mapKeys(m map[string]*Netns) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Kind returns a device's kind.
func (ns *Namespaces) Kind(d *Device) Kind {
	if i := ns.info[d]; i != nil {
		return i.kind
	}
	return KindDummy
}

// Up reports whether a device is up.
func (ns *Namespaces) Up(d *Device) bool {
	i := ns.info[d]
	return i != nil && i.up
}

// Peer returns a veth end's other end and its namespace (nil: the initial
// one).
func (ns *Namespaces) Peer(d *Device) (*Device, *Netns) {
	i := ns.info[d]
	if i == nil || i.peer == nil {
		return nil, nil
	}
	return i.peer, ns.info[i.peer].ns
}

// WithPeers returns devs with the other end of every veth among them
// appended right after it (veth_dellink unregisters both ends), each once.
func (ns *Namespaces) WithPeers(devs []*Device) []*Device {
	paired := false
	for _, d := range devs {
		if i := ns.info[d]; i != nil && i.peer != nil {
			paired = true
			break
		}
	}
	if !paired {
		return devs
	}
	in := make(map[*Device]bool, len(devs))
	for _, d := range devs {
		in[d] = true
	}
	out := make([]*Device, 0, 2*len(devs))
	for _, d := range devs {
		out = append(out, d)
		if i := ns.info[d]; i != nil && i.peer != nil && !in[i.peer] && i.peer.State == Registered {
			in[i.peer] = true
			out = append(out, i.peer)
		}
	}
	return out
}

func (ns *Namespaces) infoOf(d *Device) *devInfo {
	i := ns.info[d]
	if i == nil {
		i = &devInfo{}
		ns.info[d] = i
	}
	return i
}

// homeOf is the registry a device is listed in: its namespace's, the
// initial one's for a device the namespace layer knows without a namespace,
// else r itself.
func (r *Registry) homeOf(d *Device) *Registry {
	if r.netns == nil {
		return r
	}
	if i := r.netns.info[d]; i != nil {
		if i.ns != nil {
			return i.ns.Reg
		}
		return r.netns.host
	}
	return r
}

// netnsTableBuckets is a namespace's device table size: most hold lo,
// a few links and a veth end.
const netnsTableBuckets = 16

// newRegistry makes the registry of a new namespace, sharing the host's
// RTNL and configuration.
func (ns *Namespaces) newRegistry(name string, nextIfindex int) *Netns {
	h := ns.host
	reg := New(h.e, h.rcu, Options{Profile: h.prof, Costs: h.costs, Waiter: h.waiter, NameAlloc: h.nameAlloc, NextIfindex: nextIfindex,
		TableBuckets: netnsTableBuckets})
	reg.rtnl = h.rtnl
	reg.netns = ns
	reg.CheckOnRelease = h.CheckOnRelease
	reg.GiveUp = h.GiveUp
	reg.RefTracker = h.RefTracker
	reg.WarnEvery = h.WarnEvery
	reg.holds = h.holds
	reg.notifiers = append(reg.notifiers, netnsNotifier{ns})
	n := &Netns{Name: name, Reg: reg, QueuedAt: -1, GoneAt: -1, DoneAt: -1}
	ns.byName[name] = n
	return n
}

// Restore re-creates a namespace loaded from a state file, without running
// any kernel code: no time passes. Its devices are restored with RestoreDevice.
func (ns *Namespaces) Restore(name string, nextIfindex int) (*Netns, error) {
	if _, ok := ns.byName[name]; ok {
		return nil, fmt.Errorf("namespace %s restored twice", name)
	}
	ns.restored++
	return ns.newRegistry(name, nextIfindex), nil
}

// RestoreDevice lists a device of namespace n (nil: the initial one) that
// already exists, with its kind and whether it is up.
func (ns *Namespaces) RestoreDevice(n *Netns, name string, ifindex int, kind Kind, up bool) (*Device, error) {
	reg := ns.host
	if n != nil {
		reg = n.Reg
	}
	if err := reg.Restore(name, ifindex); err != nil {
		return nil, err
	}
	d, _ := reg.ByIndex(ifindex)
	if kind == KindDummy && !up && n == nil {
		return d, nil // a plain device of the initial namespace
	}
	i := ns.infoOf(d)
	i.kind, i.ns, i.owner, i.up = kind, n, n, up
	if kind == KindLoopback && n != nil {
		n.Lo = d
	}
	if up && kind == KindLoopback {
		ns.holdRoutes(d, i)
	}
	return d, nil
}

// RestorePeers pairs two restored devices as the ends of a veth; the
// namespace whose cleanup takes both is the one that is not the initial one.
func (ns *Namespaces) RestorePeers(a, b *Device) error {
	ia, ib := ns.infoOf(a), ns.infoOf(b)
	if ia.peer != nil || ib.peer != nil {
		return fmt.Errorf("veth %s or %s already has a peer", a.Name, b.Name)
	}
	ia.kind, ib.kind = KindVeth, KindVeth
	ia.peer, ib.peer = b, a
	if ia.owner == nil {
		ia.owner = ib.ns
	}
	if ib.owner == nil {
		ib.owner = ia.ns
	}
	return nil
}

// RegisterNamed is register_netdevice for a device with a fixed name (lo,
// eth0); the caller holds RTNL.
func (r *Registry) RegisterNamed(t *sim.Task, name string) (*Device, error) {
	return r.registerNamed(t, name, r.Cost(costs.Register))
}

// registerNamed is RegisterNamed charging cost as the register CPU.
func (r *Registry) registerNamed(t *sim.Task, name string, cost sim.Time) (*Device, error) {
	if err := ifname.ValidateName(name); err != nil {
		return nil, err
	}
	if _, ok := r.table.ByName(name); ok {
		return nil, fmt.Errorf("device %s exists (EEXIST)", name)
	}
	d, err := r.registerCharging(t, name, cost)
	if err != nil {
		return nil, err
	}
	for tm, b := range r.names {
		if k := tm.Number(name); k >= 0 && k <= tm.MaxNumber() {
			_ = b.Reserve(k)
		}
	}
	return d, nil
}

// ErrNetnsExists is returned by Create for a name in use.
var ErrNetnsExists = errors.New("network namespace exists")

// Create is copy_net_ns and setup_net for a namespace named name, run by t:
// the pernet lock, the pernet init methods, and lo. It returns with the
// namespace alive and its lo registered (and down).
func (ns *Namespaces) Create(t *sim.Task, name string) (*Netns, error) {
	if _, ok := ns.byName[name]; ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNetnsExists)
	}
	if err := ns.checkNetnsLimit(name); err != nil {
		return nil, err
	}
	defer ns.createDone()
	prev := t.Phase()
	defer t.SetPhase(prev)
	created := t.Now()
	if ns.prof.NetMutex {
		ns.lockPernet(t)
		defer ns.netMutex.Unlock(t)
	}
	t.SetPhase(PhaseSetupNet)
	t.Charge(ns.costs.Setup)
	n := ns.newRegistry(name, 0)
	n.CreatedAt = created
	// loopback_net_init: register_netdev takes RTNL itself.
	n.Reg.RTNLLock(t)
	lo, err := n.Reg.RegisterNamed(t, "lo")
	n.Reg.RTNLUnlock(t)
	if err != nil {
		delete(ns.byName, name)
		return nil, err
	}
	n.Lo = lo
	i := ns.infoOf(lo)
	i.kind, i.ns, i.owner = KindLoopback, n, n
	ns.stats.Created++
	return n, nil
}

// lockPernet takes net_mutex, attributing and counting a wait for it.
func (ns *Namespaces) lockPernet(t *sim.Task) {
	defer t.SetPhase(t.SetPhase(PhasePernetLock))
	if ns.netMutex.Held() {
		ns.stats.PernetWaits++
		start, behindCleanup := t.Now(), ns.cleanupHolds && t != ns.worker
		defer func() {
			w := t.Now() - start
			ns.stats.PernetWaitNS += w
			if behindCleanup {
				ns.stats.CleanupWaits++
				ns.stats.CleanupWaitMax = max(ns.stats.CleanupWaitMax, w)
			}
		}()
	}
	ns.netMutex.Lock(t)
}

// AddLink registers one link named from tmpl in n, under RTNL (one
// RTM_NEWLINK).
func (ns *Namespaces) AddLink(t *sim.Task, n *Netns, tmpl ifname.Template) (*Device, error) {
	n.Reg.RTNLLock(t)
	d, err := n.Reg.Register(t, tmpl)
	n.Reg.RTNLUnlock(t)
	if err == nil {
		ns.infoOf(d).ns, ns.info[d].owner = n, n
	}
	return d, err
}

// AddVeth is veth_newlink: the peer, named from outer, is registered in the
// initial namespace, then inner in n, both under one RTNL; on a line with
// VethQueueSync and more than one CPU each then has its transmit queues cut
// to one.
func (ns *Namespaces) AddVeth(t *sim.Task, n *Netns, inner string, outer ifname.Template) (in, out *Device, err error) {
	ns.host.RTNLLock(t)
	defer ns.host.RTNLUnlock(t)
	t.Charge(ns.costs.Veth)
	out, err = ns.host.Register(t, outer)
	if err != nil {
		return nil, nil, err
	}
	in, err = n.Reg.RegisterNamed(t, inner)
	if err != nil {
		// The kernel unregisters the peer again; nothing here waits for it.
		ns.host.UnregisterMany(t, []*Device{out})
		return nil, nil, err
	}
	ii, io := ns.infoOf(in), ns.infoOf(out)
	ii.kind, ii.ns, ii.owner, ii.peer = KindVeth, n, n, out
	io.kind, io.owner, io.peer = KindVeth, n, in
	// veth_init_queues, for the device and then its peer: a veth has a
	// transmit queue per possible CPU, and cutting a registered device's
	// real count to one waits in synchronize_net(), expedited under RTNL.
	if ns.prof.VethQueueSync && len(t.Engine().CPUs()) > 1 {
		ns.host.synchronizeNet(t)
		ns.host.synchronizeNet(t)
	}
	return in, out, nil
}

// SetLoUp is dev_open(lo) in n: inetdev and addrconf add 127.0.0.1/8 and
// ::1 and their routes, whose nexthops hold lo (two "route" references).
func (ns *Namespaces) SetLoUp(t *sim.Task, n *Netns) {
	if ns.info[n.Lo].up {
		return
	}
	n.Reg.RTNLLock(t)
	prev := t.SetPhase(PhaseLoUp)
	t.Charge(ns.costs.LoUp)
	i := ns.info[n.Lo]
	i.up = true
	ns.holdRoutes(n.Lo, i)
	t.SetPhase(prev)
	n.Reg.RTNLUnlock(t)
}

// holdRoutes takes the references of an up lo's routes: the IPv4 local
// routes' fib_info nexthop and the ::1 route's fib6_info nexthop.
func (ns *Namespaces) holdRoutes(d *Device, i *devInfo) {
	d.hold(HolderRoute)
	d.hold(HolderRoute)
	i.routes = 2
}

// Unmount is umount2(MNT_DETACH) of n's bind mount under /run/netns, run by
// t before Put: namespace_unlock() waits for the grace period the line's
// UmountSync names before the final mntput, which drops n's reference (Put)
// and frees the mount's objects (ReleaseMount).
// With no bind mount in the line (UmountNone) it does nothing.
func (ns *Namespaces) Unmount(t *sim.Task, n *Netns) {
	if n.State != NetnsAlive || ns.prof.UmountSync == UmountNone {
		return
	}
	defer t.SetPhase(t.SetPhase(PhaseUmount))
	r := ns.host.rcu
	if ns.prof.UmountSync == UmountExpedited && r.Config().Expedited != rcu.ExpNone {
		r.SynchronizeExpedited(t)
		return
	}
	r.Synchronize(t)
}

// mntputFrees is how many RCU callbacks the final mntput of a namespace's
// nsfs bind mount queues (cleanup_mnt at the umount's return to user, 6.18
// fs/namespace.c l.1300-1321): the nsfs dentry's dput (whose iput drops
// the namespace, Put) frees the dentry (fs/dcache.c dentry_free: call_rcu
// unless DCACHE_NORCU, which nsfs's d_alloc_anon dentries lack) and its
// inode (fs/inode.c destroy_inode: call_rcu(i_callback), nsfs having no
// destroy_inode), and cleanup_mnt frees the mount
// (call_rcu(delayed_free_vfsmnt)).
const mntputFrees = 3

// ReleaseMount is the rest of that final mntput, run by t after Put: the
// RCU callbacks that free the dentry, the inode and the mount, queued on
// t's CPU. Until they run, that CPU has callbacks: it keeps its tick
// (rcu_needs_cpu) and the cleanup's rcu_barrier() waits for them too. With
// no bind mount in the line (UmountNone) it does nothing.
func (ns *Namespaces) ReleaseMount(t *sim.Task) {
	if ns.prof.UmountSync == UmountNone {
		return
	}
	for range mntputFrees {
		ns.host.rcu.CallRCU(t, func() {})
	}
}

// Put drops the reference of n that its delete holds, run by t; the caller
// returns at once. When it is the last one (__put_net), n goes on the
// cleanup list and the cleanup work is queued; while a closed socket's
// reference is still to go (socket.go), that comes when it goes.
func (ns *Namespaces) Put(t *sim.Task, n *Netns) {
	if n.State != NetnsAlive {
		panic("netdev: put of namespace " + n.Name + " in state " + n.State.String())
	}
	t.Charge(ns.costs.Put)
	n.State, n.QueuedAt = NetnsQueued, t.Now()
	if n.sockets == 0 {
		ns.enqueue(n)
	}
}

// enqueue is __put_net: n on the cleanup list, the cleanup work queued.
func (ns *Namespaces) enqueue(n *Netns) {
	ns.stats.Queued++
	ns.queued = append(ns.queued, n)
	if ns.worker == nil {
		e := ns.host.e
		ns.worker = e.Go("kworker/u:netns", len(e.CPUs())-1, true, ns.cleanupWorker)
		ns.worker.SetUnbound()
		return
	}
	ns.work.WakeAll()
}

// Done reports whether every namespace of list has been freed.
func Done(list []*Netns) bool {
	for _, n := range list {
		if n.State != NetnsFreed {
			return false
		}
	}
	return true
}

// WaitDone sleeps until every namespace of list has been freed, attributing
// the time to the cleanup-wait phase. The wait is bounded: if no cleanup run
// ends for maxIdle of virtual time, it stops the run with a *NetnsStuckError and
// returns false.
func (ns *Namespaces) WaitDone(t *sim.Task, list []*Netns, maxIdle sim.Time) bool {
	defer t.SetPhase(t.SetPhase(phase.NetnsCleanup))
	e := ns.host.e
	jiffies := int64(maxIdle/e.Period()) + 1
	for !Done(list) {
		runs := ns.stats.Batches
		ns.done.WaitTimeout(t, func() bool { return Done(list) || ns.stats.Batches != runs }, jiffies)
		if !Done(list) && ns.stats.Batches == runs {
			e.Stop(ns.stuck(list, maxIdle))
			return false
		}
	}
	return true
}

// NetnsStuckError stops a run whose namespace cleanup made no progress.
type NetnsStuckError struct {
	Netns  string
	State  NetnsState
	Waited sim.Time
	// Phase is where the cleanup worker was.
	Phase string
}

func (e *NetnsStuckError) Error() string {
	return fmt.Sprintf("namespace %s still %s after %v without a cleanup run ending (the cleanup worker is in %s)",
		e.Netns, e.State, e.Waited, e.Phase)
}

func (ns *Namespaces) stuck(list []*Netns, waited sim.Time) *NetnsStuckError {
	err := &NetnsStuckError{Waited: waited, Phase: "nothing"}
	for _, n := range list {
		if n.State != NetnsFreed {
			err.Netns, err.State = n.Name, n.State
			break
		}
	}
	if ns.worker != nil && ns.worker.Phase() != phaseIdle {
		err.Phase = ns.worker.Phase()
	}
	return err
}

// WorkerPhases returns the cleanup worker's time by phase (idle excluded).
func (ns *Namespaces) WorkerPhases() []sim.PhaseTime {
	if ns.worker == nil {
		return nil
	}
	var out []sim.PhaseTime
	for _, p := range ns.worker.Phases() {
		if p.Name != phaseIdle {
			out = append(out, p)
		}
	}
	return out
}

// cleanupWorker is the netns workqueue's worker running cleanup_net.
func (ns *Namespaces) cleanupWorker(t *sim.Task) {
	for {
		t.SetPhase(phaseIdle)
		ns.work.Wait(t, func() bool { return len(ns.queued) > 0 })
		take := len(ns.queued)
		if !ns.prof.Batched {
			take = 1 // one work item per namespace
		}
		batch := slices.Clone(ns.queued[:take])
		ns.queued = slices.Delete(ns.queued, 0, take)
		ns.cleanup(t, batch)
	}
}

// cleanup is cleanup_net for one batch.
func (ns *Namespaces) cleanup(t *sim.Task, batch []*Netns) {
	ns.stats.Batches++
	ns.stats.MaxBatch = max(ns.stats.MaxBatch, int64(len(batch)))
	ns.batches = append(ns.batches, len(batch))
	start := t.Now()
	defer func() { ns.batchNS = append(ns.batchNS, t.Now()-start) }()
	for _, n := range batch {
		n.State, n.Batch = NetnsCleaning, int(ns.stats.Batches)
	}
	host := ns.host
	t.SetPhase(phase.Other)
	if ns.prof.NetMutex {
		ns.lockPernet(t)
		ns.cleanupHolds = true
	}
	// Unlist the namespaces: under RTNL in 2.6.3x, net_rwsem later; the
	// list edit itself costs nothing worth charging.
	host.RTNLLock(t)
	host.RTNLUnlock(t)
	// pre_exit methods, then one grace period for the whole batch.
	if ns.prof.SyncAfterUnlist {
		if ns.prof.SyncExpedited && host.rcu.Config().Expedited != rcu.ExpNone {
			t.SetPhase(phase.SyncNetExp)
			host.rcu.SynchronizeExpedited(t)
		} else {
			t.SetPhase(phase.SyncNet)
			host.rcu.Synchronize(t)
		}
	}
	gone := ns.deviceExit(t, batch)
	// The other pernet exit methods (IPv4, IPv6, sysctls, /proc, sockets).
	t.SetPhase(PhaseExitNet)
	ns.exitMethods(t, batch)
	if ns.prof.NetMutex {
		ns.cleanupHolds = false
		ns.netMutex.Unlock(t)
	}
	// No outstanding RCU callback may use the namespaces.
	host.barrier(t)
	for _, n := range batch {
		n.State, n.DoneAt = NetnsFreed, t.Now()
		delete(ns.byName, n.Name)
		ns.stats.Freed++
		if ns.OnFree != nil {
			ns.OnFree(n)
		}
	}
	// What the namespace layer knew of the batch's devices (unregistered
	// and freed with it, host-side veth peers too) goes with it, so that
	// the map does not keep every freed namespace and its registry alive
	// (a churn of 60,000 pods otherwise holds all of them).
	for _, devs := range gone {
		for _, d := range devs {
			delete(ns.info, d)
		}
	}
	t.SetPhase(phase.Other)
	ns.done.WakeAll()
}

// exitMethods runs the pernet exit methods after the device exit: in
// ops_exit_list each method runs for every namespace of the batch before
// the next method (method-major; 6.18 net/core/net_namespace.c l.192-206,
// ops_undo_list l.251-253; the older lines with ExitRCUFrees, 5.10 and
// 6.1, were not re-read for this: their cleanup_net has the same walk as
// far as known), with a
// cond_resched() after each namespace's call where the line has it, and a
// method that frees by call_rcu queues its callbacks while it runs, not at
// the end of the phase. The model has ExitRCUFrees such methods (a count
// estimated, not derived: netns_lines.go), each with an equal share of the
// exit cost, queuing its callback as it starts: the first at once after
// default_device_exit_batch (default_device_ops is a pernet device
// operation, registered after the subsystems', so ops_undo_list's reverse
// walk reaches it before the subsystems' exits, dev.c l.13335). That is
// where the trace of docs/trace-cni.md puts them: a rcu_barrier() caller
// released by the worker's netdev_run_todo that ran 16-60 µs later still
// found callbacks that needed a grace period of their own.
func (ns *Namespaces) exitMethods(t *sim.Task, batch []*Netns) {
	if ns.costs.ExitBatch > 0 {
		t.Charge(ns.costs.ExitBatch) // once a run (NetnsCosts.ExitBatch)
	}
	k := ns.prof.ExitRCUFrees
	if k == 0 {
		for range batch {
			t.Charge(ns.costs.Exit)
			if ns.prof.ExitCondResched {
				t.CondResched()
			}
		}
		return
	}
	// at(m) is where, in a namespace's exit cost, method m starts.
	at := func(m int) sim.Time { return sim.Time(int64(ns.costs.Exit) * int64(m) / int64(k)) }
	for m := range k {
		for range batch {
			ns.host.rcu.CallRCU(t, func() {})
			t.Charge(at(m+1) - at(m))
			if ns.prof.ExitCondResched {
				t.CondResched()
			}
		}
	}
}

// deviceExit unregisters every device of the batch: default_device_exit_batch
// (one unregister_netdevice_many) where the line has it, else
// default_device_exit per namespace (each virtual device with its own
// unregister, host-side veth peers right after theirs) and then
// loopback_net_exit (lo). It returns each namespace's devices, its
// host-side veth peers among them.
func (ns *Namespaces) deviceExit(t *sim.Task, batch []*Netns) [][]*Device {
	host := ns.host
	per := make([][]*Device, len(batch))
	for k, n := range batch {
		var devs []*Device
		n.Reg.Range(func(d *Device) bool {
			i := ns.infoOf(d) // links added by a plain add in the namespace too
			i.ns, i.owner = n, n
			devs = append(devs, d)
			return true
		})
		slices.Reverse(devs) // for_each_netdev_reverse: lo, registered first, goes last
		per[k] = ns.WithPeers(devs)
		n.pending = len(per[k])
	}
	if ns.prof.DeviceExitPerNet {
		// default_device_exit: its own rtnl_lock per namespace, moving
		// devices that are neither local nor virtual (none here).
		for range batch {
			host.RTNLLock(t)
			host.RTNLUnlock(t)
		}
	}
	if ns.prof.DeviceExitBatch {
		var all []*Device
		for _, devs := range per {
			all = append(all, devs...)
		}
		host.RTNLLock(t)
		host.UnregisterMany(t, all)
		host.RTNLUnlock(t) // netdev_run_todo
		return per
	}
	for k, n := range batch {
		host.RTNLLock(t)
		for _, d := range per[k] {
			if d != n.Lo {
				host.UnregisterMany(t, []*Device{d})
			}
		}
		host.RTNLUnlock(t) // netdev_run_todo for the namespace's links
		if n.Lo != nil {
			host.RTNLLock(t) // loopback_net_exit: unregister_netdev(lo)
			host.UnregisterMany(t, []*Device{n.Lo})
			host.RTNLUnlock(t)
		}
	}
	return per
}

// netnsNotifier is the namespace layer on the netdevice notifier chain: it
// releases an up lo's route references, forgets unregistered devices, and
// notes when a namespace's last device is gone (RTM_DELLINK is sent from
// the same loop).
type netnsNotifier struct{ ns *Namespaces }

func (netnsNotifier) Register(*Registry, *sim.Task, *Device) {}

func (nn netnsNotifier) Unregister(r *Registry, t *sim.Task, d *Device) {
	ns := nn.ns
	i := ns.info[d]
	if i == nil || d.State != Unregistering {
		return
	}
	if i.routes > 0 {
		t.Charge(ns.costs.LoDown)
		for range i.routes {
			if ns.prof.LoRoutesRCU {
				r.callRCU(t, r.prof.RouteReleaseHurry, func() { r.put(nil, d, HolderRoute) })
			} else {
				r.put(t, d, HolderRoute)
			}
		}
		i.routes = 0
	}
	if n := i.owner; n != nil && n.State == NetnsCleaning {
		if n.pending--; n.pending == 0 {
			n.GoneAt = t.Now()
		}
	}
	if i.peer != nil {
		if pi := ns.info[i.peer]; pi != nil && pi.peer == d {
			pi.peer = nil
		}
	}
	i.peer = nil
}

// Forget drops what the namespace layer knows of freed devices (after a
// command, to keep the maps small); devices still listed stay.
func (ns *Namespaces) Forget(d *Device) { delete(ns.info, d) }
