// Package ndst is the driver contract of the tool: the same Add, Del and List
// operations over two backends, the embedded emulated kernel (package
// ndst/emu) and the real kernel through netlink (package ndst/nlbackend).
//
// The contract mirrors the 2009 test module: "add N" creates N devices whose
// names come from a template with one %d, "del START STOP" tears down every
// device whose ifindex lies in the inclusive range, and "list" shows what is
// there. Every operation returns a Result, the one record type from which the
// text and JSON outputs are rendered.
//
// Invariants:
//   - A Backend never changes anything when it returns a *UsageError or a
//     *NotFoundError: input is validated before any device is touched.
//   - Result.VirtualNS is set only by backends that run in virtual time.
//   - Result.Result is one of ResultOK, ResultLivelock, ResultStuck,
//     ResultError.
package ndst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// Backend is one implementation of the driver contract.
type Backend interface {
	// Name is the backend's name as used by --backend: "sim" or "netlink".
	Name() string
	// Add creates req.Count devices.
	Add(ctx context.Context, req AddRequest) (*Result, error)
	// Del tears down the devices whose ifindex is in [req.Start, req.Stop].
	Del(ctx context.Context, req DelRequest) (*Result, error)
	// List returns the devices, ordered by ifindex.
	List(ctx context.Context, req ListRequest) ([]Device, error)
	// Close releases the backend's resources (state file lock, sockets).
	Close() error
}

// AddRequest asks for Count new devices named from Template (one %d).
type AddRequest struct {
	Count    int
	Template Template
	// Kind is the link kind for the netlink backend ("dummy", "ifb", "veth").
	// The emulated backend ignores it.
	Kind string
	// OneByOne gives every device its own create request, each timed (a
	// loop of "ip link add"), so that the Result has per-device latency; by
	// default the netlink backend sends its creates in batches. The
	// emulated backend, which registers one device at a time anyway,
	// ignores it.
	OneByOne bool
	// Addrs sets every new device up with addresses (addrs.go).
	Addrs Addrs
	// Parent makes the devices VLANs (Kind "vlan", ids VLANID ..
	// VLANID+Count-1) or macvlans (Kind "macvlan") on that device of the
	// backend's namespace, which must be ndst's (vlan.go).
	Parent string
	VLANID int
}

// DelRequest asks to tear down the devices with Start <= ifindex <= Stop.
type DelRequest struct {
	Start, Stop int
	// OneByOne gives every device its own unregister (a loop of
	// "ip link del"), instead of one batch for the whole range on
	// profiles and backends that batch.
	OneByOne bool
	// Stream also gives every device its own delete request, but writes
	// them all at once and then reads the answers, as one request stream
	// (the kernel still unregisters each on its own, one RTNL hold and one
	// netdev_run_todo each); the emulated kernel, whose one-by-one loop
	// makes no round trips, runs it as OneByOne.
	Stream bool
	// GiveUp bounds the real-kernel backends' wait for each teardown
	// request: after it the command ends with ResultStuck (the request
	// stays with the kernel). 0 means the backend's default. The emulated
	// kernel takes its give-up time from its configuration.
	GiveUp time.Duration
	// Attribute asks the real-kernel backends to sample the deleting
	// thread's kernel stack and split the time into Result.Phases (the
	// emulated kernel always attributes).
	Attribute bool
	// Match, when not empty, is a shell pattern (path.Match: *, ?, [...])
	// that a device's name must match to be deleted, within Start..Stop.
	Match string
}

// Selects reports whether the request deletes a device of that name (its
// ifindex in range). A pattern CheckMatch refused selects nothing.
func (r DelRequest) Selects(name string) bool {
	if r.Match == "" {
		return true
	}
	ok, err := path.Match(r.Match, name)
	return ok && err == nil
}

// CheckMatch checks a --match pattern.
func CheckMatch(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return Usagef("--match %q: not a shell pattern (%v); use *, ? and [...] as in 'dummy1*'", pattern, err)
	}
	if strings.Contains(pattern, "/") {
		return Usagef("--match %q: a device name has no '/'", pattern)
	}
	return nil
}

