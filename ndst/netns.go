package ndst

import (
	"context"
	"errors"
	"math"
	"strings"

	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/statefile"
)

// The network-namespace part of the driver contract: "netns add N" creates
// N namespaces named from a template (each with lo, K links and optionally a
// veth pair whose other end is in the backend's own namespace), "netns del
// START STOP" deletes the namespaces numbered START..STOP, and "netns list"
// shows them. A backend that implements it implements NetnsBackend; both the
// emulated kernel and the real one report a delete in one NetnsTimes shape:
// when the delete returned, when the namespaces' devices were gone, and when
// the kernel's cleanup of them was done.

// NetnsBackend is the optional namespace part of a Backend.
type NetnsBackend interface {
	// NetnsAdd creates req.Count namespaces.
	NetnsAdd(ctx context.Context, req NetnsAddRequest) (*Result, error)
	// NetnsDel deletes the namespaces numbered req.Start..req.Stop of
	// req.Template, and reports the three times in Result.Netns.
	NetnsDel(ctx context.Context, req NetnsDelRequest) (*Result, error)
	// NetnsList returns the namespaces, ordered by name.
	NetnsList(ctx context.Context, req NetnsListRequest) ([]Netns, error)
}

// ErrNoNetns is returned (wrapped) when a namespace named by the command does
// not exist, or a range covers none; the CLI exits 1.
var ErrNoNetns = errors.New("no such network namespace")

// DefaultNetnsTemplate names namespaces when no template is given.
const DefaultNetnsTemplate = "ndst%d"

// MaxNetnsCount bounds "netns add N".
const MaxNetnsCount = 1 << 20

// MaxNetnsLinks bounds the links of each namespace ("--links K").
const MaxNetnsLinks = 1 << 16

// NetnsAddRequest asks for Count namespaces.
type NetnsAddRequest struct {
	Count    int
	Template NetnsTemplate
	// Links is the number of links created in each namespace besides lo,
	// named from LinkTemplate, of link kind Kind (the netlink backend's;
	// the emulated kernel's links are all alike).
	Links        int
	LinkTemplate Template
	Kind         string
	// Veth adds one veth pair per namespace: VethInner (default "eth0")
	// inside, the other end, named from VethTemplate (default veth%d), in
	// the backend's own namespace (the initial one for the emulated
	// kernel, ndst's namespace for netlink).
	Veth         bool
	VethInner    string
	VethTemplate Template
	// LoUp sets lo up in each namespace (addresses 127.0.0.1 and ::1 and
	// their routes, as the kernel adds them).
	LoUp bool
	// Addrs sets each namespace's links up with addresses (addrs.go).
	Addrs Addrs
}

// NetnsDelRequest asks to delete the namespaces named Template with a number
// in [Start, Stop].
type NetnsDelRequest struct {
	Start, Stop int
	Template    NetnsTemplate
	// OneByOne deletes the namespaces one after another and waits for
	// each one's whole cleanup (cleanup_net, to its final rcu_barrier())
	// before deleting the next; otherwise they are all deleted at once and
	// waited for together.
	OneByOne bool
	// CNI deletes them one after another as a container runtime does with
	// a CNI plugin's DEL: first the pod's veth from inside its namespace
	// (RTM_DELLINK of the inner end, which returns once both ends are
	// unregistered and freed), then the namespace, whose cleanup is not
	// waited for before the next pod.
	CNI bool
	// Recreate creates that many new namespaces (the next free numbers of
	// Template) as soon as the deletes have returned, while the cleanup
	// runs, as a host restarting its pods does; the result says how long
	// each creation took and whether it waited for the cleanup.
	Recreate int
}

// NetnsRecreate is how the creations of NetnsDelRequest.Recreate went.
type NetnsRecreate struct {
	Requested int `json:"requested"`
	// Created counts the creations done when the run ended; Blocked those
	// that found the pernet lock (net_mutex) held by the cleanup and
	// waited for it, WaitedNS the longest such wait (up to the run's end
	// for a creation still waiting).
	Created  int   `json:"created"`
	Blocked  int   `json:"blocked"`
	WaitedNS int64 `json:"waited_ns"`
	// Latency is each finished creation's time, from the deletes'
	// return.
	Latency *Latency `json:"latency,omitempty"`
}

// NetnsListRequest asks for the namespaces.
type NetnsListRequest struct{}

