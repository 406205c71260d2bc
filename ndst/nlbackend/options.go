// Package nlbackend is the real-kernel backend of ndst: it implements
// ndst.Backend with rtnetlink inside a named network namespace of ndst's
// own: raw requests on a socket of its own for the hot paths (rawnl_linux.go:
// batched creates, group moves and deletes, a lean link dump) and
// github.com/vishvananda/netlink for the one-by-one delete. Delete requests
// are sent by a sender (package sender), normally a child process, so that
// one the kernel never finishes cannot keep ndst from exiting.
//
// # Namespace
//
// The backend works in the network namespace Options.Netns ("ndst" by
// default), a bind mount under /run/netns like the ones `ip netns add`
// makes; Open creates it when it is missing. Sockets are opened inside it
// from a locked OS thread that enters the namespace and is thrown away
// afterwards (socketAt; netlink.NewHandleAt for the library's handle, opened
// on first use), so the process itself never changes namespace; creating a
// namespace happens on such a thread too.
//
// The host's root namespace is recognised by identity, never by context: a
// name whose namespace has the initial namespace's nsfs inode
// (PROC_NET_INIT_INO) on the nsfs device, or is PID 1's namespace where that
// can be read, is the root, whichever namespace ndst itself runs in (see
// rootNamespace in netns_linux.go). There List works, with a warning, and
// Add, Del and Reset refuse unless Options.AllowRootNS.
//
// Every command that changes the namespace (Add, Del, Reset) holds its lock
// (lock_linux.go: flock on the namespace's own inode) from its listing to
// its last request, waiting up to Options.WaitLock for another holder.
//
// # Ownership
//
// Every link ndst creates carries an interface group (IFLA_GROUP, set in the
// same RTM_NEWLINK that creates it, so there is no moment when an ndst link
// is unmarked) in the range OwnedGroupMin..OwnedGroupMax. Each Add puts its
// links in a group of their own, unused when it starts (earlier versions
// used GroupOwned, 0x6e647374, for all); a batched delete may move the links
// it is about to delete to another unused group. A link whose group is
// outside that range is foreign (lo, anything a person added): del never
// touches it and reports it as skipped, and List marks it Foreign.
//
// # Operations
//
//   - Add creates N links named from the template with the lowest free
//     numbers among the names present in the namespace; with no template
//     chosen (Options.NameExplicit false and the default dummy%d asked for)
//     the template is named after the kind created: ifb%d, veth%d. Creates
//     go in windows of 256: one datagram of RTM_NEWLINKs per window (with
//     AddRequest.OneByOne, one timed send per link), none asking for an
//     acknowledgement, then a barrier that collects the failures; there is
//     no extra RTM_GETLINK per link.
//     Kind dummy falls back to ifb (with one notice) when the kernel has no
//     dummy link type, unless the kind was given explicitly. Add bounds its
//     kernel memory (memory_linux.go): the cost per link is measured on the
//     first window of creates, and a request that would not fit is refused
//     and undone unless Options.NoMemoryCheck.
//   - veth: a pair is two devices. add N with kind veth needs an even N and
//     creates N/2 pairs; both ends are named from the template (consecutive
//     free numbers; the kernel registers the peer first, so the peer gets
//     the lower number and the lower ifindex) and both are owned. The kernel
//     cannot delete one end alone, so del treats a pair as one unit: when
//     one end is in the range its peer is deleted too, and both are counted
//     (a note says how many peers lay outside the range).
//   - Del deletes exactly the owned links it listed whose ifindex is in
//     [Start, Stop]: by default as a batch, one RTM_DELLINK with ifindex 0
//     and IFLA_GROUP per group when the links are every link of at most
//     maxGroupDeletes groups (groups no other add joins), else one for a
//     group unique to this delete that the links are first moved to; with
//     OneByOne, one RTM_DELLINK per link (per pair for veth), each waited
//     for like a loop of `ip link del`, recording per-device latency.
//   - Holds (Options.Holds, --hold socket@DEVICE=DURATION) make Del hold a
//     genuine reference on devices it deletes the way a packet socket's send
//     does (package heldref), to test leak diagnosis against the kernel's own
//     behaviour; they end with Del.
//   - List dumps every device of the namespace, retrying dumps that the
//     kernel marks interrupted (NLM_F_DUMP_INTR) a bounded number
//     of times; partial listings are never returned. The kernel does not
//     report reference counts: Device.Refcount is unknown.
//   - ResetNamespace deletes the devices and then the namespace, and reports
//     what it deleted, naming the devices that were not ndst's.
//
// # Teardown
//
// Del is watched (watch_linux.go). The kernel log is read from the
// command's start (package kmsg) and its lines about devices that cannot be
// freed ("waiting for X to become free", ref_tracker) go to
// Result.KernelLog; an unreadable log is one note, never a failure. With
// DelRequest.Attribute the sender's kernel stack is sampled at 1 kHz while
// each request runs (package stacks) and Result.Phases splits the command's
// time as the emulated kernel does (time between requests, ndst's own, is
// "other"); without the privilege or the stack file, one note says which and
// the delete runs. Each delete request is waited for at most
// DelRequest.GiveUp (default 60 s plus 5 ms per device); after that the
// result is ResultStuck, with the devices the kernel named, and a Verdict
// (verdict.go): leak when the wait, spent in the wait loop, is at least
// LeakRatio times the host's grace period measured then with membarrier,
// else slow, with the figures.
//
// # Faults
//
// Input is validated before anything changes. Missing privileges
// (CAP_NET_ADMIN, CAP_SYS_ADMIN) give one line naming them and the UID.
// Every link is created and deleted by one atomic kernel request, so an
// interrupted run (context cancelled, a name taken, the namespace deleted
// under us) leaves only whole links; the Result then says how many were
// created or deleted, and a rerun succeeds. Every wait on the kernel has a
// timeout.
//
// Linux only: on other systems Open and Reset return an error saying so.
package nlbackend

