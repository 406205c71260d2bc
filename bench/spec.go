// Package bench runs the strategy matrix of `ndst bench`: every combination
// of backend, kernel profile, wait strategy, HZ, CPU count, preemption model,
// batching mode and device count is one cell; every cell is run Runs times
// (seeds Seed .. Seed+Runs-1), each run adding N devices and deleting them
// all. The runs are reduced to one Record per cell (min / median / mean ± sd /
// max of the teardown time, relative to the fastest cell of the same N,
// per-device latency, grace periods, sleeps, wakeups, CPU busy time,
// livelocks), and every output — the terminal table, JSON, CSV, Markdown and
// the plot — is rendered from those Records.
//
// Invariants:
//   - Spec.Validate rejects bad input (unknown names, empty lists, values out
//     of range, too many cells) before anything runs; it returns a
//     *ndst.UsageError.
//   - Cells are enumerated in a fixed order derived from the order of the
//     lists in the Spec, and Records come out in that order.
//   - Emulated cells are independent deterministic kernels: running them on
//     many workers gives exactly the Records of a serial run, except for the
//     wall-clock fields (see Record.MaskWall).
//   - Real-kernel (netlink) runs are never run concurrently with anything
//     else, so that they measure the kernel and not the bench.
//   - A livelock is an outcome of a cell, not a failure of the bench; the
//     statistics are over the runs that completed.
package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/waitrefs"
)

// Backends, batching modes and preemption models a Spec may name.
var (
	BackendNames = []string{"sim", "netlink"}
	BatchNames   = []string{"batched", "one-by-one"}
	PreemptNames = []string{"none", "voluntary", "full", "rt", "lazy"}
)

// DefaultStrategy in Strategies runs each line's own wait loop
// (netdev.Profile.DefaultStrategy).
const DefaultStrategy = "default"

// MaxCellsWithoutConfirm is the largest matrix run without Spec.Confirmed.
const MaxCellsWithoutConfirm = 10_000

// MaxRuns bounds Spec.Runs.
const MaxRuns = 10_000

// MaxJobs bounds --jobs (emulated runs at once); the runs at once are also
// never more than the matrix's emulated runs.
const MaxJobs = 1024

// Spec describes a bench matrix. The list fields are the dimensions; the
// matrix is their cross product (the emulation dimensions collapse for the
// netlink backend, which runs the host's kernel as it is).
type Spec struct {
	Backends   []string
	Profiles   []string
	Strategies []string
	HZ         []int
	CPUs       []int
	Preempts   []string
	Batches    []string
	Counts     []int

	Runs int
	Seed uint64
	// Warmup is how many runs each real-kernel cell makes before its
	// measured ones, not measured (hyperfine's --warmup).
	Warmup int

	// RCU, NameAlloc, Watchdog, Jitter and Costs are passed to every
	// emulated kernel (see emu.Config).
	RCU       string
	NameAlloc string
	Watchdog  time.Duration
	Jitter    float64
	Costs     *costs.Table

	// Params are the emulated kernel's knobs (NAME=VALUE, package knob),
	// given to every emulated cell (a cell's own Params win).
	Params []string
	// CellList, when set, is the matrix itself: these cells, in this
	// order, instead of the cross product of the lists (whose values then
	// only label the report). A client that runs one configuration per
	// alternative (ndst advise) gives its cells this way.
	CellList []Cell

	// Template names the devices (default dummy%d).
	Template ndst.Template
	// Netlink configures the real-kernel backend; its Netns is the
	// throwaway namespace the bench creates and removes.
	Netlink nlbackend.Options

	// NetnsCounts, when set, makes every cell a namespace cell (netns.go):
	// N namespaces, each with lo, NetnsLinks links and (NetnsVeth) a veth
	// pair, added and deleted at once ("batched") or one at a time
	// ("one-by-one"); Counts is then not used. NetnsLoUp sets every lo up.
	NetnsCounts []int
	NetnsLinks  []int
	NetnsVeth   []bool
	NetnsLoUp   bool

	// Workload, when set, makes every cell that workload's
	// (workloadcells.go): its parameters are the template's, its sizes
	// Counts, its delete modes Batches.
	Workload *Cell

	// Workers is the number of emulated cells run at once (0: GOMAXPROCS).
	Workers int
	// na says, per cell (without its N and batch mode), why it does not
	// apply; set by Check.
	na map[Cell]string
	// Confirmed allows more than MaxCellsWithoutConfirm cells, and runs
	// that may not fit in memory all at once.
	Confirmed bool
}

