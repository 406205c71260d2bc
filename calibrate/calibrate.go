// Package calibrate measures the host so that the emulated kernel can be run
// "as this host": `ndst calibrate [-o FILE]` writes a costs.Table that
// `--costs FILE` loads.
//
// # What is measured
//
//   - Grace-period latency: membarrier(MEMBARRIER_CMD_GLOBAL) blocks for one
//     synchronize_rcu() when more than one CPU is online, so timing it from
//     user space measures the host's normal grace period. Calls are spaced
//     by random pauses so that they start at every phase of the scheduler
//     tick; the report gives the distribution and the median by start phase
//     (the phase origin is where grace periods end, which on a ticking
//     kernel is the tick).
//   - HZ: from the kernel configuration (/proc/config.gz or
//     /boot/config-RELEASE); also estimated from the grace-period end times,
//     which cluster on jiffy boundaries: the lowest candidate HZ (100, 250,
//     300, 1000) whose period concentrates the end phases.
//   - CPUs (online) and the preemption model (debugfs, else preempt= on the
//     command line of a PREEMPT_DYNAMIC kernel, else the configuration).
//   - Through the netlink backend, in a throwaway namespace that is removed
//     afterwards, from small runs only (at most 300 devices): the time of a
//     netlink request the kernel rejects at once (a user/kernel round trip),
//     the per-device create time, and batched deletes of two sizes (default
//     100 and 300), whose difference gives the per-device CPU cost of a
//     batched teardown (the slope) and whose intercept is the fixed cost of
//     one batch; and the CPU time, in the thread that sends it, of delete
//     requests of one device (RequestCPU; measureRequests says what the
//     kernel does in that thread). The wall time of a one-by-one delete is
//     never measured here: it is what the emulated kernel must predict.
//
// # How measurements map onto the cost table
//
//	syscall          = median time of the rejected request (send only; the
//	                   kernel handles a netlink request inside the send)
//	request_gap      = mean of the middle half of the gaps between rejected
//	                   delete requests sent as a one-by-one delete sends
//	                   them: ndst's own time in user space before each
//	                   next request (charged between the requests of an
//	                   emulated one-by-one delete)
//	register         = median per-device create time - syscall
//	unregister+free  = slope of the batched delete's wall time over the
//	                   device count (a batch waits once, so the slope is
//	                   per-device work); split in the built-in table's
//	                   proportion (free is Default free/(unregister+free)
//	                   of it), as user space cannot tell the two apart
//	unregister_batch = the CPU time of a one-device delete request in the
//	                   sending thread (the kernel handles the request in
//	                   that send) less the device's unregister and free
//	                   and the syscall, floored at 0 (the fit makes the
//	                   emulated request's CPU the measured one)
//
// Not the wall-time intercept: most of a batched delete's fixed wall time
// is the wait in netdev_run_todo's rcu_barrier (traced with sched_switch and
// sched_wakeup: one long sleep per delete, woken by ksoftirqd), and that
// wait is what the emulated kernel models itself. Not the intercept of the
// batched deletes' CPU times either: extrapolated from 100 and 300 devices
// it carries the noise of a hundred devices' work (0 to 12.9 ms in guests
// of one kernel), and every request of a one-by-one delete pays it again.
// Not the CPU-time slope: in a software-emulated guest the CPU clock runs
// apart from the wall clock (its slope exceeded the wall-time slope), and
// RCU callbacks run in softirq on a uniprocessor count against the sending
// thread. A report from before the one-device requests were measured keeps
// the old rule: the intercept of the CPU line, at most the wall-time one.
//
// Every other operation keeps its built-in cost (costs.Lookup falls back to
// the default). Host carries the kernel release, HZ, CPU count, preemption
// model (lazy runs as full on a line without PREEMPT_LAZY) and the
// grace-period distribution. The raw figures go to Extra.
package calibrate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/safefile"
)

