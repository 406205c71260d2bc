package netdev

import (
	"errors"
	"fmt"
	"math"
)

// The user namespace's count of network namespaces (kernel/ucount.c,
// read in 5.10 and 6.18): copy_net_ns takes one (inc_net_namespaces)
// before it sets the namespace up and fails with ENOSPC when the count
// would pass user.max_net_namespaces; cleanup_net gives it back
// (dec_net_namespaces) only after the namespace's exit methods and the
// final rcu_barrier(). So namespaces waiting for cleanup still count, and
// a cleanup that falls behind makes creates fail. The initial namespace is
// not counted. The kernel's default is max_threads/2 (kernel/fork.c), which
// depends on the machine's memory; the emulated machine has none, so its
// default is no limit.

// ErrNetnsLimit is Create's error when user.max_net_namespaces is reached.
var ErrNetnsLimit = errors.New("no space left on device (ENOSPC)")

// defaultMaxNetns is the emulated machine's limit when none is given.
const defaultMaxNetns = math.MaxInt32

// netnsCounted is the user namespace's count: namespaces created and not
// yet freed by cleanup_net, and those being created (counted from the
// start of copy_net_ns, so that creates running at once on several tasks
// count each other).
func (ns *Namespaces) netnsCounted() int64 {
	return ns.stats.Created + ns.creating + ns.restored - ns.stats.Freed
}

// checkNetnsLimit is inc_net_namespaces: on success the create is
// counted until it ends (createDone).
func (ns *Namespaces) checkNetnsLimit(name string) error {
	if n := ns.netnsCounted(); n >= int64(ns.MaxNetNamespaces) {
		return fmt.Errorf("%s: %w: user.max_net_namespaces is %d and %d namespaces count against it (%d of them waiting for cleanup)",
			name, ErrNetnsLimit, ns.MaxNetNamespaces, n, ns.waitingCleanup())
	}
	ns.creating++
	return nil
}

// createDone ends a create's count as a create in progress: made, it is
// counted as created from then on; failed, the count is given back.
func (ns *Namespaces) createDone() { ns.creating-- }

// waitingCleanup counts the namespaces put but not yet freed.
func (ns *Namespaces) waitingCleanup() int64 { return ns.stats.Queued - ns.stats.Freed }