// Cell is one combination of the matrix.
type Cell struct {
	Backend  string `json:"backend"`
	Profile  string `json:"profile"`
	Strategy string `json:"strategy"`
	HZ       int    `json:"hz"`
	CPUs     int    `json:"cpus"`
	Preempt  string `json:"preempt"`
	Batch    string `json:"batch"`
	Count    int    `json:"count"`
	// A namespace cell (netns.go) deletes Namespaces namespaces (Count is
	// the same number), each with lo, Links links and, with Veth, a veth
	// pair; LoUp sets their lo up.
	Namespaces int  `json:"namespaces,omitempty"`
	Links      int  `json:"links,omitempty"`
	Veth       bool `json:"veth,omitempty"`
	LoUp       bool `json:"lo_up,omitempty"`
	// Params are knobs of this cell's emulated kernel (NAME=VALUE words,
	// space-separated), over the Spec's Params; RCU, when set, is its RCU
	// implementation instead of the Spec's.
	Params string `json:"params,omitempty"`
	RCU    string `json:"rcu,omitempty"`
	// A workload cell (workloadcells.go): Workload names it, the fields
	// after it are its parameters, Count its size.
	Workload string `json:"workload,omitempty"`
	Addr4    int    `json:"addr4,omitempty"`
	Addr6    int    `json:"addr6,omitempty"`
	Fwd6     bool   `json:"ipv6_forwarding,omitempty"`
	Child    string `json:"child,omitempty"`
	// Kind is the devices' kind (addrs, and children's lower device):
	// "ifb", or "" for the emulated kernel's dummy.
	Kind     string  `json:"kind,omitempty"`
	Parallel int     `json:"parallel,omitempty"`
	Rate     float64 `json:"rate,omitempty"`
	ForNS    int64   `json:"for_ns,omitempty"`
}

// OneByOne reports whether the cell deletes its devices one by one.
func (c Cell) OneByOne() bool { return c.Batch == "one-by-one" }

// String names the cell compactly, for warnings.
func (c Cell) String() string {
	if c.Backend == "netlink" {
		return fmt.Sprintf("netlink %s N=%d", c.Batch, c.Count)
	}
	if c.NetnsCell() {
		return fmt.Sprintf("%s on %s, HZ=%d, %d CPU(s), preempt %s, %d namespaces of %s deleted %s",
			c.Strategy, c.Profile, c.HZ, c.CPUs, c.Preempt, c.Namespaces, c.netnsWhat(), c.netnsStyle())
	}
	if c.Workload != "" {
		return fmt.Sprintf("%s on %s, HZ=%d, %d CPU(s), preempt %s, %s",
			c.Strategy, c.Profile, c.HZ, c.CPUs, c.Preempt, c.WorkloadString())
	}
	return fmt.Sprintf("%s on %s, HZ=%d, %d CPU(s), preempt %s, %s, N=%d",
		c.Strategy, c.Profile, c.HZ, c.CPUs, c.Preempt, c.Batch, c.Count)
}

// Host-kernel placeholders of a netlink cell before the host is probed.
const hostProfile = "host"