// Options configures a calibration. Zero values take the defaults.
type Options struct {
	// Netns is the throwaway namespace; default "ndst-calibrate-PID". It
	// must not exist yet and is removed at the end.
	Netns string
	// Kind, KindExplicit: the link kind, as for the netlink backend.
	Kind         string
	KindExplicit bool
	// GPSamples is the number of membarrier calls; default 200.
	GPSamples int
	// Small and Large are the two batched-delete sizes; default 100 and
	// 300 (Large at most MaxDevices). Create times come from the same runs.
	Small, Large int
	// Check is the size of a batched delete timed beyond the fitted
	// sizes, shown against the emulated kernel and never an input
	// (check.go); default 1000, negative: none.
	Check int
	// Rounds repeats each size; default 15 (after one warm-up round).
	Rounds int
	// RoundTrips is the number of rejected requests timed; default 500.
	RoundTrips int
	// Requests is the number of one-device deletes whose CPU time in the
	// sending thread is measured (RequestCPU); default 30.
	Requests int
	// Gaps is the number of rejected delete requests whose gaps are timed
	// (RequestGap); default 200.
	Gaps int
	// Notef prints one-line notices (such as the dummy fallback).
	Notef func(format string, args ...any)
	// Progress, when set, is told what is being measured.
	Progress func(what string)
	// NoNetns skips the namespace runs (and so the namespace costs);
	// NoWorkloads the workload runs (workloads.go).
	NoNetns, NoWorkloads bool
}

// MaxDevices bounds the sizes of calibration runs.
const MaxDevices = 300

func (o Options) withDefaults() (Options, error) {
	if o.GPSamples == 0 {
		o.GPSamples = 200
	}
	if o.Small == 0 {
		o.Small = 100
	}
	if o.Large == 0 {
		o.Large = 300
	}
	if o.Rounds == 0 {
		o.Rounds = 15
	}
	if o.Check == 0 {
		o.Check = 1000
	}
	if o.RoundTrips == 0 {
		o.RoundTrips = 500
	}
	if o.Requests == 0 {
		o.Requests = 30
	}
	if o.Gaps == 0 {
		o.Gaps = 200
	}
	switch {
	case o.GPSamples < 0 || o.Rounds < 0 || o.RoundTrips < 0 || o.Requests < 0 || o.Gaps < 0:
		return o, fmt.Errorf("calibrate: sample counts must be positive")
	case o.Small < 1 || o.Large > MaxDevices || o.Small >= o.Large:
		return o, fmt.Errorf("calibrate: batch sizes %d and %d: want 1 <= small < large <= %d", o.Small, o.Large, MaxDevices)
	case o.Check > 0 && (o.Check <= o.Large || o.Check > MaxCheck):
		return o, fmt.Errorf("calibrate: the check's size %d: want more than the larger batch size %d and at most %d", o.Check, o.Large, MaxCheck)
	}
	return o, nil
}

