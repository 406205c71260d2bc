// Package netdev is the emulated netdev registry of one network namespace:
// devices hashed by name and by ifindex (256 buckets each, package devtable),
// index and %d-name allocation (package idalloc), the RTNL lock, the notifier
// chain, per-device refcounts with named holders, the unregister todo list,
// and the lifecycle register -> unregister -> wait for refs -> free.
//
// Unregister follows the kernel's two phases. Under RTNL, devices are closed,
// unlisted and torn down by the NETDEV_UNREGISTER notifiers, which queue the
// release of their per-device IPv4/IPv6 state through call_rcu; the
// registration reference is dropped and the devices go on the todo list.
// After RTNL is released, netdev_run_todo waits for each device's remaining
// references with the configured Waiter (package waitrefs) and frees it.
// The Profile decides the path around the wait (batching, synchronize_net,
// rcu_barrier, the ready refcount); the Waiter decides only the wait loop.
//
// Lock order: RTNL, then the registry's data (owned by the model, which runs
// one task at a time, so no further locks are needed).
//
// Invariants: refcounts never go negative (a violating put panics); every
// device is freed exactly once, and only at refcount <= ReadyRefcount; names
// and ifindexes are unique among listed devices; an unlisted device's name
// and index may be reused at once, as in the kernel.
package netdev

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/devtable"
	"github.com/ndst-project/ndst/idalloc"
	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Buckets is the number of name and index hash buckets (NETDEV_HASHBITS=8).
const Buckets = 256

// MaxIfindex is the largest ifindex (31 bits).
const MaxIfindex = 1<<31 - 1

// KernelNameSlots is the size of __dev_alloc_name's bitmap: 8*PAGE_SIZE.
const KernelNameSlots = 32768

// Waiter is a netdev_wait_allrefs strategy (implemented in package
// waitrefs).
type Waiter interface {
	Name() string
	// Prepare runs once per netdev_run_todo, after RTNL is released and
	// before any device is waited for.
	Prepare(r *Registry, t *sim.Task, list []*Device)
	// WaitAny blocks until one of devs is ready and returns it.
	WaitAny(r *Registry, t *sim.Task, devs []*Device) *Device
}

// NameAlloc selects how %d names are allocated.
type NameAlloc int

// Name allocators.
const (
	// NameBitmap keeps a two-level bitmap per template: O(1) amortised.
	NameBitmap NameAlloc = iota
	// NameScan is the kernel's __dev_alloc_name: scan every device's name
	// into a 32768-bit bitmap, per allocation (O(n)), ENFILE when full.
	NameScan
)

// Notifier is a subsystem on the netdevice notifier chain.
type Notifier interface {
	Register(r *Registry, t *sim.Task, d *Device)
	Unregister(r *Registry, t *sim.Task, d *Device)
}

// Stats are the registry's counters.
type Stats struct {
	Registered     int64
	Unregistered   int64
	Freed          int64
	Batches        int64
	SyncNet        int64
	Barriers       int64
	WaitChecks     int64
	WaitSleeps     int64
	Rebroadcasts   int64
	Warnings       int64
	ReleaseChecks  int64
	ReleaseWakeups int64
	// LastRef counts, by holder, the references whose release made an
	// unregistered device ready, and LastRefNested those released from a
	// callback queued by another RCU callback (a second grace period);
	// UpUnregistered counts the up devices unregistered (addr.go).
	LastRef        [numHolders]int64
	LastRefNested  int64
	UpUnregistered int64
	// ChildBatches counts the nested unregister batches a lower device's
	// handlers ran for its children (vlan.go).
	ChildBatches int64
}

// Registry is one emulated network namespace.
// DefaultGiveUp is the wait loop's default bound (--give-up).
const DefaultGiveUp = 60 * sim.Second

