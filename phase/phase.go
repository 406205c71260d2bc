// Package phase names the phases of a teardown that ndst attributes time to,
// on the emulated kernel (where every wait is attributed as it happens) and
// on the real one (where sampled kernel stacks are mapped onto the same
// names), so that the two can be read side by side.
//
// A phase is where the deleting task is: in a kernel function that waits
// (synchronize_net, rcu_barrier, the wait loop's sleep, rtnl_lock) or doing
// CPU work of its own (the syscall, registering, unregistering, freeing).
// Its time splits into CPU and waiting.
package phase

// The phases, named after the kernel functions they stand for.
const (
	Syscall      = "syscall"             // entering and leaving the kernel
	Register     = "register_netdevice"  // per-device registration work
	Unregister   = "unregister"          // per-device unregister work (rollback_registered[_many], notifiers)
	SyncNet      = "synchronize_net"     // a normal grace period
	SyncNetExp   = "synchronize_net:exp" // an expedited grace period (RTNL held)
	Barrier      = "rcu_barrier"         // waiting for queued callbacks to run
	WaitLoop     = "netdev_wait_allrefs" // the wait loop: its sleeps and checks
	RTNL         = "rtnl_lock"           // waiting for RTNL
	Free         = "free"                // the destructor once the references are gone
	NetnsCleanup = "cleanup_net"         // waiting for the namespace cleanup work
	Other        = "other"               // anything not named above
)

// All lists the phases in the order a teardown usually meets them.
var All = []string{Syscall, Register, Unregister, SyncNet, SyncNetExp, Barrier, WaitLoop, RTNL, Free, NetnsCleanup, Other}

// Describe says in a few words what a phase is.
func Describe(p string) string {
	switch p {
	case Syscall:
		return "entering and leaving the kernel"
	case Register:
		return "registering devices (CPU)"
	case Unregister:
		return "unregister work: close, unlist, notifiers (CPU)"
	case SyncNet:
		return "synchronize_net(): a normal grace period"
	case SyncNetExp:
		return "synchronize_net(): an expedited grace period"
	case Barrier:
		return "rcu_barrier(): waiting for queued RCU callbacks"
	case WaitLoop:
		return "netdev_wait_allrefs(): polling the refcount and sleeping"
	case RTNL:
		return "waiting for RTNL"
	case Free:
		return "freeing the device (CPU)"
	case NetnsCleanup:
		return "waiting for the namespace cleanup work"
	}
	return "other"
}