// Report is the outcome of a calibration.
type Report struct {
	Host nlbackend.HostFacts `json:"host"`
	// Knobs are the kernel's knobs as read when the calibration started
	// (knobs.go); they go to the table's host section.
	Knobs []costs.HostKnob `json:"knobs,omitempty"`
	// HZ is the one used (configuration, else measured); HZMeasured is the
	// estimate from grace-period end times (0 when unclear) and
	// TickAlignment how strongly the ends cluster at that period (0..1).
	HZ            int     `json:"hz"`
	HZMeasured    int     `json:"hz_measured"`
	TickAlignment float64 `json:"tick_alignment"`

	GP *costs.Distribution `json:"gp_latency,omitempty"`
	// GPTicks is the median grace period in ticks.
	GPTicks float64 `json:"gp_ticks,omitempty"`
	// GPByPhase is the median grace period by the phase of its start
	// within the tick (quarters of the tick period).
	GPByPhase []PhaseBucket `json:"gp_by_tick_phase,omitempty"`
	// GPError says why grace periods could not be measured.
	GPError string `json:"gp_error,omitempty"`
	// Stalls is the stall probe's summary (stalls.go); StallsError says
	// why there is none.
	Stalls      *costs.Stalls `json:"stalls,omitempty"`
	StallsError string        `json:"stalls_error,omitempty"`
	// Wakeup is the latency of a wake-up from one CPU to another, idle
	// one (stallprobe.Wakeups, stalls.go), kept in the table's host
	// section: the emulated machine's remote wake-ups take its median.
	Wakeup *costs.Distribution `json:"wakeup_latency,omitempty"`
	// TimerLateness is how late a timer interrupt arrived on an idle CPU
	// (timerlate.go), kept in the table's host section: the emulated
	// machine's ticks come late by it. TimerLatenessError says why there
	// is none.
	TimerLateness      *costs.Lateness `json:"timer_lateness,omitempty"`
	TimerLatenessError string          `json:"timer_lateness_error,omitempty"`
	// OtherWork is the rate of the machine's other work's RCU callbacks,
	// solved from GP (otherwork.go), kept in the table's host section; nil
	// in a report recorded before it was solved.
	OtherWork *costs.OtherWork `json:"rcu_other_work,omitempty"`

	Kind        string       `json:"kind"`
	RoundTripNS int64        `json:"round_trip_ns"`
	CreateNS    int64        `json:"create_per_device_ns"`
	Creates     int          `json:"creates"`
	Batches     []BatchPoint `json:"batched_deletes"`
	// Check is the batched delete of Options.Check devices, beyond the
	// fitted sizes and not an input (check.go); nil when not measured.
	Check       *BatchPoint `json:"check,omitempty"`
	SlopeNS     int64       `json:"batch_delete_per_device_ns"`
	InterceptNS int64       `json:"batch_delete_fixed_ns"`
	// The same line through the process's CPU time.
	CPUSlopeNS     int64 `json:"batch_delete_cpu_per_device_ns"`
	CPUInterceptNS int64 `json:"batch_delete_cpu_fixed_ns"`
	// Request is the CPU time of one-device delete requests in the
	// sending thread, which unregister_batch is fitted to (nil in a report
	// from before it, whose unregister_batch is fitted to the intercept).
	Request *RequestCPU `json:"request_cpu,omitempty"`
	// Gap is the tool's time between two requests of a one-by-one delete
	// (nlbackend's RequestGaps), which the table's request_gap is (nil in a
	// report from before it: request_gap 0).
	Gap *Spread `json:"request_gap,omitempty"`
	// Netns is the namespace runs (netns.go); NetnsError says why there
	// are none.
	Netns      []NetnsPoint `json:"netns,omitempty"`
	NetnsError string       `json:"netns_error,omitempty"`
	// NetnsFit says what netns_exit_ns was fitted to: "cleanup runs"
	// (each run's duration) or "cleanup done".
	NetnsFit string `json:"netns_fit,omitempty"`
	// NetnsCleanupLines compare the measured and the emulated cleanup_net
	// runs (set by the closure).
	NetnsCleanupLines *CleanupLines `json:"netns_cleanup_lines,omitempty"`
	// Unshare is the unshares that netns_setup_ns is fitted to
	// (unshare.go); nil in a report from before them.
	Unshare *UnsharePoint `json:"unshare,omitempty"`
	// NetnsFiles describes the filesystem of the namespaces' files when
	// it, not the kernel, makes their creates drift (netnsfs_linux.go).
	NetnsFiles string `json:"netns_files,omitempty"`
	// Workloads are the workload runs (workloads.go); WorkloadsError says
	// why there are none.
	Workloads      []WorkloadPoint `json:"workloads,omitempty"`
	WorkloadsError string          `json:"workloads_error,omitempty"`

	// Profile is the kernel line that models the host (ProfileWhy says
	// why) and RCU its RCU implementation: the emulated kernel the table
	// is fitted to and closed on.
	Profile    string `json:"profile"`
	ProfileWhy string `json:"profile_why"`
	RCU        string `json:"rcu"`
	// Closure compares every calibration run with the emulated kernel
	// loaded with the table; FitIterations is how many emulated passes
	// the fit took.
	Closure       []ClosurePoint `json:"closure"`
	FitIterations int            `json:"fit_iterations"`
	// Missed says, for every gated run the closure misses, what misses
	// (Misses).
	Missed []string `json:"misses,omitempty"`
	// workloadAtFloor holds the workload runs whose own costs the fit left
	// at their floor still too slow (with their relative error there).
	workloadAtFloor map[string]float64

	// LoadAvg is /proc/loadavg before and after the measurements: the
	// emulated kernel models an otherwise idle machine, so a busy one is
	// named when its calibration does not close.
	LoadAvg []string `json:"loadavg,omitempty"`
	// OtherCPU is the share of the machine's CPU time that other work
	// took during the calibration (othercpu.go); nil in a report from
	// before it.
	OtherCPU *float64 `json:"other_cpu_share,omitempty"`
	// StolenCPU is the hypervisor's part of it (steal).
	StolenCPU *float64 `json:"stolen_cpu_share,omitempty"`

	// Figures names the statistic every figure of a set of runs is, the
	// measured rounds' and the emulated phases' alike: FiguresMidMean
	// (MidMean); "" in a report from before it, whose figures are medians.
	Figures string `json:"figures,omitempty"`

	Table *costs.Table `json:"table"`
	// Path is where the table was written, if anywhere.
	Path string `json:"path,omitempty"`

	// RefitOf is the file a refitted report was read from (ndst calibrate
	// --refit, refit.go) and RecordedClosure the closure it was recorded
	// with, by the model of the ndst that measured it.
	RefitOf         string         `json:"refit_of,omitempty"`
	RecordedClosure []ClosurePoint `json:"recorded_closure,omitempty"`
}

