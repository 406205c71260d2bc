// Package costs is the per-operation CPU cost table of the emulated kernel.
//
// The emulated kernel spends virtual CPU time only through explicit charges,
// and every charge names an operation of this table. One table is built in
// (Default, documented below with where each figure comes from); `ndst
// calibrate` writes another, measured on the host, that `--costs FILE` loads.
//
// Invariants: a Table is immutable once loaded; every Op has a cost (Lookup
// falls back to Default for operations a file does not mention); costs are in
// integer nanoseconds and never negative.
package costs

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/ndst-project/ndst/internal/ascending"
	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/safefile"
)

// Op names one charged operation of the emulated kernel.
type Op string

// The charged operations.
const (
	// Register is register_netdevice for one device: name and index
	// allocation, hashing, the NETDEV_REGISTER notifiers (per-device IPv4
	// and IPv6 state, sysfs), up to the device being visible.
	Register Op = "register"
	// Unregister is the per-device CPU work of rollback_registered / the
	// per-device part of unregister_netdevice_many: dev_close, unlisting,
	// NETDEV_UNREGISTER notifiers, uninit, sysfs removal.
	Unregister Op = "unregister"
	// UnregisterBatch is the fixed CPU work of one unregister batch
	// (flush_all_backlogs, the batch notifier), independent of its size.
	UnregisterBatch Op = "unregister_batch"
	// Free is netdev_run_todo's work once a device's references are gone:
	// the destructor and the final kobject_put.
	Free Op = "free"
	// RefcntCheck is one pass of a wait loop that finds references left:
	// reading the (possibly per-CPU) refcount and the time checks.
	RefcntCheck Op = "refcnt_check"
	// Rebroadcast is one NETDEV_UNREGISTER rebroadcast of the wait loop,
	// including the linkwatch run.
	Rebroadcast Op = "rebroadcast"
	// CallRCU is queueing one RCU callback.
	CallRCU Op = "call_rcu"
	// RCUCallback is invoking one RCU callback (a dev_put and a kfree).
	RCUCallback Op = "rcu_callback"
	// ContextSwitch is one switch between tasks on a CPU.
	ContextSwitch Op = "context_switch"
	// Tick is the periodic timer interrupt, without the softirq work it
	// raises.
	Tick Op = "tick"
	// IPI is sending and handling one inter-processor interrupt (the
	// expedited grace period's per-CPU cost).
	IPI Op = "ipi"
	// Syscall is one user/kernel round trip that carries a request (a
	// write to /proc/sys/net/ndst/* or one netlink message).
	Syscall Op = "syscall"
	// RequestGap is the tool's own time in user space between two
	// requests of a one-by-one delete: the reply's way back from the
	// thread that sent the request, the loop, and the next request's way
	// to it (ndst calibrate times it with requests the kernel rejects at
	// once). Not in the built-in table: the user-space loop of the 2009
	// measurement is not known, and there it is 0.
	RequestGap Op = "request_gap"
)

// Ops lists every operation, in a stable order.
var Ops = []Op{Register, Unregister, UnregisterBatch, Free, RefcntCheck, Rebroadcast,
	CallRCU, RCUCallback, ContextSwitch, Tick, IPI, Syscall, RequestGap}

// Table maps operations to CPU costs in nanoseconds, with where they came
// from. Host, when present, describes the machine a calibration ran on so
// that the emulated kernel can be run "as this host".
type Table struct {
	Source string           `json:"source"`
	Notes  string           `json:"notes,omitempty"`
	Costs  map[Op]int64     `json:"costs_ns"`
	Host   *Host            `json:"host,omitempty"`
	Extra  map[string]int64 `json:"extra,omitempty"`
}

