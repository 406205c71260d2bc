package netdev

import "github.com/ndst-project/ndst/sim"

// Naming a namespace. A namespace that dies with its process (unshare)
// is the kernel's create alone: copy_net_ns and setup_net (Create). A
// named one costs its creator more before it is there: the real backend
// (ndst/nlbackend, makeNamespace and recordAndMount) opens the
// namespace's nsfs file to read its identity, writes its ownership record
// under /run/ndst (the file of a deleted record, or a new one, written and
// renamed, not synced: it goes at reboot with the namespace), creates its
// mount point under
// /run/netns and bind-mounts the namespace on it, as `ip netns add` does
// the last two.
// That is filesystem work, not the network stack's, and what it costs
// follows the filesystem that holds /run (calibrate's netnsfs_linux.go
// says why on ext4 without a journal); calibrate measures it as the time
// a named create takes beyond an unshared one ("netns_files_ns").
//
// It is charged as CPU of the creating task, whose waits for the file
// system it holds too: the model has no disk.

// PhaseNetnsFiles is the time naming a namespace takes (NameNamespace).
const PhaseNetnsFiles = "netns_files"

// NameNamespace is what naming the new namespace n costs its creator t
// after the kernel's create (and its links) are done: its record, mount
// point and bind mount. Nothing is charged where the cost is 0 (the
// built-in table, and tables calibrated before it was measured).
func (ns *Namespaces) NameNamespace(t *sim.Task, n *Netns) {
	if ns.costs.Files <= 0 || n == nil {
		return
	}
	defer t.SetPhase(t.SetPhase(PhaseNetnsFiles))
	t.Charge(ns.costs.Files)
}