// PhaseBucket is the grace-period latency of calls that started in one
// part of the tick.
type PhaseBucket struct {
	FromPct int   `json:"from_pct"`
	ToPct   int   `json:"to_pct"`
	N       int   `json:"n"`
	P50NS   int64 `json:"p50_ns"`
}

// BatchPoint is one batched-delete size and its timings.
type BatchPoint struct {
	Devices int   `json:"devices"`
	P50NS   int64 `json:"p50_ns"`
	// MidMeanNS is the rounds' figure (MidMean), which the fit and the
	// closure use.
	MidMeanNS int64   `json:"mid_mean_ns,omitempty"`
	RunsNS    []int64 `json:"runs_ns"`
	CPUP50NS  int64   `json:"cpu_p50_ns"`
}

// RequestCPU is the CPU time, in the thread that sends it, of a delete
// request of one device (a veth pair: both ends) in a namespace that holds
// nothing else of ndst's: the CPU of one request of a one-by-one delete,
// measured without its wall time.
type RequestCPU struct {
	Devices int     `json:"devices"`
	RunsNS  []int64 `json:"runs_ns"`
	// MidMeanNS is the runs' figure (MidMean); Q1NS and Q3NS their
	// quartiles (the spread).
	MidMeanNS int64 `json:"mid_mean_ns"`
	Q1NS      int64 `json:"q1_ns"`
	Q3NS      int64 `json:"q3_ns"`
}

// Spread is a set of timed runs with its figure (MidMean) and quartiles.
type Spread struct {
	N         int   `json:"n"`
	MidMeanNS int64 `json:"mid_mean_ns"`
	Q1NS      int64 `json:"q1_ns"`
	Q3NS      int64 `json:"q3_ns"`
}

// spreadOf summarises runs.
func spreadOf(ns []int64) *Spread {
	q1, q3 := quartiles(ns)
	return &Spread{N: len(ns), MidMeanNS: MidMean(ns), Q1NS: q1, Q3NS: q3}
}