type Registry struct {
	e      *sim.Engine
	rcu    *rcu.RCU
	prof   Profile
	costs  *costs.Table
	waiter Waiter

	table     *devtable.Table[*Device]
	ifindexes *idalloc.Bitmap
	// nextIfindex is the last ifindex handed out (persisted for reference).
	nextIfindex int
	nameAlloc   NameAlloc
	names       map[ifname.Template]*idalloc.Bitmap

	// rtnl is RTNL; the namespaces of one kernel share the initial
	// namespace's (netns.go).
	rtnl      *sim.Mutex
	todo      []*Device
	notifiers []Notifier

	// release is woken when a waited-for device reaches its ready
	// refcount, if CheckOnRelease is set (the "wake" strategy).
	release        sim.WaitQueue
	CheckOnRelease bool
	// GiveUp bounds how long the wait loop waits for a device's
	// references before the run stops as stuck (CheckStuck). By default
	// it is DefaultGiveUp, or, where the soft-lockup detector could report
	// a spinning loop later than that (2.6.3x: 61 units of 2^30 ns, 65.5
	// s), just past the detector's bound, so that a livelock is reported as
	// the kernel would report it.
	GiveUp sim.Time
	// RefTracker: the wait loop's warning lists the holders, as
	// CONFIG_NET_DEV_REFCNT_TRACKER kernels (5.17+) do.
	RefTracker bool
	// WarnEvery is net.core.netdev_unregister_timeout_secs: seconds
	// between the wait loop's warnings (0: the kernel's 10).
	WarnEvery int
	// holds are the --hold rules.
	holds []Hold
	// links are the devices that are up, with their addresses, or of a
	// kind other than dummy (addr.go); lowers the VLANs and macvlans and
	// their lower devices (vlan.go).
	links    map[*Device]*linkState
	lowers   map[*Device]*lowerState
	addrCost *AddrCosts
	// OnFree, if set, sees every device as it is freed.
	OnFree func(*Device)

	stats Stats

	// netns is the machine's namespace set when it has namespaces: a batch
	// may then hold devices of several of them (netns.go).
	netns *Namespaces
}

// Options configure a registry.
type Options struct {
	Profile   Profile
	Costs     *costs.Table
	Waiter    Waiter
	NameAlloc NameAlloc
	// NextIfindex restores the ifindex cursor (0: start at 1).
	NextIfindex int
	// TableBuckets sizes the emulator's own device table (0: Buckets).
	// The kernel's hash is not modelled by it: no cost depends on its
	// chains, and its walks are in ifindex order whatever its size, so a
	// namespace of a few devices can take a small one.
	TableBuckets int
}

// New creates an empty namespace (no loopback: a fresh "add 1000" yields
// ifindex 1..1000) with the notifiers of the profile's subsystems.
func New(e *sim.Engine, r *rcu.RCU, o Options) *Registry {
	if o.Costs == nil {
		o.Costs = costs.Default()
	}
	reg := &Registry{
		e: e, rcu: r, prof: o.Profile, costs: o.Costs, waiter: o.Waiter,
		table:       devtable.New[*Device](cmp.Or(o.TableBuckets, Buckets)),
		ifindexes:   idalloc.NewBitmap(1, MaxIfindex),
		nextIfindex: o.NextIfindex,
		nameAlloc:   o.NameAlloc,
		names:       map[ifname.Template]*idalloc.Bitmap{},
		GiveUp:      max(DefaultGiveUp, e.LockupBound()),
		rtnl:        new(sim.Mutex),
	}
	reg.notifiers = append(reg.notifiers, linkNotifier{}, vlanNotifier{})
	for _, sub := range o.Profile.Subsystems {
		reg.notifiers = append(reg.notifiers, subsystemNotifier{sub})
	}
	reg.notifiers = append(reg.notifiers, extraHoldsNotifier{})
	if o.Profile.FibFlush == FibFlushPerEvent {
		reg.notifiers = append(reg.notifiers, fibNotifier{})
	}
	return reg
}

// Engine returns the simulation engine.
func (r *Registry) Engine() *sim.Engine { return r.e }

// WarnSeconds is the wait loop's warning interval in seconds.
func (r *Registry) WarnSeconds() int64 {
	if r.WarnEvery > 0 {
		return int64(r.WarnEvery)
	}
	return 10
}

// RCU returns the RCU model.
func (r *Registry) RCU() *rcu.RCU { return r.rcu }

// Profile returns the kernel profile.
func (r *Registry) Profile() Profile { return r.prof }

// Cost returns the cost of op.
func (r *Registry) Cost(op costs.Op) sim.Time { return sim.Time(r.costs.Lookup(op)) }

// Stats returns the counters.
func (r *Registry) Stats() Stats { return r.stats }

