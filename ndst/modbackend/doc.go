// Package modbackend is the kernel-module backend of ndst: it implements
// ndst.Backend by writing to the files of the ndst kernel module (kmod/,
// ndst.ko), /proc/sys/net/ndst/add, del and del_batch, the interface of the
// 2009 test module. The module registers and unregisters the devices inside
// the kernel and times each operation with ktime, so a Result carries both
// the wall time of the write (what ndst saw) and the module's in-kernel
// duration (Counters["kernel_ns"]), and for add and one-by-one del the
// per-device in-kernel latencies.
//
// # Namespace
//
// The module keeps one set of files per network namespace and acts on the
// namespace a file was opened in. The backend works in a named namespace of
// ndst's own (Options.Netns, "ndst" by default), which it opens, creates and
// guards exactly as the netlink backend does (it uses that backend for the
// namespace and for listing its links): the host's root namespace is refused
// unless Options.AllowRootNS. The files are opened on a locked OS thread that
// has entered the namespace and is then thrown away, so the process itself
// never changes namespace.
//
// # Ownership
//
// The module's devices are of its own link kind, "ndst": rtnetlink can
// neither create nor delete them, and the module touches no other device.
// The backend learns which devices are the module's from the module
// (/proc/sys/net/ndst/devices); List marks every other link of the
// namespace Foreign, including links the netlink backend made there.
//
// # Operations
//
//   - Add writes "N TEMPLATE" to add: the module registers N devices, each in
//     its own RTNL section, named by the kernel from the template (one %d,
//     lowest free number).
//   - Del writes "START STOP" to del (OneByOne: one unregister per device, in
//     ascending ifindex order, like the 2009 module) or to del_batch (one
//     unregister_netdevice_many for the range). A range without any of the
//     module's devices fails before anything is written.
//   - Hold and Release use /proc/sys/net/ndst/hold: one extra reference on
//     one of the module's devices, released by the module after a given time
//     (at most MaxHold) or on Release. While it is held, deleting the device
//     waits, and the kernel logs "unregister_netdevice: waiting for NAME to
//     become free. Usage count = N".
//
// # Faults
//
// Input is validated before anything is written (the module validates again
// and rejects what does not parse with EINVAL, changing nothing). Every write
// to the module runs under a timeout computed from the request (and, for
// del, the longest hold in force); a write that outlives it marks the
// backend broken, since the module may still be working. The in-kernel
// duration is read back from /proc/sys/net/ndst/last and trusted only when
// its sequence number shows that no other writer came in between; otherwise
// a note says so and Counters has no kernel_ns.
//
// Linux only: on other systems Open returns an error saying so.
package modbackend

import (
	"time"

	"go.uber.org/zap"
)

// Options configures the module backend.
type Options struct {
	// Netns is the network namespace's name under /run/netns; default "ndst".
	Netns string
	// NoCreate makes Open fail when the namespace does not exist, instead
	// of creating it (list and del must not leave a namespace behind).
	NoCreate bool
	// AllowRootNS allows Netns to name the host's root namespace.
	AllowRootNS bool
	// Logger receives debug logs; nil means none.
	Logger *zap.Logger
	// Notef prints a one-line notice to the user; nil means notices only go
	// to the Result's Notes.
	Notef func(format string, args ...any)
}

// Limits of the module (kmod/ndst.h).
const (
	// MaxAdd is the most devices one add may create: the kernel's %d name
	// allocator covers 32768 numbers per template.
	MaxAdd = 32768
	// MaxHold is the longest hold the module accepts.
	MaxHold = 600 * time.Second
)

// Dir is where the module's files appear.
const Dir = "/proc/sys/net/ndst"

// Kind is the link kind of the module's devices.
const Kind = "ndst"
