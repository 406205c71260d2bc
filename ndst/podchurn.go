package ndst

import (
	"context"
	"math"
	"time"
)

// Pods created and deleted all day: "churn --netns --rate R --for T" makes
// a pod (a named namespace, as container runtimes pin them, with lo up and
// a veth pair into the backend's namespace) every 1/R seconds for T, and
// deletes each Lifetime after it was made (its namespace alone, or with
// CNI its veth first). The result says whether the kernel's cleanup kept
// up (the backlog of namespaces waiting for it bounded, or growing, and at
// what slope), the steady-state create latency, and the rate at which the
// cleanup stops keeping up on this kernel and machine.

// PodChurnBackend is the optional pod-churn part of a Backend.
type PodChurnBackend interface {
	PodChurn(ctx context.Context, req PodChurnRequest) (*Result, error)
}

// Bounds of a pod churn.
const (
	MaxPodRate     = 100_000
	MaxPodFor      = 24 * time.Hour
	MaxPodLifetime = time.Hour
	// MaxPods bounds the pods one churn makes (Rate x For).
	MaxPods = 10_000_000
)

// PodChurnRequest asks for pods made at Rate per second for For.
type PodChurnRequest struct {
	Rate     float64
	For      time.Duration
	Lifetime time.Duration
	// NoLoUp and NoVeth make bare pods; CNI deletes each pod's veth from
	// inside it first (netns del --cni), otherwise the namespace alone.
	NoLoUp, NoVeth, CNI bool
	// Parallel is how many pods the runtime makes, and deletes, at once
	// (default DefaultPodParallel): a pod not yet made when its time comes
	// waits for a free worker.
	Parallel int
	// FindLimit also searches the rate at which the cleanup stops keeping
	// up (the emulated kernel bisects with runs of its own).
	FindLimit bool
}

// DefaultPodLifetime is a pod's life unless given; DefaultPodParallel the
// runtime's workers of each kind.
const (
	DefaultPodLifetime = time.Second
	DefaultPodParallel = 4
)

// Pods is how many pods the request makes.
func (r PodChurnRequest) Pods() int { return int(math.Floor(r.Rate*r.For.Seconds() + 1e-9)) }

// Normalize checks the request and fills its defaults.
func (r *PodChurnRequest) Normalize() error {
	if math.IsNaN(r.Rate) || r.Rate <= 0 || r.Rate > MaxPodRate {
		return Usagef("--rate must be above 0 and at most %d pods a second, got %g", MaxPodRate, r.Rate)
	}
	if r.For <= 0 || r.For > MaxPodFor {
		return Usagef("--for must be above 0 and at most %v, got %v", MaxPodFor, r.For)
	}
	if r.Lifetime == 0 {
		r.Lifetime = DefaultPodLifetime
	}
	if r.Lifetime < 0 || r.Lifetime > MaxPodLifetime {
		return Usagef("--lifetime must be between 0 and %v, got %v", MaxPodLifetime, r.Lifetime)
	}
	if n := r.Rate * r.For.Seconds(); n > MaxPods {
		return Usagef("--rate %g for %v makes %.0f pods, more than %d", r.Rate, r.For, n, MaxPods)
	}
	if r.Pods() < 2 {
		return Usagef("--rate %g for %v makes fewer than 2 pods", r.Rate, r.For)
	}
	if r.Parallel == 0 {
		r.Parallel = DefaultPodParallel
	}
	if r.Parallel < 1 || r.Parallel > MaxUnshareParallel {
		return Usagef("--parallel must be between 1 and %d, got %d", MaxUnshareParallel, r.Parallel)
	}
	if r.CNI && r.NoVeth {
		return Usagef("--cni deletes each pod's veth first; it needs pods with a veth")
	}
	return nil
}

// PodChurnTimes is what a pod churn measured, from its start on the
// backend's clock; "steady state" is the second half of For.
type PodChurnTimes struct {
	Rate       float64 `json:"rate_per_sec"`
	ForNS      int64   `json:"for_ns"`
	LifetimeNS int64   `json:"lifetime_ns"`
	CNI        bool    `json:"cni,omitempty"`
	// Created and Deleted count the pods made and deleted while the churn
	// ran; Freed the namespaces the cleanup freed by its end.
	Created int `json:"created"`
	Deleted int `json:"deleted"`
	Freed   int `json:"freed"`
	// Create is the steady-state create latency (a pod's namespace, lo up
	// and veth); Delete the time of each delete request.
	Create *Latency `json:"create,omitempty"`
	Delete *Latency `json:"delete,omitempty"`
	// Backlog is the namespaces waiting for cleanup over time, PeakWaiting
	// its peak; SlopePerSec the steady-state least-squares slope of the
	// waiting count; FreedPerSec the cleanup's steady-state throughput.
	Backlog     []BacklogPoint `json:"backlog,omitempty"`
	PeakWaiting int            `json:"peak_waiting"`
	SlopePerSec float64        `json:"slope_per_sec"`
	FreedPerSec float64        `json:"freed_per_sec"`
	// KeepsUp: the steady-state slope is at most KeepUpSlope of the rate.
	KeepsUp bool `json:"keeps_up"`
	// Parallel is the runtime's workers of each kind; MadePerSec the
	// steady-state rate pods were made at, and CreatesKeepUp whether that
	// was within KeepUpSlope of the rate (the workers were not behind).
	Parallel      int     `json:"parallel"`
	MadePerSec    float64 `json:"made_per_sec"`
	CreatesKeepUp bool    `json:"creates_keep_up"`
	// DeletedPerSec and DeletesKeepUp are the same for the deletes.
	DeletedPerSec float64 `json:"deleted_per_sec"`
	DeletesKeepUp bool    `json:"deletes_keep_up"`
	// DrainedNS is when, after the last pod was deleted, the cleanup freed
	// the last namespace (nil where not observed).
	DrainedNS *int64 `json:"drained_ns"`
	// Batches, BatchSizes and BatchNS are the cleanup runs.
	Batches    *int    `json:"batches,omitempty"`
	BatchSizes []int   `json:"batch_sizes,omitempty"`
	BatchNS    []int64 `json:"batch_ns,omitempty"`
	// LimitPerSec is the rate at which the cleanup stops keeping up, and
	// LimitHow how it was found; nil where not searched.
	LimitPerSec *float64 `json:"limit_per_sec,omitempty"`
	LimitHow    string   `json:"limit_how,omitempty"`
	// Observed says how the backlog was seen (as UnshareTimes.Observed).
	Observed string `json:"observed"`
}

// KeepUpSlope is the steady-state backlog growth, as a share of the rate,
// above which the cleanup is said not to keep up: more than 2% of the pods
// deleted are left waiting.
const KeepUpSlope = 0.02

// KeepsUp says whether a steady-state slope at a rate keeps up.
func KeepsUp(slope, rate float64) bool { return slope <= KeepUpSlope*rate }

// Sustained reports whether the node kept up with the churn: pods made and
// deleted at the rate, and the cleanup's backlog bounded.
func (c *PodChurnTimes) Sustained() bool { return c.KeepsUp && c.CreatesKeepUp && c.DeletesKeepUp }