// Len returns the number of listed devices.
func (r *Registry) Len() int { return r.table.Len() }

// NextIfindex returns the ifindex allocator's cursor (to persist it).
func (r *Registry) NextIfindex() int { return r.nextIfindex }

// ByIndex looks a listed device up by ifindex.
func (r *Registry) ByIndex(ifindex int) (*Device, bool) { return r.table.ByIndex(ifindex) }

// ByName looks a listed device up by name.
func (r *Registry) ByName(name string) (*Device, bool) { return r.table.ByName(name) }

// Range visits listed devices in ascending ifindex order.
func (r *Registry) Range(visit func(d *Device) bool) {
	r.table.Range(func(_ int, _ string, d *Device) bool { return visit(d) })
}

// Table exposes the device table (for listing with cursors).
func (r *Registry) Table() *devtable.Table[*Device] { return r.table }

// ---- allocation ----

// ErrNameSpace is returned when a template has no free number left.
var ErrNameSpace = errors.New("no free name number (ENFILE)")

// allocIfindex hands out the lowest free ifindex. (The kernel's
// dev_new_index is cyclic; ndst's namespace reuses freed indexes so that
// "add N; del 1 N" can be repeated, and so that the two-level bitmap's
// lowest-free search is what allocation costs.)
func (r *Registry) allocIfindex() (int, error) {
	n, err := r.ifindexes.Alloc()
	if err != nil {
		return 0, fmt.Errorf("ifindex space exhausted: %w", err)
	}
	r.nextIfindex = n
	return n, nil
}

func (r *Registry) nameBitmap(t ifname.Template) *idalloc.Bitmap {
	b, ok := r.names[t]
	if ok {
		return b
	}
	b = idalloc.NewBitmap(0, t.MaxNumber())
	r.table.Range(func(_ int, name string, _ *Device) bool {
		if n := t.Number(name); n >= 0 && n <= t.MaxNumber() {
			_ = b.Reserve(n)
		}
		return true
	})
	r.names[t] = b
	return b
}

func (r *Registry) allocName(t ifname.Template) (string, error) {
	if r.nameAlloc == NameScan {
		return r.scanName(t)
	}
	n, err := r.nameBitmap(t).Alloc()
	if err != nil {
		return "", fmt.Errorf("template %s: %w", t, ErrNameSpace)
	}
	return t.Name(n), nil
}

// scanName is __dev_alloc_name: mark every number in use by scanning all
// names, then take the first free one below KernelNameSlots.
func (r *Registry) scanName(t ifname.Template) (string, error) {
	limit := min(KernelNameSlots, t.MaxNumber()+1)
	used := make([]bool, limit)
	r.table.Range(func(_ int, name string, _ *Device) bool {
		if n := t.Number(name); n >= 0 && n < limit {
			used[n] = true
		}
		return true
	})
	for n, u := range used {
		if !u {
			return t.Name(n), nil
		}
	}
	return "", fmt.Errorf("template %s: all %d slots used: %w", t, limit, ErrNameSpace)
}

func (r *Registry) releaseName(name string) {
	for t, b := range r.names {
		if n := t.Number(name); n >= 0 && b.InUse(n) {
			_ = b.Free(n)
		}
	}
}

// ---- registration ----

// Restore lists a device that already exists (loaded from a state file)
// without running the registration path: no time passes. Its references are
// those of a registered device.
func (r *Registry) Restore(name string, ifindex int) error {
	if err := r.ifindexes.Reserve(ifindex); err != nil {
		return fmt.Errorf("restore %s: ifindex %d: %w", name, ifindex, err)
	}
	d := &Device{Name: name, Ifindex: ifindex, State: Registered}
	if err := r.table.Insert(name, ifindex, d); err != nil {
		_ = r.ifindexes.Free(ifindex)
		return fmt.Errorf("restore %s: %w", name, err)
	}
	for t, b := range r.names {
		if n := t.Number(name); n >= 0 {
			_ = b.Reserve(n)
		}
	}
	r.holdRegistered(d)
	return nil
}

func (r *Registry) holdRegistered(d *Device) {
	d.hold(HolderRegistration)
	if r.prof.ReadyRefcount > 0 {
		d.hold(HolderSelf)
	}
	for _, s := range r.prof.Subsystems {
		d.hold(s.Holder)
	}
	r.takeExtraHolds(d)
}