import (
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/statefile"
	"go.uber.org/zap"
)

// Options configures the netlink backend.
type Options struct {
	// Netns is the network namespace's name under /run/netns; default "ndst".
	Netns string
	// Kind is the link kind: "dummy" (default), "ifb" or "veth".
	Kind string
	// KindExplicit is true when the user chose Kind: then dummy never falls
	// back to ifb.
	KindExplicit bool
	// NoCreate makes Open fail when the namespace does not exist, instead
	// of creating it (list and del must not leave a namespace behind).
	NoCreate bool
	// AllowRootNS allows add, del and reset in the host's root namespace
	// (the initial one, or PID 1's). Listing it needs no permission.
	AllowRootNS bool
	// WaitLock is how long a command that changes the namespace waits for
	// another ndst holding its lock; 0 tries once.
	WaitLock time.Duration
	// NameExplicit is true when the user chose the name template. When it
	// is false and a request asks for the default template (dummy%d), the
	// devices are named after the kind created: ifb%d, veth%d.
	NameExplicit bool
	// NoMemoryCheck lets add go ahead when its estimated kernel memory
	// exceeds what is available (see memory_linux.go).
	NoMemoryCheck bool
	// Holds are references to hold on purpose while Del deletes (see
	// Hold): a genuine held reference, to test leak diagnosis against.
	Holds []Hold
	// Logger receives debug logs; nil means none.
	Logger *zap.Logger
	// Notef prints a one-line notice to the user (such as the dummy
	// fallback); nil means notices only go to the Result's Notes.
	Notef func(format string, args ...any)
	// Warnf prints a one-line notice that no Result carries (a listing of
	// the host's root namespace); nil means it is dropped.
	Warnf func(format string, args ...any)
}

// Hold asks Del to hold a reference to Device ("" for every device it
// deletes) the way a packet socket's send does (package heldref), from
// just before the delete, for For or, Forever, until ndst ends (at most
// heldref.MaxHold): the kernel's unregister of that device waits for it.
type Hold struct {
	Device  string
	For     time.Duration
	Forever bool
}

// maxHolds bounds the references one Del holds (each is a thread of its own).
const maxHolds = 64

// DefaultNetns is the namespace used when Options.Netns is empty.
const DefaultNetns = "ndst"

// MaxNetnsLen bounds namespace names.
const MaxNetnsLen = statefile.MaxNetnsNameLen

// Kinds lists the supported link kinds.
var Kinds = []string{"dummy", "ifb", "veth"}

// Ownership marks (see the package doc).
const (
	// GroupOwned is the interface group of every link ndst creates.
	GroupOwned uint32 = 0x6e647374
	// OwnedGroupMin and OwnedGroupMax bound the groups ndst considers its own.
	OwnedGroupMin uint32 = 0x6e640000
	OwnedGroupMax uint32 = 0x6e64ffff
)

// Owned reports whether a link in interface group g was created by ndst.
func Owned(g uint32) bool { return g >= OwnedGroupMin && g <= OwnedGroupMax }

// ValidateNetns checks a namespace name: 1..64 bytes of valid UTF-8 made
// of letters (with their combining marks) and digits of any script (`ip
// netns add` takes them too),
// '_', '.' and '-', not "." and without "..", so that it is one plain file
// name under /run/netns that prints as it is.
func ValidateNetns(name string) error { return ndst.ValidateNetnsName(name) }

// ValidateKind checks a link kind; "" means the default, dummy.
func ValidateKind(kind string) error {
	switch kind {
	case "", "dummy", "ifb", "veth", ndst.KindVLAN, ndst.KindMacvlan:
		return nil
	}
	return ndst.Usagef("unknown link kind %q; want one of dummy, ifb, veth, vlan, macvlan (the last two with --parent)", kind)
}

// normalize validates o and fills its defaults.
func (o Options) normalize() (Options, error) {
	if o.Netns == "" {
		o.Netns = DefaultNetns
	}
	if err := ValidateNetns(o.Netns); err != nil {
		return o, err
	}
	if err := ValidateKind(o.Kind); err != nil {
		return o, err
	}
	if o.Kind == "" {
		o.Kind = "dummy"
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o, nil
}

// warn calls Warnf when it is set.
func (o Options) warn(format string, args ...any) {
	if o.Warnf != nil {
		o.Warnf(format, args...)
	}
}

// note calls Notef when it is set.
func (o Options) note(format string, args ...any) {
	if o.Notef != nil {
		o.Notef(format, args...)
	}
}
