package ndst

import "context"

// Namespaces that die with their process: "unshare N --parallel P" has P
// workers each make a namespace with unshare(CLONE_NEWNET), optionally set
// its lo up and give it a veth pair into the backend's own namespace, and
// exit, so the namespace's last reference goes with its last task; nothing
// is mounted, nothing is named. The result says how fast they were made,
// how many waited for the kernel's cleanup over time and when that
// drained, and whether the creations waited for the cleanup (the pernet
// lock: net_mutex on 2.6.3x to 4.16, which the cleanup held; later the
// pernet_ops_rwsem, which both take for reading).

// UnshareBackend is the optional unshare part of a Backend.
type UnshareBackend interface {
	Unshare(ctx context.Context, req UnshareRequest) (*Result, error)
}

// Bounds of an unshare.
const (
	MaxUnshareCount    = 1 << 20
	MaxUnshareParallel = 1024
)

// UnshareRequest asks for Count namespaces made by Parallel workers.
type UnshareRequest struct {
	Count, Parallel int
	// LoUp sets each namespace's lo up; Veth gives each a veth pair, eth0
	// inside and the other end (named from VethTemplate, default uv%d) in
	// the backend's namespace, which goes with the namespace's cleanup.
	LoUp, Veth   bool
	VethTemplate Template
}

// Normalize checks the request and fills its defaults.
func (r *UnshareRequest) Normalize() error {
	if r.Count < 1 || r.Count > MaxUnshareCount {
		return Usagef("unshare count must be between 1 and %d, got %d", MaxUnshareCount, r.Count)
	}
	if r.Parallel < 1 || r.Parallel > MaxUnshareParallel {
		return Usagef("--parallel must be between 1 and %d, got %d", MaxUnshareParallel, r.Parallel)
	}
	r.Parallel = min(r.Parallel, r.Count)
	if r.Veth && r.VethTemplate == (Template{}) {
		r.VethTemplate, _ = ParseTemplate("uv%d")
	}
	return nil
}

// UnshareTimes is what an unshare measured, from the start of the command
// on the backend's clock.
type UnshareTimes struct {
	Namespaces int  `json:"namespaces"`
	Parallel   int  `json:"parallel"`
	LoUp       bool `json:"lo_up,omitempty"`
	Veth       bool `json:"veth,omitempty"`
	// CreatedNS is when the last unshare (with its lo and veth) returned,
	// ExitedNS when the last worker exited, DrainedNS when the cleanup
	// freed the last namespace (nil where it was not observed).
	CreatedNS int64  `json:"created_ns"`
	ExitedNS  int64  `json:"exited_ns"`
	DrainedNS *int64 `json:"drained_ns"`
	// CreateRate is namespaces made per second up to CreatedNS; Create is
	// each one's time in its worker (the unshare and what followed it).
	CreateRate float64  `json:"create_per_sec"`
	Create     *Latency `json:"create,omitempty"`
	// PeakWaiting is the most namespaces waiting for cleanup at once, at
	// PeakNS; Backlog the series (ThinBacklog).
	PeakWaiting int            `json:"peak_waiting"`
	PeakNS      int64          `json:"peak_ns"`
	Backlog     []BacklogPoint `json:"backlog,omitempty"`
	// Batches, BatchSizes and BatchNS are the cleanup runs.
	Batches    *int    `json:"batches,omitempty"`
	BatchSizes []int   `json:"batch_sizes,omitempty"`
	BatchNS    []int64 `json:"batch_ns,omitempty"`
	// PernetLock names the lock creations and the cleanup share:
	// "net_mutex" or "pernet_ops_rwsem". CreatesWaited counts creations
	// that waited for a running cleanup, WaitedNS the longest wait; nil
	// where it could not be told.
	PernetLock    string `json:"pernet_lock"`
	CreatesWaited *int   `json:"creates_waited"`
	WaitedNS      *int64 `json:"waited_ns,omitempty"`
	// RTNLWaitNS is the workers' time waiting for RTNL in all (lo's
	// registration, lo up and the veth pair take it; a cleanup holds it
	// while it unregisters a batch's devices); nil where not observed.
	RTNLWaitNS *int64 `json:"rtnl_wait_ns,omitempty"`
	// Observed says how the backlog was seen: "emulated", or on the real
	// kernel "workqueue tracepoints" or "slabinfo".
	Observed string `json:"observed"`
}