// ListRequest asks for a listing; PageSize > 0 reads the registry in pages of
// that many entries (mimicking a small read buffer).
type ListRequest struct {
	PageSize int
	// Naive reads each page by restarting from the head of the table and
	// skipping what was already read (the pre-fix /proc reader), instead of
	// resuming from a cursor. Backends without such a reader ignore it.
	Naive bool
}

// Device is one network device as a backend reports it.
type Device struct {
	Name    string `json:"name"`
	Ifindex int    `json:"ifindex"`
	Kind    string `json:"kind,omitempty"`
	State   string `json:"state"`
	// Refcount is the device's reference count; unknown (the zero value,
	// JSON null, "-" in text) where the backend cannot know it: the real
	// kernel does not report it.
	Refcount MaybeInt `json:"refcount"`
	// Foreign is true for devices ndst did not create (such as lo); they
	// are never deleted.
	Foreign bool `json:"foreign,omitempty"`
}

// MaybeInt is an int that may be unknown. The zero value is unknown, so a
// backend that does not set a field cannot report a made-up 0. It is
// comparable with ==, marshals to a JSON number or null, and prints as the
// number or "-".
type MaybeInt struct {
	Value int
	Known bool
}

// Known returns a known MaybeInt.
func Known(v int) MaybeInt { return MaybeInt{Value: v, Known: true} }

// String is the number, or "-" when unknown.
func (m MaybeInt) String() string {
	if !m.Known {
		return "-"
	}
	return strconv.Itoa(m.Value)
}

// MarshalJSON implements json.Marshaler: the number, or null.
func (m MaybeInt) MarshalJSON() ([]byte, error) {
	if !m.Known {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(m.Value), 10), nil
}

// UnmarshalJSON implements json.Unmarshaler: a number, or null for unknown.
func (m *MaybeInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = MaybeInt{}
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Known(v)
	return nil
}

// Result kinds.
const (
	ResultOK       = "ok"
	ResultLivelock = "livelock"
	// ResultStuck: a device kept a reference past the give-up time (a
	// leak, or a very slow release); the run reports who holds what.
	ResultStuck = "stuck"
	ResultError = "error"
)