// Netns is one namespace as a backend reports it.
type Netns struct {
	Name string `json:"name"`
	// Devices counts its devices, lo included.
	Devices int `json:"devices"`
	// LoUp reports whether lo is up.
	LoUp bool `json:"lo_up"`
	// Peers names the other ends of its veth pairs, as "namespace/device"
	// ("" for the backend's own namespace: just "device").
	Peers []string `json:"peers,omitempty"`
	// Foreign is true for a namespace ndst did not create; it is never
	// deleted.
	Foreign bool `json:"foreign,omitempty"`
	// Leftover is true for an empty file an ndst killed while it created
	// or deleted the namespace left (with its ownership record): not a
	// namespace; the next netns add, netns del or reset removes it.
	Leftover bool `json:"leftover,omitempty"`
}

// NetnsTimes is what a namespace delete measured. Times are from the start of
// the command, on the backend's clock (virtual for the emulated kernel, wall
// for the real one); nil where the backend could not observe them.
type NetnsTimes struct {
	Namespaces int    `json:"namespaces"`
	Style      string `json:"style"` // "all-at-once" or "one-by-one"
	// ReturnedNS is when the last namespace's delete returned (its last
	// reference dropped: the kernel only queues it for cleanup).
	ReturnedNS int64 `json:"returned_ns"`
	// GoneNS is when the last device of the deleted namespaces (host-side
	// veth ends included) was unregistered: unlisted and announced with
	// RTM_DELLINK.
	GoneNS *int64 `json:"gone_ns"`
	// DoneNS is when the cleanup of the last namespace was done: its
	// devices freed, the final rcu_barrier() passed, the namespace freed.
	DoneNS *int64 `json:"done_ns"`
	// Gone and Done are the per-namespace latencies from its delete to its
	// devices gone and to its cleanup done.
	Gone *Latency `json:"gone,omitempty"`
	Done *Latency `json:"done,omitempty"`
	// Batches is the number of cleanup runs (one cleanup_net work takes
	// every namespace queued so far); BatchSizes their sizes in order.
	Batches    *int  `json:"batches,omitempty"`
	BatchSizes []int `json:"batch_sizes,omitempty"`
	// BatchNS is each of those runs' duration, in the same order (the
	// calibration fits the per-namespace cleanup cost to them).
	BatchNS []int64 `json:"batch_ns,omitempty"`
	// Cleanup is the cleanup worker's time by phase (package phase), summed
	// over its runs.
	Cleanup []Phase `json:"cleanup_phases,omitempty"`
	// Recreate is how the creations asked for with Recreate went.
	Recreate *NetnsRecreate `json:"recreate,omitempty"`
	// CNIDelete is, with CNI, each pod's veth delete: the request from
	// inside its namespace, until its answer.
	CNIDelete *Latency `json:"cni_delete,omitempty"`
}

// Styles of NetnsTimes.
const (
	StyleAllAtOnce = "all-at-once"
	StyleOneByOne  = "one-by-one"
	StyleCNI       = "cni"
)

// ValidateNetnsName checks a namespace name with the rule both backends and
// the state file use (statefile.NetnsNameProblem).
func ValidateNetnsName(name string) error {
	if p := statefile.NetnsNameProblem(name); p != "" {
		return Usagef("network namespace name %q: %s", name, p)
	}
	return nil
}

// NetnsTemplate is a validated namespace-name template with exactly one %d:
// a device-name template's rules (ifname.Template) with namespace names'
// length and characters. Numbers start at 1, as ifindexes do, so "netns add
// N" then "netns del 1 N" undoes it.
type NetnsTemplate struct{ t ifname.Template }

// ParseNetnsTemplate validates a namespace template: exactly one %d, and
// every name it makes a valid namespace name.
func ParseNetnsTemplate(s string) (NetnsTemplate, error) {
	if s == "" {
		return NetnsTemplate{}, Usagef("namespace template is empty; want something like %q", DefaultNetnsTemplate)
	}
	i := strings.Index(s, "%d")
	if i < 0 {
		return NetnsTemplate{}, Usagef("namespace template %q has no %%d; want exactly one, as in %q", s, DefaultNetnsTemplate)
	}
	t := NetnsTemplate{ifname.Template{Prefix: s[:i], Suffix: s[i+2:]}}
	if strings.Contains(t.t.Prefix, "%") || strings.Contains(t.t.Suffix, "%") {
		return NetnsTemplate{}, Usagef("namespace template %q must contain exactly one %%d and no other %% directive", s)
	}
	if t.MaxNumber() < 1 {
		return NetnsTemplate{}, Usagef("namespace template %q leaves no room for a number within %d bytes", s, statefile.MaxNetnsNameLen)
	}
	if p := statefile.NetnsNameProblem(t.Name(1)); p != "" {
		return NetnsTemplate{}, Usagef("namespace template %q: %s", s, p)
	}
	return t, nil
}