// Validate checks every list and value and the size of the matrix. It fills
// nothing in; callers apply defaults before.
func (s *Spec) Validate() error {
	if s.CellList != nil {
		return s.validateCellList()
	}
	type list struct {
		flag  string
		n     int
		known []string
		vals  []string
	}
	batches := BatchNames
	if len(s.NetnsCounts) > 0 {
		batches = append(slices.Clone(BatchNames), BatchCNI)
	}
	if s.Workload != nil {
		if err := s.validateWorkload(); err != nil {
			return err
		}
		batches = WorkloadBatches[s.Workload.Workload]
	}
	lists := []list{
		{"--backend", len(s.Backends), BackendNames, s.Backends},
		{"--profile", len(s.Profiles), netdev.ProfileNames, s.Profiles},
		{"--strategy", len(s.Strategies), append([]string{DefaultStrategy}, waitrefs.Names...), s.Strategies},
		{"--preempt", len(s.Preempts), PreemptNames, s.Preempts},
		{"--batch", len(s.Batches), batches, s.Batches},
		{"--hz", len(s.HZ), nil, nil},
		{"--cpus", len(s.CPUs), nil, nil},
		{"--count", len(s.Counts), nil, nil},
	}
	for _, l := range lists {
		if l.n == 0 {
			return ndst.Usagef("%s: empty list; give at least one value", l.flag)
		}
		for _, v := range l.vals {
			if !slices.Contains(l.known, v) {
				if v == "" {
					return ndst.Usagef("%s: empty name in the list (known: %s)", l.flag, strings.Join(l.known, ", "))
				}
				return ndst.Usagef("%s: unknown name %q (known: %s)", l.flag, v, strings.Join(l.known, ", "))
			}
		}
		if dup := firstDup(l.vals); dup != "" {
			return ndst.Usagef("%s: %q is listed twice", l.flag, dup)
		}
	}
	for _, hz := range s.HZ {
		if hz < 1 || hz > 10000 {
			return ndst.Usagef("--hz: %d is out of range; want 1..10000", hz)
		}
	}
	for _, c := range s.CPUs {
		if c < 1 || c > 4096 {
			return ndst.Usagef("--cpus: %d is out of range; want 1..4096", c)
		}
	}
	for _, n := range s.Counts {
		if n < 1 || n > ndst.MaxCount {
			return ndst.Usagef("--count: %d is out of range; want 1..%d", n, ndst.MaxCount)
		}
		if s.Netlink.Kind == "veth" && slices.Contains(s.Backends, "netlink") && n%2 != 0 {
			return ndst.Usagef("--count: %d is odd; veth devices come in pairs, so every N must be even", n)
		}
	}
	for _, d := range []struct {
		flag string
		vals []int
	}{{"--hz", s.HZ}, {"--cpus", s.CPUs}, {"--count", s.Counts}} {
		if dup := firstDupInt(d.vals); dup != 0 {
			return ndst.Usagef("%s: %d is listed twice", d.flag, dup)
		}
	}
	if err := s.validateNetns(); err != nil {
		return err
	}
	if s.Runs < 1 || s.Runs > MaxRuns {
		return ndst.Usagef("--runs: %d is out of range; want 1..%d", s.Runs, MaxRuns)
	}
	if s.Warmup < 0 || s.Warmup > MaxRuns {
		return ndst.Usagef("--warmup: %d is out of range; want 0..%d", s.Warmup, MaxRuns)
	}
	if s.Warmup > 0 && !slices.Contains(s.Backends, "netlink") {
		return ndst.Usagef("--warmup warms the real kernel's cells (--backend netlink); the emulated kernel starts every run from the same state")
	}
	if s.Workers < 0 || s.Workers > MaxJobs {
		return ndst.Usagef("--jobs: %d is out of range; want 0 (one per core) to %d: each emulated run keeps one core busy, so more at once are not faster, they only take memory", s.Workers, MaxJobs)
	}
	if n := s.NumCells(); n > MaxCellsWithoutConfirm && !s.Confirmed {
		return ndst.Usagef("the matrix has %d cells (× %d runs); more than %d needs --yes", n, s.Runs, MaxCellsWithoutConfirm)
	}
	return nil
}