// Result is the record every timed command produces; see ARCHITECTURE.md,
// "Output contract". Fields that a backend cannot know are left nil.
type Result struct {
	Op        string  `json:"op"`
	Backend   string  `json:"backend"`
	Count     int     `json:"count"`
	Skipped   int     `json:"skipped,omitempty"`
	VirtualNS *int64  `json:"virtual_ns"`
	WallNS    int64   `json:"wall_ns"`
	Strategy  *string `json:"strategy"`
	Profile   *string `json:"profile"`
	HZ        *int    `json:"hz"`
	CPUs      *int    `json:"cpus"`
	Preempt   *string `json:"preempt"`
	Seed      *uint64 `json:"seed,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	// Batched reports, for del, whether the devices went in one batch (a
	// batched add says so in its counters: "batches").
	Batched bool `json:"batched"`
	// Stream reports, for del, that the devices' requests went in one
	// request stream (DelRequest.Stream).
	Stream bool   `json:"stream,omitempty"`
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
	// Latency is the per-device latency distribution: for del, from the
	// start of the device's unregister to its free; for add, the time of
	// each registration.
	Latency *Latency `json:"latency,omitempty"`
	// Counters holds grace periods, callbacks, sleeps, wakeups, CPU busy
	// time and the like, keyed by stable snake_case names.
	Counters map[string]int64 `json:"counters,omitempty"`
	// CostTable names the per-operation CPU cost table an emulated run
	// used: "default" or the --costs file's path.
	CostTable *string `json:"cost_table,omitempty"`
	// Explain holds one or two sentences a person can act on, produced from
	// the run's own counters: what each device waited for, and the setting
	// that would change it most. Backends that cannot know leave it empty.
	Explain []string `json:"explain,omitempty"`
	// Phases split the command's time by where the task was (package
	// phase); their CPU and wait times sum to the command's time.
	Phases []Phase `json:"phases,omitempty"`
	// Stacks are the real-kernel backends' samples of the working
	// thread's kernel stack (DelRequest.Attribute), folded (outermost frame
	// first, ';' between frames) with the time they stand for, in ns: the
	// input of a flame graph. Not in JSON: it is written with --folded.
	Stacks map[string]int64 `json:"-"`
	// Netns holds the three times of a namespace delete (see netns.go).
	Netns *NetnsTimes `json:"netns,omitempty"`
	// Unshare is what an unshare measured (unshare.go), Churn what a pod
	// churn did (podchurn.go).
	Unshare *UnshareTimes  `json:"unshare,omitempty"`
	Churn   *PodChurnTimes `json:"pod_churn,omitempty"`
	// RCU names the RCU implementation an emulated run used.
	RCU *string `json:"rcu,omitempty"`
	// Notes are human-readable remarks (fallbacks taken, watchdog reports).
	Notes []string `json:"notes,omitempty"`
	// Stuck lists the devices that still had references when a stuck run
	// gave up.
	Stuck []StuckDevice `json:"stuck,omitempty"`
	// Verdict judges a stuck run on the real kernel: a leak or slow, with
	// the figures that decided it.
	Verdict *Verdict `json:"verdict,omitempty"`
	// KernelLog holds the emulated kernel's messages (printk), each with
	// its virtual timestamp, as dmesg would show them; for the real kernel,
	// the lines of its log since the command started that concern
	// teardown ("waiting for X to become free", ref_tracker).
	KernelLog []string `json:"kernel_log,omitempty"`
}

// Verdict kinds.
const (
	// VerdictLeak: the wait lasted far longer than the host's grace
	// periods take, so what is waited for is a held reference, not RCU.
	VerdictLeak = "leak"
	// VerdictSlow: the wait was not long enough, against the host's grace
	// periods or given where the kernel was, to call it a leak.
	VerdictSlow = "slow"
)

// Verdict says whether a stuck teardown on the real kernel is a leak or
// slow, and from which figures.
type Verdict struct {
	Kind string `json:"kind"` // VerdictLeak or VerdictSlow
	// Why is the sentence with the figures that decided it.
	Why string `json:"why"`
	// WaitedNS is how long the unfinished request was waited for.
	WaitedNS int64 `json:"waited_ns"`
	// GracePeriodNS is the host's grace-period latency when the command
	// gave up: the median of GracePeriodSamples membarrier calls; nil when
	// it could not be measured.
	GracePeriodNS      *int64 `json:"grace_period_ns"`
	GracePeriodSamples int    `json:"grace_period_samples,omitempty"`
	// Ratio is WaitedNS over GracePeriodNS, and LeakRatio the ratio from
	// which a wait counts as a leak.
	Ratio     float64 `json:"ratio,omitempty"`
	LeakRatio float64 `json:"leak_ratio"`
	// KernelState is the phase the waiting thread was in when the command
	// gave up, read from its kernel stack ("" when unreadable).
	KernelState string `json:"kernel_state,omitempty"`
	// Waiting counts the kernel's "waiting for ... to become free" lines.
	Waiting int `json:"waiting_lines"`
}

// StuckDevice is a device that kept references past the give-up time.
type StuckDevice struct {
	Name       string `json:"name"`
	UsageCount int    `json:"usage_count"`
	Holders    string `json:"holders"`
}

// Phase is the time of one phase of a command (see package phase).
type Phase struct {
	Name   string `json:"name"`
	CPUNS  int64  `json:"cpu_ns"`
	WaitNS int64  `json:"wait_ns"`
}

// TotalNS is the phase's whole time.
func (p Phase) TotalNS() int64 { return p.CPUNS + p.WaitNS }

// Latency summarises per-device latencies in nanoseconds.
type Latency struct {
	MinNS    int64 `json:"min_ns"`
	MedianNS int64 `json:"median_ns"`
	P99NS    int64 `json:"p99_ns"`
	MaxNS    int64 `json:"max_ns"`
}

// UsageError is bad input: the command line or request is malformed. The CLI
// exits with status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is (or wraps) a *UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// ErrNoDevices is returned (wrapped) by Del when the range covers no device.
var ErrNoDevices = errors.New("no device in range")

// ErrStuck is returned (wrapped) when a device still had references after
// the give-up time. The Result that accompanies it has Result == ResultStuck.
var ErrStuck = errors.New("stuck")

// ErrLivelock is returned (wrapped) when the emulated kernel's watchdog stops a
// run. The Result that accompanies it has Result == ResultLivelock.
var ErrLivelock = errors.New("livelock")