// Register is register_netdevice for one device named from t; the caller
// holds RTNL.
func (r *Registry) Register(t *sim.Task, tmpl ifname.Template) (*Device, error) {
	name, err := r.allocName(tmpl)
	if err != nil {
		return nil, err
	}
	return r.register(t, name)
}

// register is register_netdevice for a device whose name is already chosen.
func (r *Registry) register(t *sim.Task, name string) (*Device, error) {
	return r.registerCharging(t, name, r.Cost(costs.Register))
}

// registerCharging is register with cost as the device's register CPU: a
// child's differs from the calibrated device's (RegisterChild).
func (r *Registry) registerCharging(t *sim.Task, name string, cost sim.Time) (*Device, error) {
	ifindex, err := r.allocIfindex()
	if err != nil {
		r.releaseName(name)
		return nil, err
	}
	d := &Device{Name: name, Ifindex: ifindex, State: Registered}
	if err := r.table.Insert(name, ifindex, d); err != nil {
		r.releaseName(name)
		_ = r.ifindexes.Free(ifindex)
		return nil, err
	}
	defer t.SetPhase(t.SetPhase(phase.Register))
	t.Charge(cost)
	d.hold(HolderRegistration)
	if r.prof.ReadyRefcount > 0 {
		d.hold(HolderSelf)
	}
	for _, n := range r.notifiers {
		n.Register(r, t, d)
	}
	r.stats.Registered++
	return d, nil
}

// RTNLLock takes RTNL.
func (r *Registry) RTNLLock(t *sim.Task) {
	defer t.SetPhase(t.SetPhase(phase.RTNL))
	r.rtnl.Lock(t)
}

// RTNLUnlock releases RTNL and runs the todo list (rtnl_unlock ->
// netdev_run_todo).
func (r *Registry) RTNLUnlock(t *sim.Task) {
	r.rtnl.Unlock(t)
	r.runTodo(t)
}

// ---- unregistration ----

func (r *Registry) synchronizeNet(t *sim.Task) {
	r.stats.SyncNet++
	if r.prof.SyncNetExpedited && r.rtnl.Held() {
		defer t.SetPhase(t.SetPhase(phase.SyncNetExp))
		r.rcu.SynchronizeExpedited(t)
		return
	}
	defer t.SetPhase(t.SetPhase(phase.SyncNet))
	r.rcu.Synchronize(t)
}

// barrier is rcu_barrier where the teardown path calls it.
func (r *Registry) barrier(t *sim.Task) {
	r.stats.Barriers++
	defer t.SetPhase(t.SetPhase(phase.Barrier))
	r.rcu.Barrier(t)
}

// Barrier is rcu_barrier called by a wait strategy, attributed as such.
func (r *Registry) Barrier(t *sim.Task) {
	defer t.SetPhase(t.SetPhase(phase.Barrier))
	r.rcu.Barrier(t)
}

// closeShare splits a device's unregister work between the two loops of
// unregister_netdevice_many (rollback_registered_many in 2.6.3x): the first
// (dev_close, which does nothing for a down device; unlist_netdevice, which
// only unhashes it) takes 1/closeShare of it, and the second, after the
// first synchronize_net, the rest: dev_shutdown, the NETDEV_UNREGISTER
// notifiers (where IPv4 and IPv6 queue their RCU callbacks), the RTM_DELLINK
// message, ndo_uninit and the kobject and sysfs removal. So the callbacks
// are queued across nearly all of a batch's work. The 1/20 is an estimate,
// not measured or fitted: what matters to the timing is that the callbacks
// come after the first synchronize_net, which the source fixes.
const closeShare = 20