// quartiles are the first and third quartiles of ns (nearest rank).
func quartiles(ns []int64) (q1, q3 int64) {
	if len(ns) == 0 {
		return 0, 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[(len(s)-1)/4], s[(3*(len(s)-1)+3)/4]
}

// Figure is the batch size's measured figure: the mean of the middle half
// of its rounds (in a report from before MidMeanNS, the median).
func (b BatchPoint) Figure() int64 {
	switch {
	case b.MidMeanNS > 0:
		return b.MidMeanNS
	}
	return b.P50NS
}

// batchLine sets the per-device slope and the fixed part of the batched
// deletes from the figures of the smallest and the largest size.
func (r *Report) batchLine() {
	s, l := r.Batches[0], r.Batches[len(r.Batches)-1]
	r.SlopeNS, r.InterceptNS = line(s.Devices, s.Figure(), l.Devices, l.Figure())
}

// distribution summarises samples (ns).
func distribution(ns []int64) *costs.Distribution {
	if len(ns) == 0 {
		return nil
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	p99 := min((len(s)*99+99)/100, len(s)) - 1
	return &costs.Distribution{N: len(s), MinNS: s[0], P50NS: s[len(s)/2], MeanNS: int64(sum / float64(len(s))),
		P99NS: s[p99], MaxNS: s[len(s)-1]}
}

func median(ns []int64) int64 {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[len(s)/2]
}

// concentration returns how strongly the times cluster modulo period (the
// mean resultant length of their phases, 0..1) and their mean phase in ns.
func concentration(times []int64, period int64) (float64, int64) {
	if len(times) == 0 || period <= 0 {
		return 0, 0
	}
	var c, s float64
	for _, t := range times {
		a := 2 * math.Pi * float64(((t%period)+period)%period) / float64(period)
		c += math.Cos(a)
		s += math.Sin(a)
	}
	n := float64(len(times))
	r := math.Hypot(c, s) / n
	mean := math.Atan2(s, c)
	if mean < 0 {
		mean += 2 * math.Pi
	}
	return r, int64(mean / (2 * math.Pi) * float64(period))
}

// candidateHZ are the kernel's usual CONFIG_HZ values, lowest first.
var candidateHZ = []int{100, 250, 300, 1000}

// alignedThreshold is the concentration above which ends are taken to be
// aligned on a period.
const alignedThreshold = 0.5

// measureHZ estimates HZ from grace-period end times: the lowest candidate
// whose period concentrates the ends (a multiple of the true period does
// not; its divisors do, hence the lowest). 0 when none does.
func measureHZ(ends []int64) (int, float64) {
	if len(ends) < 20 {
		return 0, 0
	}
	for _, hz := range candidateHZ {
		if r, _ := concentration(ends, int64(time.Second)/int64(hz)); r >= alignedThreshold {
			return hz, r
		}
	}
	return 0, 0
}

// phaseBuckets groups latencies by the phase of their start relative to
// origin within period, in k equal parts.
func phaseBuckets(starts, lats []int64, period, origin int64, k int) []PhaseBucket {
	if period <= 0 || len(starts) == 0 {
		return nil
	}
	parts := make([][]int64, k)
	for i, s := range starts {
		ph := (((s - origin) % period) + period) % period
		j := int(ph * int64(k) / period)
		parts[j] = append(parts[j], lats[i])
	}
	out := make([]PhaseBucket, k)
	for j := range k {
		out[j] = PhaseBucket{FromPct: 100 * j / k, ToPct: 100 * (j + 1) / k, N: len(parts[j]), P50NS: median(parts[j])}
	}
	return out
}

// buildTable maps the measurements onto the cost table (see the package doc).
func (r *Report) buildTable(now time.Time) {
	def := costs.Default()
	reg := max(0, r.CreateNS-r.RoundTripNS)
	du, df := def.Costs[costs.Unregister], def.Costs[costs.Free]
	free := r.SlopeNS * df / (du + df)
	unreg := r.SlopeNS - free
	batch := min(r.CPUInterceptNS, r.InterceptNS)
	fixed := "unregister_batch between 0 and the per-batch CPU time measured in the sending thread"
	if q := r.Request; q != nil {
		batch = max(0, q.MidMeanNS-int64(q.Devices)*r.SlopeNS-r.RoundTripNS) // the fit's start
		fixed = fmt.Sprintf("unregister_batch so that the emulated CPU of a %d-device delete request is the %s measured in the sending thread", q.Devices, dur(q.MidMeanNS))
	}
	t := &costs.Table{
		Source: fmt.Sprintf("calibrate:%s:%s", r.Host.Kernel, now.UTC().Format("2006-01-02T15:04:05Z")),
		Notes: "measured by ndst calibrate: syscall = rejected netlink request; register, unregister+free " +
			"(split as in the built-in table) and unregister_batch are solved so that the emulated kernel of line " +
			r.Profile + " (" + r.RCU + " RCU) reproduces the measured per-device create time and the batched deletes of " +
			fmt.Sprint(r.Batches[0].Devices) + " and " + fmt.Sprint(r.Batches[len(r.Batches)-1].Devices) +
			" devices (closure; " + fixed + "); other operations keep their built-in costs",
		Costs: map[costs.Op]int64{
			costs.Syscall:         r.RoundTripNS,
			costs.Register:        reg,
			costs.Unregister:      unreg,
			costs.Free:            free,
			costs.UnregisterBatch: batch,
		},
		Host: &costs.Host{Kernel: r.Host.Kernel, HZ: r.HZ, CPUs: r.Host.CPUs, Preempt: r.Host.Preempt,
			Profile: r.Profile, RCU: r.RCU, GPLatency: r.GP, Knobs: r.Knobs, KnobsRead: r.Knobs != nil, DeviceKind: r.Kind,
			Stalls: r.Stalls, WakeupLatency: r.Wakeup, TimerLateness: r.TimerLateness, OtherWork: r.OtherWork},
		Extra: map[string]int64{
			"create_per_device_ns":           r.CreateNS,
			"netlink_round_trip_ns":          r.RoundTripNS,
			"batch_delete_per_device_ns":     r.SlopeNS,
			"batch_delete_fixed_ns":          r.InterceptNS,
			"batch_delete_cpu_per_device_ns": r.CPUSlopeNS,
			"batch_delete_cpu_fixed_ns":      r.CPUInterceptNS,
			"hz_measured":                    int64(r.HZMeasured),
			"tick_alignment_permille":        int64(math.Round(r.TickAlignment * 1000)),
		},
	}
	for _, b := range r.Batches {
		t.Extra[fmt.Sprintf("batch_delete_%d_ns", b.Devices)] = b.Figure()
	}
	if r.Gap != nil {
		t.Costs[costs.RequestGap] = r.Gap.MidMeanNS
	}
	if q := r.Request; q != nil {
		t.Extra[fmt.Sprintf("request_cpu_%d_ns", q.Devices)] = q.MidMeanNS
	}
	r.Table = t
}

// WriteText prints the readable summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	h := r.Host
	fmt.Fprintf(&b, "calibration: kernel %s, %d CPU(s), preempt %s", orUnknown(h.Kernel), h.CPUs, orUnknown(h.Preempt))
	if h.PreemptSource != "" {
		fmt.Fprintf(&b, " (from %s)", h.PreemptSource)
	}
	b.WriteString("\n")
	switch {
	case h.HZ > 0:
		fmt.Fprintf(&b, "HZ:              %d (from %s)", h.HZ, h.HZSource)
	case r.HZ > 0:
		fmt.Fprintf(&b, "HZ:              %d (measured; no kernel configuration readable)", r.HZ)
	default:
		b.WriteString("HZ:              unknown")
	}
	if r.HZMeasured > 0 {
		fmt.Fprintf(&b, "; grace periods end on a %d Hz grid (alignment %.2f)", r.HZMeasured, r.TickAlignment)
	} else if r.GP != nil {
		b.WriteString("; grace-period ends show no tick grid")
	}
	b.WriteString("\n")
	if r.GP != nil {
		g := r.GP
		fmt.Fprintf(&b, "grace period:    membarrier(GLOBAL) x %d: min %s, p50 %s, mean %s, p99 %s, max %s",
			g.N, dur(g.MinNS), dur(g.P50NS), dur(g.MeanNS), dur(g.P99NS), dur(g.MaxNS))
		if r.GPTicks > 0 {
			fmt.Fprintf(&b, " (%.1f ticks at p50)", r.GPTicks)
		}
		b.WriteString("\n")
		if len(r.GPByPhase) > 0 {
			b.WriteString("  p50 by start phase in the tick:")
			for _, p := range r.GPByPhase {
				fmt.Fprintf(&b, " %d-%d%% %s (n=%d)", p.FromPct, p.ToPct, dur(p.P50NS), p.N)
			}
			b.WriteString("\n")
		}
	} else {
		fmt.Fprintf(&b, "grace period:    not measured: %s\n", r.GPError)
	}
	b.WriteString(r.otherWorkSummary())
	b.WriteString(r.stallSummary())
	b.WriteString(r.latenessSummary())
	fmt.Fprintf(&b, "netlink request: %s (a request the kernel rejects at once)\n", dur(r.RoundTripNS))
	if g := r.Gap; g != nil {
		fmt.Fprintf(&b, "between requests: %s (%s of %d gaps between rejected delete requests sent as a one-by-one delete sends them; quartiles %s and %s): ndst's own time before each next request, request_gap\n",
			dur(g.MidMeanNS), r.figure1(), g.N, dur(g.Q1NS), dur(g.Q3NS))
	}
	fmt.Fprintf(&b, "create (%s):    %s per device (the %s of the rounds' medians, over %d devices)\n", r.Kind, dur(r.CreateNS), r.figure1(), r.Creates)
	b.WriteString("batched delete: ")
	for i, p := range r.Batches {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d devices %s", p.Devices, dur(p.Figure()))
	}
	fmt.Fprintf(&b, " (%s of %d, after a warm-up round) -> %s per device + %s per batch\n", r.figuresOf(), len(r.Batches[0].RunsNS), dur(r.SlopeNS), dur(r.InterceptNS))
	for _, p := range r.Batches {
		if lo, hi := slices.Min(p.RunsNS), slices.Max(p.RunsNS); len(p.RunsNS) > 1 && lo > 0 && float64(hi)/float64(lo) > spreadLimit {
			fmt.Fprintf(&b, "warning: the %d-device batched deletes ranged from %s to %s (%.1fx, more than where in the tick they start explains): this machine is noisy now, and the fit is only as good as their figures\n",
				p.Devices, dur(lo), dur(hi), float64(hi)/float64(lo))
		}
	}
	fmt.Fprintf(&b, "  of which CPU:  %s per device + %s per batch (the rest is waiting, which the emulated kernel models)\n",
		dur(r.CPUSlopeNS), dur(r.CPUInterceptNS))
	if q := r.Request; q != nil && r.Table != nil {
		fmt.Fprintf(&b, "one-device delete: %s of CPU in the sending thread (%s of %d requests; quartiles %s and %s) -> unregister_batch %s (what the request costs beyond its device and the syscall)\n",
			dur(q.MidMeanNS), r.figure1(), len(q.RunsNS), dur(q.Q1NS), dur(q.Q3NS), dur(r.Table.Costs[costs.UnregisterBatch]))
	}
	switch {
	case len(r.Netns) > 0:
		b.WriteString("namespaces:     ")
		for i, p := range r.Netns {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %d with lo up: created in %s, deleted at once: returned %s, cleanup done %s",
				p.Namespaces, dur(p.AddNS), dur(p.ReturnedNS), dur(p.DoneNS))
		}
		fmt.Fprintf(&b, " (%s of %d)\n", r.figuresOf(), r.Netns[0].Rounds)
		if fixed, per, ok := cleanupLine(r.Netns); ok {
			fmt.Fprintf(&b, "  cleanup runs:  %s + %s per namespace taken (least squares over %d runs of cleanup_net)\n",
				dur(int64(fixed)), dur(int64(per)), cleanupCount(r.Netns))
		}
		if u := r.Unshare; u != nil {
			fmt.Fprintf(&b, "  unshared:      %d by one worker with lo up, nothing named: created in %s (%s of %d)\n",
				u.Namespaces, dur(u.CreatedNS), r.figure1(), u.Rounds)
		}
	case r.NetnsError != "":
		fmt.Fprintf(&b, "namespaces:      not measured: %s (the namespace costs keep their estimates; ndst predict --netns needs them)\n", r.NetnsError)
	}
	switch {
	case len(r.Workloads) > 0:
		b.WriteString("workloads:      ")
		for i, w := range r.Workloads {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %d: %s", w.What, w.Count, dur(w.MeasuredNS))
		}
		fmt.Fprintf(&b, " (%s of %d)\n", r.figuresOf(), r.Workloads[0].Rounds)
	case r.WorkloadsError != "":
		fmt.Fprintf(&b, "workloads:       not measured: %s (their costs keep their estimates)\n", r.WorkloadsError)
	}
	if r.Profile != "" {
		fmt.Fprintf(&b, "emulated as:     line %s, %s RCU (%s)\n", r.Profile, r.RCU, r.ProfileWhy)
	}
	b.WriteString(r.knobSummary())
	if len(r.Closure) > 0 {
		fmt.Fprintf(&b, "closure:         each figure, measured and emulated, is the %s of its runs: the rounds here, and the emulated kernel's runs started at %d evenly spaced phases of the tick (a real round starts wherever in the tick it happens to)\n",
			r.figure1(), ClosurePhases)
		b.WriteString("                ")
		for i, p := range r.Closure {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %d: measured %s, emulated %s (%+.1f%%)", p.What, p.Devices, dur(p.MeasuredNS), dur(p.EmulatedNS), 100*p.Error)
		}
		b.WriteString("\n")
		for _, p := range r.Closure {
			if p.What == NetnsReturned && math.Abs(p.Error) > ClosureLimit {
				fmt.Fprintf(&b, "note: the %d namespaces' deletes (%s measured) miss by %+.1f%%, shown and not gated: %s\n",
					p.Devices, dur(p.MeasuredNS), 100*p.Error, r.returnedMiss(p))
			}
		}
		b.WriteString(r.checkNote())
		b.WriteString(r.refitSummary())
		if ok, worst := r.Closed(); !ok {
			fmt.Fprintf(&b, "warning: the emulated kernel misses a calibration run by %.1f%% (more than %.0f%%); predictions from this table are not trustworthy. What misses:\n", 100*worst, 100*ClosureLimit)
			for _, m := range r.Misses() {
				fmt.Fprintf(&b, "  %s\n", m)
			}
			if how, busy := r.busy(); busy {
				fmt.Fprintf(&b, "warning: the machine was busy with other work (%s): the emulated kernel models an otherwise idle machine; calibrate again when it is quiet\n", how)
			}
		}
	}
	if len(r.LoadAvg) == 2 {
		fmt.Fprintf(&b, "load average:    %s before, %s after\n", r.LoadAvg[0], r.LoadAvg[1])
	}
	b.WriteString(r.otherNote())
	if r.Table != nil {
		b.WriteString("cost table (ns):")
		for _, op := range []costs.Op{costs.Register, costs.Unregister, costs.Free, costs.UnregisterBatch, costs.Syscall, costs.RequestGap} {
			if v, ok := r.Table.Costs[op]; ok || op != costs.RequestGap {
				fmt.Fprintf(&b, " %s %d", op, v)
			}
		}
		if HasNetnsCosts(r.Table) {
			for _, k := range []string{keyNetnsSetup, keyNetnsFiles, keyNetnsPut, keyNetnsExit, keyNetnsExitBatch} {
				if v, ok := r.Table.Extra[k]; ok {
					fmt.Fprintf(&b, " %s %d", strings.TrimSuffix(k, "_ns"), v)
				}
			}
		}
		b.WriteString("\n")
	}
	if r.Path != "" {
		fmt.Fprintf(&b, "written to %s (load it with --costs %s)\n", r.Path, r.Path)
	} else {
		b.WriteString("not saved: pass -o FILE to write the table for --costs\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// dur formats nanoseconds for people.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	}
}

// spreadLimit is the ratio of the slowest to the fastest run of one size
// above which calibration says the runs are too spread to trust. Where in
// the tick each run starts already spreads a 100-device delete by about
// 1.6x on a quiet machine (HZ=250: its waits end on ticks).
const spreadLimit = 2.0

// LoadAvg is the first three fields of /proc/loadavg ("" when unreadable).
func LoadAvg() string {
	b, err := safefile.ReadKernelFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// busiest is the largest one-minute load average recorded (0 if none).
func (r *Report) busiest() float64 {
	l := 0.0
	for _, s := range r.LoadAvg {
		if f := strings.Fields(s); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				l = max(l, v)
			}
		}
	}
	return l
}

// FiguresMidMean is Report.Figures of a calibration whose figures are
// MidMean.
const FiguresMidMean = "mean of the middle half"

// figureFunc is the statistic of a set of runs.
type figureFunc func([]int64) int64

// figure is the report's statistic (see Figures).
func (r *Report) figure() figureFunc {
	if r.Figures == FiguresMidMean {
		return MidMean
	}
	return median
}

// figure1 names one figure of the report in the summary.
func (r *Report) figure1() string {
	if r.Figures == FiguresMidMean {
		return FiguresMidMean
	}
	return "median"
}

// figuresOf names the report's figures in the summary.
func (r *Report) figuresOf() string {
	if r.Figures == FiguresMidMean {
		return "means of the middle half"
	}
	return "medians"
}

// MidMean is the figure of a set of runs, measured or emulated: the mean of
// their middle half (the interquartile mean; a quarter of the runs, rounded
// down, is dropped at each end). Like a median it ignores the odd slow
// round; unlike a median it moves smoothly when a cost moves some of the
// runs past a tick: a batched delete's waits end on ticks, so its runs
// over the start phases fall into groups a jiffy apart, and the median of
// such runs jumps by a jiffy when half of them change group, where the mean
// of the middle half moves by a jiffy over the half that changed.
func MidMean(ns []int64) int64 {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	q := len(s) / 4
	var sum float64
	for _, v := range s[q : len(s)-q] {
		sum += float64(v)
	}
	return int64(math.Round(sum / float64(len(s)-2*q)))
}