// Host is what a calibration learned about the machine.
type Host struct {
	Kernel  string `json:"kernel,omitempty"`
	HZ      int    `json:"hz,omitempty"`
	CPUs    int    `json:"cpus,omitempty"`
	Preempt string `json:"preempt,omitempty"`
	// Profile and RCU are the kernel line and RCU implementation that
	// model the host (chosen from Kernel and its configuration).
	Profile string `json:"profile,omitempty"`
	RCU     string `json:"rcu,omitempty"`
	// GP latency of synchronize_rcu as seen through membarrier, in ns.
	GPLatency *Distribution `json:"gp_latency,omitempty"`
	// Knobs are the kernel's knobs as the calibration read them (package
	// hostknob): their values, and why the others were not read. A table
	// written before knobs were recorded has none (KnobsRead false): its
	// emulated host runs with the line's defaults.
	Knobs     []HostKnob `json:"knobs,omitempty"`
	KnobsRead bool       `json:"knobs_read,omitempty"`
	// DeviceKind is the link kind of the calibration's devices ("dummy",
	// or "ifb" where the kernel has no dummy); "" in an older table.
	DeviceKind string `json:"device_kind,omitempty"`
	// Stalls is what the stall probe measured (package stallprobe): how
	// often, and how long, a CPU of the machine ran nothing at all (a
	// virtual CPU its host did not run). A table without it (written
	// before stalls were measured) models a machine without stalls.
	Stalls *Stalls `json:"stalls,omitempty"`
	// WakeupLatency is the latency of a wake-up of a thread blocked on
	// another, idle CPU (stallprobe.Wakeups): the emulated machine's
	// remote wake-ups of an idle CPU take its median (sim.Config's
	// WakeLatency). A table without it models none.
	WakeupLatency *Distribution `json:"wakeup_latency,omitempty"`
	// TimerLateness is how late a timer interrupt arrived on an idle CPU
	// (stallprobe.TimerLateness, less the probe's floor): the emulated
	// machine's ticks come late by one of its groups each (sim.Config's
	// TickLateness). A table without it has ticks on time.
	TimerLateness *Lateness `json:"timer_lateness,omitempty"`
	// OtherWork is the rate of the RCU callbacks the machine's other work
	// queued while the calibration ran, solved from GPLatency (package
	// calibrate, otherwork.go): the emulated machine queues as many
	// (rcu/otherwork.go). A table without it models none.
	OtherWork *OtherWork `json:"rcu_other_work,omitempty"`
}

// Lateness is a distribution kept whole enough to draw from: its summary,
// the floor taken off every sample, and the means of equal-count groups of
// the samples, ascending (as Stalls keeps its lengths).
type Lateness struct {
	Distribution
	// FloorNS is what was taken off each sample: the smallest one, the
	// probe's own path (its wake-up on its CPU), not the interrupt's.
	FloorNS  int64   `json:"floor_ns"`
	GroupsNS []int64 `json:"groups_ns"`
}

// MaxLateness bounds a group of Lateness: a second.
const MaxLateness = 1_000_000_000

// Validate checks that the groups are ascending and within 0..MaxLateness.
func (l *Lateness) Validate() error {
	if len(l.GroupsNS) == 0 {
		return fmt.Errorf("no groups")
	}
	return ascending.Check(l.GroupsNS, 0, MaxLateness, false, "group", showNS)
}

// showNS formats nanoseconds in a validation error.
func showNS(v int64) string { return fmt.Sprintf("%d ns", v) }

// OtherWork is the machine's other work's RCU callbacks as calibrate
// solved them: PerCPUSecond a CPU a second, the rate at which the emulated
// machine's membarrier(GLOBAL) calls, timed as calibrate times the real
// ones, have the measured median (EmulatedP50NS at that rate, IdleP50NS
// with none).
type OtherWork struct {
	PerCPUSecond  float64 `json:"per_cpu_second"`
	IdleP50NS     int64   `json:"idle_gp_p50_ns"`
	EmulatedP50NS int64   `json:"emulated_gp_p50_ns"`
	// BoundP50NS is the emulated median at the solver's bound, one
	// callback a tick on every CPU, where that came no nearer the
	// measured median than none and none are modelled (PerCPUSecond 0).
	BoundP50NS int64 `json:"bound_gp_p50_ns,omitempty"`
}

// Rate is the rate an emulated machine of this host runs with, given the
// measured membarrier median (Host.GPLatency's; 0 when unknown):
// PerCPUSecond, unless the median emulated at that rate (EmulatedP50NS) is
// no nearer the measured one than the median with none (IdleP50NS). The
// emulated median is not monotonic in the rate, and a rate that does not
// bring it nearer explains nothing of the measurement: tables calibrated before
// calibrate checked this keep the bound where it did not help.
func (o *OtherWork) Rate(measuredP50NS int64) float64 {
	if o == nil {
		return 0
	}
	if measuredP50NS > 0 && o.PerCPUSecond > 0 && o.IdleP50NS > 0 && o.EmulatedP50NS > 0 &&
		math.Abs(float64(o.EmulatedP50NS-measuredP50NS)) >= math.Abs(float64(o.IdleP50NS-measuredP50NS)) {
		return 0
	}
	return o.PerCPUSecond
}