func firstDup(vs []string) string {
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v] {
			return v
		}
		seen[v] = true
	}
	return ""
}

func firstDupInt(vs []int) int {
	seen := map[int]bool{}
	for _, v := range vs {
		if seen[v] {
			return v
		}
		seen[v] = true
	}
	return 0
}

// NumCells is the number of cells without building them (it may be huge).
func (s *Spec) NumCells() int {
	if s.CellList != nil {
		return len(s.CellList)
	}
	if len(s.NetnsCounts) > 0 {
		return s.numNetnsCells()
	}
	if s.Workload != nil {
		return len(s.Profiles) * len(s.HZ) * len(s.CPUs) * len(s.Preempts) * len(s.Batches) * len(s.Counts) * len(s.Strategies)
	}
	n := 0
	for _, b := range s.Backends {
		m := len(s.Batches) * len(s.Counts)
		if b == "sim" {
			m = mulCap(m, len(s.Profiles), len(s.Strategies), len(s.HZ), len(s.CPUs), len(s.Preempts))
		}
		n = min(n+m, 1<<40)
	}
	return n
}

// mulCap multiplies, saturating well above any sensible matrix size.
func mulCap(a int, bs ...int) int {
	const ceiling = 1 << 40
	for _, b := range bs {
		a *= b
		if a > ceiling {
			a = ceiling
		}
	}
	return a
}

// Cells enumerates the matrix. The order is backend, profile, HZ, CPUs,
// preempt, batch, count, strategy (outermost first), each in the order of
// its list, so that the strategies of one configuration and N sit together.
func (s *Spec) Cells() []Cell {
	if s.CellList != nil {
		return s.CellList
	}
	if s.Workload != nil {
		return s.workloadCells()
	}
	if len(s.NetnsCounts) > 0 {
		return s.netnsCells()
	}
	var out []Cell
	for _, b := range s.Backends {
		if b == "netlink" {
			for _, bat := range s.Batches {
				for _, n := range s.Counts {
					out = append(out, Cell{Backend: b, Profile: hostProfile, Strategy: "-", Preempt: "-", Batch: bat, Count: n})
				}
			}
			continue
		}
		for _, p := range s.Profiles {
			for _, hz := range s.HZ {
				for _, cpus := range s.CPUs {
					for _, pre := range s.Preempts {
						for _, bat := range s.Batches {
							for _, n := range s.Counts {
								for _, st := range s.Strategies {
									out = append(out, Cell{Backend: b, Profile: p, Strategy: st, HZ: hz,
										CPUs: cpus, Preempt: pre, Batch: bat, Count: n})
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// validateCellList checks an explicit list of cells: emulated cells only,
// each with a known line and strategy and sizes in range (what an emulated
// kernel refuses is found by Check, which makes the cell n/a).
func (s *Spec) validateCellList() error {
	if len(s.CellList) == 0 {
		return ndst.Usagef("no cells to run")
	}
	for _, c := range s.CellList {
		switch {
		case c.Backend != "sim":
			return ndst.Usagef("cell %s: only emulated cells can be listed", c)
		case c.Count < 1 || c.Count > ndst.MaxCount:
			return ndst.Usagef("cell %s: --count %d is out of range; want 1..%d", c, c.Count, ndst.MaxCount)
		case c.Workload != "":
			if err := c.checkWorkload(); err != nil {
				return err
			}
		case c.NetnsCell() && c.Batch == BatchCNI:
		case !slices.Contains(BatchNames, c.Batch):
			return ndst.Usagef("cell %s: unknown batch mode %q", c, c.Batch)
		}
	}
	if s.Runs < 1 || s.Runs > MaxRuns {
		return ndst.Usagef("--runs: %d is out of range; want 1..%d", s.Runs, MaxRuns)
	}
	return nil
}