// UnregisterMany is unregister_netdevice_many for devs (one device when the
// profile does not batch); the caller holds RTNL. The devices end on the todo
// list, freed when RTNL is released.
func (r *Registry) UnregisterMany(t *sim.Task, devs []*Device) {
	prev := t.SetPhase(phase.Unregister)
	defer t.SetPhase(prev)
	first := r.Cost(costs.Unregister) / closeShare // an estimate (closeShare)
	r.stats.Batches++
	// dev_close (nothing for a down device), unlisting, UNREGISTERING.
	for _, d := range devs {
		d.UnregisterStart = t.Now()
		t.Charge(first)
		d.State = Unregistering
		r.homeOf(d).unlist(d)
	}
	if r.qdiscSync(devs) {
		r.synchronizeNet(t) // dev_deactivate_many
	}
	if r.prof.Batched {
		t.Charge(r.Cost(costs.UnregisterBatch))
	}
	if r.prof.SyncNetPerUnregister >= 1 {
		r.synchronizeNet(t)
	}
	// dev_shutdown, the NETDEV_UNREGISTER notifiers, the RTM_DELLINK
	// message, uninit, kobject and sysfs removal.
	for _, d := range devs {
		for _, n := range r.notifiers {
			n.Unregister(r, t, d)
		}
		t.Charge(max(0, r.Cost(costs.Unregister)-first+r.childUnregisterCost(d)))
	}
	if r.prof.FibFlush == FibFlushPerBatch {
		fibFlush(t) // NETDEV_UNREGISTER_BATCH
	}
	switch {
	case r.prof.BarrierBeforePut:
		r.barrier(t)
	case r.prof.SyncNetPerUnregister >= 2:
		r.synchronizeNet(t)
	}
	for _, d := range devs {
		d.State = Unregistered
		r.put(t, d, HolderRegistration)
		r.todo = append(r.todo, d)
		r.stats.Unregistered++
	}
}

// unlist removes a device from this registry's tables (unlist_netdevice).
func (r *Registry) unlist(d *Device) {
	r.table.Remove(d.Ifindex)
	_ = r.ifindexes.Free(d.Ifindex)
	r.releaseName(d.Name)
}

