package netdev

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Profile bundles the kernel behaviour around the wait for references: how
// unregister is batched, which grace periods it waits for, when a device
// counts as ready, and how RCU itself behaves in that kernel generation.
// A profile and a wait strategy are independent choices.
type Profile struct {
	Name string
	// Batched: unregister_netdevice_many handles a whole list at once
	// (2.6.33+); otherwise every device has its own rollback_registered and
	// its own netdev_run_todo.
	Batched bool
	// SyncNetPerUnregister is the number of synchronize_net() calls in one
	// unregister call (per device when not batched, per batch otherwise).
	SyncNetPerUnregister int
	// SyncNetExpedited: synchronize_net is expedited because RTNL is held.
	SyncNetExpedited bool
	// SyncNetInClose: closing the devices (dev_deactivate_many, for a
	// device with a queueing discipline) adds one synchronize_net of its own.
	SyncNetInClose bool
	// BarrierBeforePut: rcu_barrier() before dropping the registration
	// references (ef885afb, 2.6.33), replacing the last synchronize_net.
	BarrierBeforePut bool
	// BarrierInRunTodo: netdev_run_todo does one rcu_barrier() for its list
	// after dropping RTNL (modern kernels).
	BarrierInRunTodo bool
	// ReadyRefcount is the refcount at which a device may be freed: 0 in
	// 2.6.3x, 1 in modern kernels (the todo list's own reference).
	ReadyRefcount int
	// FreeInReadyOrder frees devices as they become ready
	// (netdev_wait_allrefs_any) instead of strictly in list order.
	FreeInReadyOrder bool
	// DefaultStrategy is the profile's own wait loop.
	DefaultStrategy string
	// RCU behaviour of that kernel generation.
	GPKthread        bool
	ModernFQS        bool // FQS interval 1/2/3 jiffies by HZ; else 3
	BarrierSkipsIdle bool
	BarrierEntrains  bool
	ExpeditedSleeps  bool
	CondReschedQS    bool
	// PreemptibleRCU: PREEMPT_RCU is built even when the preemption model
	// is none or voluntary (PREEMPT_DYNAMIC distribution kernels); otherwise
	// RCU is preemptible only under full preemption.
	PreemptibleRCU bool
	StallTimeout   sim.Time
}

// Profiles are the built-in kernel profiles, by name.
var Profiles = map[string]Profile{
	"2.6.31": {
		Name:                 "2.6.31",
		SyncNetPerUnregister: 2,
		ReadyRefcount:        0,
		DefaultStrategy:      "msleep250",
		StallTimeout:         10 * sim.Second,
	},
	"2.6.33": {
		Name:                 "2.6.33",
		Batched:              true,
		SyncNetPerUnregister: 1,
		BarrierBeforePut:     true,
		ReadyRefcount:        0,
		DefaultStrategy:      "msleep250",
		StallTimeout:         10 * sim.Second,
	},
	"6.18": {
		Name:                 "6.18",
		Batched:              true,
		SyncNetPerUnregister: 2,
		SyncNetExpedited:     true,
		SyncNetInClose:       true,
		BarrierInRunTodo:     true,
		ReadyRefcount:        1,
		FreeInReadyOrder:     true,
		DefaultStrategy:      "backoff",
		GPKthread:            true,
		ModernFQS:            true,
		BarrierSkipsIdle:     true,
		BarrierEntrains:      true,
		ExpeditedSleeps:      true,
		CondReschedQS:        true,
		PreemptibleRCU:       true,
		StallTimeout:         21 * sim.Second,
	},
}

// ProfileNames lists the profiles in a stable order.
var ProfileNames = []string{"2.6.31", "2.6.33", "6.18"}

// LookupProfile returns the named profile.
func LookupProfile(name string) (Profile, error) {
	p, ok := Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames, ", "))
	}
	return p, nil
}

// RCUConfig derives the RCU model's configuration for this profile on a
// machine with the given HZ and preemption model.
func (p Profile) RCUConfig(hz int, preempt sim.Preempt, flavor rcu.Flavor, ct *costs.Table) rcu.Config {
	fqs := 3 // RCU_JIFFIES_TILL_FORCE_QS in 2.6.3x
	if p.ModernFQS {
		fqs = rcu.FQSJiffiesFor(hz)
	}
	return rcu.Config{
		Flavor:           flavor,
		Preemptible:      p.PreemptibleRCU || preempt == sim.PreemptFull,
		GPKthread:        p.GPKthread && flavor == rcu.Tree,
		FQSJiffies:       fqs,
		BarrierSkipsIdle: p.BarrierSkipsIdle,
		BarrierEntrains:  p.BarrierEntrains,
		ExpeditedSleeps:  p.ExpeditedSleeps,
		CondReschedQS:    p.CondReschedQS,
		StallTimeout:     p.StallTimeout,
		CallRCUCost:      sim.Time(ct.Lookup(costs.CallRCU)),
		CallbackCost:     sim.Time(ct.Lookup(costs.RCUCallback)),
		IPICost:          sim.Time(ct.Lookup(costs.IPI)),
		KthreadCost:      sim.Time(ct.Lookup(costs.ContextSwitch)),
	}
}
