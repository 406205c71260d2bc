// Package nlbackend is the real-kernel backend of ndst: it implements
// ndst.Backend with rtnetlink (github.com/vishvananda/netlink and its nl
// package) inside a named network namespace of ndst's own.
//
// # Namespace
//
// The backend works in the network namespace Options.Netns ("ndst" by
// default), a bind mount under /run/netns like the ones `ip netns add`
// makes; Open creates it when it is missing. All sockets are opened inside it
// with netlink.NewHandleAt and nl.GetNetlinkSocketAt, so the process itself
// never changes namespace; creating a namespace happens on a locked OS thread
// that is thrown away afterwards. A name that resolves to the host's root
// namespace (that of PID 1) is refused unless Options.AllowRootNS.
//
// # Ownership
//
// Every link ndst creates carries an interface group (IFLA_GROUP, set in the
// same RTM_NEWLINK that creates it, so there is no moment when an ndst link
// is unmarked) in the range OwnedGroupMin..OwnedGroupMax: new links get
// GroupOwned (0x6e647374, "ndst"); a batched delete may move the links it is
// about to delete to a private group of the same range. A link whose group is
// outside that range is foreign (lo, anything a person added): del never
// touches it and reports it as skipped, and List marks it Foreign. By hand,
// `ip -n ndst link show group 1852076916` (GroupOwned in decimal) lists
// ndst's links, save those an interrupted batched delete left in a private
// group.
//
// # Operations
//
//   - Add creates N links named from the template with the lowest free
//     numbers among the names present in the namespace. Requests are
//     pipelined: many RTM_NEWLINK messages are written before their
//     acknowledgements are read, and there is no extra RTM_GETLINK per link.
//     Kind dummy falls back to ifb (with one notice) when the kernel has no
//     dummy link type, unless the kind was given explicitly.
//   - veth: a pair is two devices. add N with kind veth needs an even N and
//     creates N/2 pairs; both ends are named from the template (consecutive
//     free numbers; the kernel registers the peer first, so the peer gets
//     the lower number and the lower ifindex) and both are owned. The kernel cannot delete one end alone, so del treats a pair as
//     one unit: when one end is in the range its peer is deleted too, and
//     both are counted (a note says how many peers lay outside the range).
//   - Del deletes the owned links whose ifindex is in [Start, Stop]: by
//     default as one batch, a single RTM_DELLINK with ifindex 0 and
//     IFLA_GROUP (the links are first moved to a private group unless they
//     already form a whole group); with OneByOne, one RTM_DELLINK per link
//     (per pair for veth), each waited for like a loop of `ip link del`,
//     recording per-device latency.
//   - List dumps every device of the namespace, retrying dumps that the
//     kernel marks interrupted (netlink.ErrDumpInterrupted) a bounded number
//     of times; partial listings are never returned.
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
	"github.com/ndst-project/ndst/ndst"
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
	// AllowRootNS allows Netns to name the host's root namespace.
	AllowRootNS bool
	// Logger receives debug logs; nil means none.
	Logger *zap.Logger
	// Notef prints a one-line notice to the user (such as the dummy
	// fallback); nil means notices only go to the Result's Notes.
	Notef func(format string, args ...any)
}

// DefaultNetns is the namespace used when Options.Netns is empty.
const DefaultNetns = "ndst"

// MaxNetnsLen bounds namespace names.
const MaxNetnsLen = 64

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

// ValidateNetns checks a namespace name: 1..64 bytes of [A-Za-z0-9_.-], not
// "." and without "..", so that it is one plain file name under /run/netns.
func ValidateNetns(name string) error {
	switch {
	case name == "":
		return ndst.Usagef("network namespace name is empty")
	case len(name) > MaxNetnsLen:
		return ndst.Usagef("network namespace name %q is %d bytes; at most %d", name, len(name), MaxNetnsLen)
	case name == ".":
		return ndst.Usagef("network namespace name %q is reserved", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return ndst.Usagef("network namespace name %q contains %q; allowed are letters, digits, '_', '.' and '-'", name, c)
		}
		if c == '.' && i+1 < len(name) && name[i+1] == '.' {
			return ndst.Usagef("network namespace name %q contains \"..\"", name)
		}
	}
	return nil
}

// ValidateKind checks a link kind; "" means the default, dummy.
func ValidateKind(kind string) error {
	switch kind {
	case "", "dummy", "ifb", "veth":
		return nil
	}
	return ndst.Usagef("unknown link kind %q; want one of dummy, ifb, veth", kind)
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

// note calls Notef when it is set.
func (o Options) note(format string, args ...any) {
	if o.Notef != nil {
		o.Notef(format, args...)
	}
}