// runTodo is netdev_run_todo: wait for every device on the list and free it.
func (r *Registry) runTodo(t *sim.Task) {
	list := r.todo
	r.todo = nil
	if len(list) == 0 {
		return
	}
	prev := t.Phase()
	defer t.SetPhase(prev)
	if r.prof.BarrierInRunTodo {
		r.barrier(t)
	}
	t.SetPhase(phase.WaitLoop)
	r.waiter.Prepare(r, t, list)
	for len(list) > 0 {
		cands := list
		if !r.prof.FreeInReadyOrder {
			cands = list[:1]
		}
		t.SetPhase(phase.WaitLoop)
		d := r.waiter.WaitAny(r, t, cands)
		if d == nil { // the run was stopped while waiting
			return
		}
		r.free(t, d)
		if list[0] == d { // the common case: O(1)
			list = list[1:]
			continue
		}
		for i, x := range list {
			if x == d {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
	}
}

func (r *Registry) free(t *sim.Task, d *Device) {
	if d.State == Freed {
		panic("netdev: device " + d.Name + " freed twice")
	}
	if !r.Ready(d) {
		panic(fmt.Sprintf("netdev: freeing %s with refcount %d (held by %s)", d.Name, d.total, d.Holders()))
	}
	defer t.SetPhase(t.SetPhase(phase.Free))
	t.Charge(r.Cost(costs.Free))
	if d.refs[HolderSelf] > 0 {
		d.put(HolderSelf)
	}
	d.State = Freed
	r.freeChild(t, d)
	r.stats.Freed++
	if r.OnFree != nil {
		r.OnFree(d)
	}
}

// put drops a reference, from task t or (t == nil) from an RCU callback;
// with CheckOnRelease it also checks whether a waiter can proceed, which
// costs a check on every release: CPU time of the task, or softirq time of
// the callback's CPU.
func (r *Registry) put(t *sim.Task, d *Device, h Holder) {
	d.put(h)
	if d.State == Unregistered && !d.readied && r.Ready(d) {
		d.readied = true
		r.stats.LastRef[h]++
		if r.rcu.InNestedCallback() {
			r.stats.LastRefNested++
		}
	}
	if !r.CheckOnRelease || d.State != Unregistered {
		return
	}
	r.stats.ReleaseChecks++
	switch cpu := r.rcu.CallbackCPU(); {
	case t != nil:
		t.Charge(r.Cost(costs.RefcntCheck))
	case cpu != nil:
		cpu.Spend(r.Cost(costs.RefcntCheck))
	}
	if r.Ready(d) {
		r.stats.ReleaseWakeups++
		r.release.WakeAll()
	}
}

// ---- services for wait strategies ----

// Ready reports whether d may be freed.
func (r *Registry) Ready(d *Device) bool { return int(d.total) <= r.prof.ReadyRefcount }

// AnyReadySpinning is one pass of a wait loop that spins (Task.RelaxUntil):
// it counts the pass as a check, whose CPU the spin charges, and reports
// whether one of devs is ready.
func (r *Registry) AnyReadySpinning(devs []*Device) bool {
	r.stats.WaitChecks++
	for _, d := range devs {
		if r.Ready(d) {
			return true
		}
	}
	return false
}

// SkippedSpinning counts n passes of AnyReadySpinning that the engine did
// not run because nothing they read could have changed (sim.Task's
// RelaxUntilSteady): each would have counted a check and found none ready.
func (r *Registry) SkippedSpinning(n int64) { r.stats.WaitChecks += n }

// FirstReady checks devs in order and returns the first ready one, or nil;
// every device checked costs one refcount read.
func (r *Registry) FirstReady(t *sim.Task, devs []*Device) *Device {
	r.stats.WaitChecks++
	for _, d := range devs {
		t.Charge(r.Cost(costs.RefcntCheck))
		if r.Ready(d) {
			return d
		}
	}
	return nil
}

// WaitReleaseTimeout sleeps until a release makes one of devs ready or n
// jiffies pass (requires CheckOnRelease).
func (r *Registry) WaitReleaseTimeout(t *sim.Task, devs []*Device, n int64) {
	r.release.WaitTimeout(t, func() bool {
		for _, d := range devs {
			if r.Ready(d) {
				return true
			}
		}
		return false
	}, n)
}

// NoteSleep counts one sleep of a wait loop.
func (r *Registry) NoteSleep() { r.stats.WaitSleeps++ }

// Rebroadcast resends NETDEV_UNREGISTER for devs under RTNL, as the wait
// loop does every second, so that subsystems that missed it drop their
// references (__rtnl_unlock: the todo list is not run from here).
func (r *Registry) Rebroadcast(t *sim.Task, devs []*Device) {
	r.stats.Rebroadcasts++
	r.RTNLLock(t)
	for _, d := range devs {
		for _, n := range r.notifiers {
			n.Unregister(r, t, d)
		}
		t.Charge(r.Cost(costs.Rebroadcast))
	}
	if r.prof.RebroadcastBarrier {
		// Modern lines drop RTNL for an rcu_barrier() before running a
		// pending linkwatch event under RTNL again (none is pending for
		// a device that never came up).
		r.rtnl.Unlock(t)
		r.Barrier(t)
		r.RTNLLock(t)
	}
	r.rtnl.Unlock(t)
}

// WarnWaiting prints the kernel's warning for a device still referenced,
// in the kernel's words (net/core/dev.c netdev_wait_allrefs[_any]); with
// RefTracker, then the holders as ref_tracker_dir_print lists them (the
// model names the holder where the kernel prints its stack).
func (r *Registry) WarnWaiting(d *Device) {
	r.stats.Warnings++
	r.e.Printk("unregister_netdevice: waiting for %s to become free. Usage count = %d", d.Name, d.total)
	if !r.RefTracker {
		return
	}
	for h := HolderIPv4; h < numHolders; h++ {
		if n := d.refs[h]; n > 0 {
			r.e.Printk("ref_tracker: netdev@%s has %d/%d users at %s", d.Name, n, d.total-int32(r.prof.ReadyRefcount), h)
		}
	}
}

// ---- the route-cache flush ----

// fibNotifier is the IPv4 fib handler of 2.6.31/32, whose NETDEV_UNREGISTER
// flushes the route cache in every event, the first and each rebroadcast.
type fibNotifier struct{}

func (fibNotifier) Register(*Registry, *sim.Task, *Device) {}

func (fibNotifier) Unregister(_ *Registry, t *sim.Task, _ *Device) { fibFlush(t) }

// fibFlush is rt_do_flush: its loop over the hash buckets calls
// cond_resched() when a reschedule is pending (net/ipv4/route.c); its own
// CPU cost is part of the unregister cost.
func fibFlush(t *sim.Task) { t.CondResched() }