// Stalls summarises the stall probe's run: per CPU a pinned thread spun on
// the clock, and every gap between two readings above ThresholdNS was a
// stall.
type Stalls struct {
	ThresholdNS int64 `json:"threshold_ns"`
	// Policy is the scheduling policy the probe's threads spun under.
	Policy string `json:"policy,omitempty"`
	CPUs   int    `json:"cpus"`
	// The embedded StallSet is the probe with every CPU spinning at once;
	// OneBusy the probe of one CPU at a time, the others idle (a virtual
	// CPU alone competes with fewer of its own for the host's cores); nil
	// on one CPU, where the two are the same.
	StallSet
	OneBusy *StallSet `json:"one_busy,omitempty"`
}

// StallSet is one probe run's stalls.
type StallSet struct {
	// SpunNS is the probe's spinning time, summed over the CPUs; Count
	// the stalls in it and StalledNS their total length.
	SpunNS    int64 `json:"spun_ns"`
	Count     int   `json:"count"`
	StalledNS int64 `json:"stalled_ns"`
	// PerSecond is the stall rate per second of a CPU's running time
	// (spun less stalled).
	PerSecond float64 `json:"per_cpu_second"`
	// LengthsNS are the stalls sorted by length and cut into groups of
	// equal count (20, fewer with fewer stalls): each group's mean length,
	// ascending; empty without stalls. The emulated machine draws each
	// stall's length as one of them, all as likely, so its stalls have
	// the measured mean and spread.
	LengthsNS []int64 `json:"lengths_ns,omitempty"`
	// P50NS, P90NS and MaxNS describe the measured lengths.
	P50NS int64 `json:"p50_ns,omitempty"`
	P90NS int64 `json:"p90_ns,omitempty"`
	MaxNS int64 `json:"max_ns,omitempty"`
}

// Stall bounds a table may hold: a stall every 100 µs at most, none longer
// than a second.
const (
	MaxStallRate = 10000
	MaxStallNS   = 1_000_000_000
)

// Validate checks a stall summary.
func (s *Stalls) Validate() error {
	if err := s.StallSet.Validate(); err != nil {
		return err
	}
	if s.OneBusy != nil {
		if err := s.OneBusy.Validate(); err != nil {
			return fmt.Errorf("one CPU busy: %v", err)
		}
	}
	return nil
}

// Validate checks one probe run's stalls.
func (s *StallSet) Validate() error {
	switch {
	case s.PerSecond < 0 || s.PerSecond > MaxStallRate || s.PerSecond != s.PerSecond:
		return fmt.Errorf("stall rate %g per CPU-second: want 0 to %d", s.PerSecond, MaxStallRate)
	case s.PerSecond > 0 && len(s.LengthsNS) == 0:
		return fmt.Errorf("a stall rate of %g per CPU-second needs the stall lengths (lengths_ns)", s.PerSecond)
	case s.Count < 0 || s.SpunNS < 0 || s.StalledNS < 0 || s.StalledNS > s.SpunNS:
		return fmt.Errorf("stall counts must not be negative, and the stalled time (%d ns) not above the spun time (%d ns)", s.StalledNS, s.SpunNS)
	}
	return ascending.Check(s.LengthsNS, 0, MaxStallNS, true, "stall length", showNS)
}