// MustNetnsTemplate parses a template known to be valid.
func MustNetnsTemplate(s string) NetnsTemplate {
	t, err := ParseNetnsTemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

func (t NetnsTemplate) String() string { return t.t.String() }

// IsZero reports whether t is the zero value (no template given).
func (t NetnsTemplate) IsZero() bool { return t.t == ifname.Template{} }

// Name is the namespace name for number n.
func (t NetnsTemplate) Name(n int) string { return t.t.Name(n) }

// MaxNumber is the largest number whose name fits in 64 bytes (at most
// 2^31-1).
func (t NetnsTemplate) MaxNumber() int {
	digits := statefile.MaxNetnsNameLen - len(t.t.Prefix) - len(t.t.Suffix)
	return int(min(math.Pow10(max(digits, 0))-1, 1<<31-1))
}

// Number returns n if name is t.Name(n) with n >= 0 in canonical decimal
// and at most MaxNumber, else -1.
func (t NetnsTemplate) Number(name string) int {
	if n := t.t.Number(name); n <= t.MaxNumber() {
		return n
	}
	return -1
}

// ParseNetnsCount parses the N of "netns add N".
func ParseNetnsCount(s string) (int, error) {
	n, err := parseUint(s, "namespace count", MaxNetnsCount)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, Usagef("namespace count must be at least 1, got %q", s)
	}
	return int(n), nil
}

// ParseNetnsRange parses "START STOP" of "netns del": namespace numbers,
// 1 <= START <= STOP <= 2^31-1.
func ParseNetnsRange(start, stop string) (int, int, error) {
	a, err := parseUint(start, "start number", 1<<31-1)
	if err != nil {
		return 0, 0, err
	}
	b, err := parseUint(stop, "stop number", 1<<31-1)
	if err != nil {
		return 0, 0, err
	}
	if a == 0 {
		return 0, 0, Usagef("start number must be at least 1 (namespaces are numbered from 1)")
	}
	if a > b {
		return 0, 0, Usagef("range %d %d is reversed; want START <= STOP", a, b)
	}
	return int(a), int(b), nil
}

// Normalize fills a request's defaults and checks it; it never touches a
// backend.
func (r *NetnsAddRequest) Normalize() error {
	if r.Count < 1 || r.Count > MaxNetnsCount {
		return Usagef("namespace count must be between 1 and %d, got %d", MaxNetnsCount, r.Count)
	}
	if r.Links < 0 || r.Links > MaxNetnsLinks {
		return Usagef("--links must be between 0 and %d, got %d", MaxNetnsLinks, r.Links)
	}
	if err := r.Addrs.Normalize(); err != nil {
		return err
	}
	if IsChildKind(r.Kind) {
		return Usagef("--kind %s: a namespace's links are of kind dummy or ifb (a %s needs a parent: add it with --netns NAME add --parent)", r.Kind, r.Kind)
	}
	if !r.Addrs.IsZero() && r.Links == 0 {
		return Usagef("--addr4, --addr6 and --up apply to each namespace's links: give --links K")
	}
	if r.Template.IsZero() {
		r.Template = MustNetnsTemplate(DefaultNetnsTemplate)
	}
	if r.LinkTemplate == (Template{}) {
		r.LinkTemplate, _ = ParseTemplate(DefaultTemplate)
	}
	if r.Veth {
		if r.VethInner == "" {
			r.VethInner = "eth0"
		}
		if r.VethTemplate == (Template{}) {
			r.VethTemplate, _ = ParseTemplate("veth%d")
		}
		if r.LinkTemplate.Number(r.VethInner) >= 0 || r.VethInner == "lo" {
			return Usagef("the veth end %q inside each namespace would clash with its links (%s) or lo", r.VethInner, r.LinkTemplate)
		}
	}
	if r.Links > r.LinkTemplate.MaxNumber()+1 {
		return Usagef("link template %s has room for %d names, asked for %d links", r.LinkTemplate, r.LinkTemplate.MaxNumber()+1, r.Links)
	}
	return nil
}

// FreeNames picks the count lowest numbers of t, from 1, that no name in
// existing has.
func (t NetnsTemplate) FreeNames(existing []string, count int) ([]string, error) {
	used := map[int]bool{}
	for _, name := range existing {
		if k := t.Number(name); k >= 0 {
			used[k] = true
		}
	}
	if free := t.MaxNumber() - len(used); count > free {
		return nil, Usagef("namespace template %s has room for %d more names, asked for %d", t, max(0, free), count)
	}
	names := make([]string, 0, count)
	for k := 1; len(names) < count; k++ {
		if !used[k] {
			names = append(names, t.Name(k))
		}
	}
	return names, nil
}