// HostKnob is one kernel knob of a calibrated host.
type HostKnob struct {
	Name    string `json:"name"`
	Value   string `json:"value,omitempty"`
	Source  string `json:"source,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// Distribution summarises a set of measurements in nanoseconds.
type Distribution struct {
	N      int   `json:"n"`
	MinNS  int64 `json:"min_ns"`
	P50NS  int64 `json:"p50_ns"`
	MeanNS int64 `json:"mean_ns"`
	P99NS  int64 `json:"p99_ns"`
	MaxNS  int64 `json:"max_ns"`
}

// Default is the built-in table: a uniprocessor ppc750 at 800 MHz running
// 2.6.31, the machine of the 2009 experiment. Only one figure is fitted to a
// published measurement (see DefaultCalibration); the others are order-of-
// magnitude estimates for a machine of that class and are documented as such.
func Default() *Table {
	return &Table{
		Source: "builtin:ppc750-800MHz-2.6.31",
		Notes:  DefaultCalibration,
		Costs: map[Op]int64{
			Register:        1_000_000,
			Unregister:      1_400_000,
			UnregisterBatch: 50_000,
			Free:            60_000,
			RefcntCheck:     1_000,
			Rebroadcast:     30_000,
			CallRCU:         300,
			RCUCallback:     2_000,
			ContextSwitch:   5_000,
			Tick:            2_000,
			IPI:             3_000,
			Syscall:         3_000,
		},
	}
}

// DefaultCalibration says which published figure the built-in table was fitted
// to, and how.
const DefaultCalibration = "unregister (1.4 ms) is the only fitted figure: `del 1 1000` under " +
	"strategy tick (schedule_timeout_uninterruptible(1)) on 1 CPU, preempt none, HZ=1000, " +
	"profile 2.6.31 with its default Tree RCU takes the published 3.00 s for any unregister cost " +
	"between about 1.0 and 1.8 ms (3 jiffies per device), and 1.4 ms is the middle of that plateau " +
	"(scripts/reproduce-2009.sh --sweep shows it). Every other figure is an estimate for an " +
	"800 MHz ppc750, not fitted to any timing."

// Lookup returns the cost of op in nanoseconds, falling back to Default.
func (t *Table) Lookup(op Op) int64 {
	if t != nil {
		if v, ok := t.Costs[op]; ok {
			return v
		}
	}
	return builtin.Costs[op]
}

// builtin is the table Lookup falls back to; never handed out, never
// changed.
var builtin = Default()

// MaxFileSize bounds the cost tables Load reads; a table is a few hundred
// bytes.
const MaxFileSize = 1 << 20

// Load reads a table from a JSON file (a regular file of at most MaxFileSize
// bytes, see package safefile) and checks it with Parse.
func Load(path string) (*Table, error) {
	b, err := safefile.ReadFile(context.Background(), path, MaxFileSize, safefile.FollowLinks)
	if err != nil {
		return nil, fmt.Errorf("cost table: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("cost table %s: %v", path, err)
	}
	return t, nil
}

// Parse decodes a table from JSON and checks it (Validate).
func Parse(b []byte) (*Table, error) {
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// MaxCost bounds one operation's cost: a second of CPU, some 700 times the
// largest measured (the 2009 machine's 1.4 ms unregister). Beyond it a
// single charge would outlast the soft-lockup threshold and the run.
const MaxCost = 1_000_000_000

// MaxOtherWork bounds Host.OtherWork's rate, as rcu.MaxOtherWork does the
// model's.
const MaxOtherWork = 10000

// Validate checks that every named operation is known and costs 0..MaxCost.
func (t *Table) Validate() error {
	if t.Host != nil {
		if s := t.Host.Stalls; s != nil {
			if err := s.Validate(); err != nil {
				return fmt.Errorf("host stalls: %v", err)
			}
		}
		if o := t.Host.OtherWork; o != nil && !(o.PerCPUSecond >= 0 && o.PerCPUSecond <= MaxOtherWork) {
			return fmt.Errorf("host rcu_other_work: %g callbacks a CPU a second, want 0 to %d", o.PerCPUSecond, MaxOtherWork)
		}
		if l := t.Host.TimerLateness; l != nil {
			if err := l.Validate(); err != nil {
				return fmt.Errorf("host timer lateness: %v", err)
			}
		}
		for _, k := range t.Host.Knobs {
			if k.Value == "" {
				continue
			}
			if _, err := knob.ParseAssignment(k.Name + "=" + k.Value); err != nil {
				return fmt.Errorf("host knob: %v", err)
			}
		}
	}
	known := map[Op]bool{}
	for _, op := range Ops {
		known[op] = true
	}
	names := make([]string, 0, len(t.Costs))
	for op := range t.Costs {
		names = append(names, string(op))
	}
	sort.Strings(names)
	for _, n := range names {
		op := Op(n)
		if !known[op] {
			return fmt.Errorf("unknown operation %q (known: %v)", n, Ops)
		}
		if t.Costs[op] < 0 {
			return fmt.Errorf("operation %q has negative cost %d", n, t.Costs[op])
		}
		if t.Costs[op] > MaxCost {
			return fmt.Errorf("operation %q costs %d ns, above the %d ns (1 s) of CPU any one kernel operation here may take", n, t.Costs[op], int64(MaxCost))
		}
	}
	return nil
}

// Save writes the table as indented JSON.
func (t *Table) Save(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return safefile.Replace(path, 0o644, append(b, '\n'), nil)
}
