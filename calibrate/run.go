package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/ndst/nlbackend/membarrier"
	"github.com/ndst-project/ndst/safefile"
)

// Run calibrates the host (see the package doc). It needs the privileges of
// the netlink backend; the throwaway namespace is removed on every path.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	cpu0 := sampleCPU()
	if o.Netns == "" {
		o.Netns = fmt.Sprintf("ndst-calibrate-%d", os.Getpid())
	}
	progress := func(s string) {
		if o.Progress != nil {
			o.Progress(s)
		}
	}
	nso := nlbackend.Options{Netns: o.Netns, Kind: o.Kind, KindExplicit: o.KindExplicit, Notef: o.Notef}
	if err := nlbackend.ValidateNetns(o.Netns); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join("/run/netns", o.Netns)); err == nil {
		return nil, fmt.Errorf("calibrate: namespace %s already exists; calibration needs a throwaway namespace of its own", o.Netns)
	}
	b, err := nlbackend.Open(ctx, nso)
	if err != nil {
		return nil, err
	}
	defer func() {
		b.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		nso.Notef = nil
		_ = nlbackend.Reset(cctx, nso)
	}()

	r := &Report{Host: b.Host(), Knobs: readKnobs(), Figures: FiguresMidMean}
	r.HZ = r.Host.HZ

	progress("grace periods (membarrier)")
	if err := r.measureGP(ctx, o.GPSamples); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.GPError = err.Error()
	}

	progress("stalls (a pinned thread spinning on each CPU)")
	if err := r.measureStalls(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.StallsError = err.Error()
	}

	progress("timer lateness (a sleep to a deadline on each idle CPU)")
	if err := r.measureTimerLateness(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.TimerLatenessError = err.Error()
	}

	progress("netlink round trips")
	rts, err := b.RoundTrips(o.RoundTrips)
	if err != nil {
		return nil, err
	}
	r.RoundTripNS = median(toNS(rts))
	progress("gaps between requests (rejected deletes)")
	gaps, err := b.RequestGaps(ctx, o.Gaps)
	if err != nil {
		return nil, err
	}
	r.Gap = spreadOf(gaps)

	progress("creates and batched deletes")
	r.LoadAvg = append(r.LoadAvg, LoadAvg())
	if err := r.measureNetlink(ctx, b, o); err != nil {
		return nil, err
	}
	progress("one-device deletes (the sending thread's CPU time)")
	if err := r.measureRequests(ctx, b, o); err != nil {
		return nil, err
	}
	if o.Check > 0 {
		progress(fmt.Sprintf("a batched delete of %d devices (a check, not fitted)", o.Check))
		if err := r.measureCheck(ctx, b, o); err != nil {
			return nil, err
		}
	}
	if !o.NoNetns {
		progress("namespaces: create with lo up, delete all at once")
		if err := r.measureNetns(ctx, b); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.NetnsError = err.Error()
		}
		r.NetnsFiles = netnsFilesNote()
		if r.NetnsError == "" {
			progress("namespaces: unshared by one worker with lo up, nothing named")
			if err := r.measureUnshare(ctx, b); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				r.NetnsError = err.Error()
				r.Netns = nil
			}
		}
	}
	if !o.NoWorkloads {
		progress("workloads: devices with addresses, macvlans and VLANs, namespaces with a veth pair")
		if err := r.measureWorkloads(ctx, b); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.WorkloadsError = err.Error()
		}
	}
	r.LoadAvg = append(r.LoadAvg, LoadAvg())
	if share, steal, ok := otherShare(cpu0, sampleCPU()); ok {
		r.OtherCPU, r.StolenCPU = &share, &steal
	}
	if err := r.chooseLine(); err != nil {
		return nil, err
	}
	r.buildTable(time.Now())
	progress("the machine's other work's RCU callbacks (emulated membarrier)")
	if err := r.solveOtherWork(ctx); err != nil {
		return nil, err
	}
	progress("fitting the emulated kernel to the runs (closure)")
	if err := r.fit(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func toNS(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = int64(d)
	}
	return out
}

// measureGP times n membarrier(GLOBAL) calls spaced by random pauses of up
// to two ticks, so that they start at every phase of the tick, with the Go
// runtime kept from waking the idle CPUs while they block (membarrier.Probe).
func (r *Report) measureGP(ctx context.Context, n int) error {
	if r.Host.CPUs == 1 {
		return errors.New("one CPU online: membarrier does not wait for a grace period")
	}
	tick := int64(4 * time.Millisecond)
	if r.HZ > 0 {
		tick = int64(time.Second) / int64(r.HZ)
	}
	starts, ends, err := membarrier.Probe(ctx, n, func() time.Duration { return time.Duration(rand.Int64N(2 * tick)) })
	if err != nil {
		return err
	}
	lats := make([]int64, len(starts))
	for i := range starts {
		lats[i] = ends[i] - starts[i]
	}
	r.GP = distribution(lats)
	r.HZMeasured, r.TickAlignment = measureHZ(ends)
	if r.HZ == 0 {
		r.HZ = r.HZMeasured
	}
	if r.HZ > 0 {
		period := int64(time.Second) / int64(r.HZ)
		align, origin := concentration(ends, period)
		if r.HZMeasured != r.HZ {
			r.TickAlignment = align
		}
		r.GPTicks = float64(r.GP.P50NS) / float64(period)
		r.GPByPhase = phaseBuckets(starts, lats, period, origin, 4)
	}
	return nil
}

// measureNetlink creates and batch-deletes Small and Large devices, Rounds
// times each, alternating.
func (r *Report) measureNetlink(ctx context.Context, b *nlbackend.Backend, o Options) error {
	tmpl, err := ndst.ParseTemplate("cal%d")
	if err != nil {
		return err
	}
	kind := o.Kind
	runs := map[int][]int64{}
	cpuRuns := map[int][]int64{}
	var createMedians []int64
	// One unmeasured round first: the first creates and deletes of a
	// fresh namespace (and, in a VM under software emulation, the first
	// runs of each kernel path) are slower than the steady state that
	// every later command sees.
	// Where either size's runs spread more than where in the tick each
	// starts explains (spreadLimit), as many rounds again are measured:
	// the fit is on their figures, and the figures of so spread runs move
	// by more than the closure limit from one calibration to the next (the
	// 100-device medians of five calibrations on this project's host, at
	// load 1.6-2.6, were 27.3 to 31.6 ms).
	rounds := o.Rounds
	for round := -1; round < rounds; round++ {
		for _, size := range []int{o.Large, o.Small} {
			if err := ctx.Err(); err != nil {
				return err
			}
			if kind == "veth" && size%2 != 0 {
				size++
			}
			a, err := b.Add(ctx, ndst.AddRequest{Count: size, Template: tmpl, Kind: kind, OneByOne: true}) // per-device create times
			if err != nil {
				return fmt.Errorf("calibrate: create %d devices: %w", size, err)
			}
			r.Kind = a.Kind
			kind = a.Kind // after a dummy fallback, stay on ifb quietly
			d, err := deleteInOne(ctx, b, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}, size, "batched delete")
			if err != nil {
				return err
			}
			if round < 0 {
				continue // the warm-up round
			}
			if a.Latency != nil {
				createMedians = append(createMedians, a.Latency.MedianNS)
			}
			r.Creates += a.Count
			runs[size] = append(runs[size], d.Counters["group_delete_ns"])
			cpuRuns[size] = append(cpuRuns[size], d.Counters["group_delete_cpu_ns"])
		}
		if round == o.Rounds-1 {
			for _, r := range runs {
				if spread(r) > spreadLimit {
					rounds = 2 * o.Rounds
				}
			}
		}
	}
	r.CreateNS = MidMean(createMedians)
	for _, size := range []int{o.Small, o.Large} {
		if kind == "veth" && size%2 != 0 {
			size++
		}
		r.Batches = append(r.Batches, BatchPoint{Devices: size, P50NS: median(runs[size]), MidMeanNS: MidMean(runs[size]),
			RunsNS: runs[size], CPUP50NS: median(cpuRuns[size])})
	}
	s, l := r.Batches[0], r.Batches[1]
	r.batchLine()
	r.CPUSlopeNS, r.CPUInterceptNS = line(s.Devices, s.CPUP50NS, l.Devices, l.CPUP50NS)
	return nil
}

// deleteInOne sends req, a delete of n devices, and fails unless the
// kernel removed all n in the one request that a batched delete is (none
// moved to one-by-one deletes by the backend, no second request): every
// batched delete that calibrate times is one.
func deleteInOne(ctx context.Context, b *nlbackend.Backend, req ndst.DelRequest, n int, what string) (*ndst.Result, error) {
	d, err := b.Del(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s of %d devices: %w", what, n, err)
	}
	if d.Count != n || d.Counters["moved"] != 0 || d.Counters["netlink_requests"] != 1 {
		return nil, fmt.Errorf("calibrate: %s of %d devices removed %d in %d request(s) (moved %d); want all in one request",
			what, n, d.Count, d.Counters["netlink_requests"], d.Counters["moved"])
	}
	return d, nil
}

// measureRequests creates one device (a veth pair for veth) and deletes it
// in one request, Requests times after a warm-up, and keeps the CPU time
// of each delete in the thread that sent it (RequestCPU). In the sender's
// context the kernel handles the whole RTM_DELLINK (6.1 and 6.18
// net/core/rtnetlink.c: rtnl_dellink, here through rtnl_group_dellink,
// whose two walks of the namespace's few devices are all that differs
// from a delete by ifindex): rtnl_lock, unregister_netdevice_many (the
// device's work, flush_all_backlogs, which queues no work for a device
// without packets, and two synchronize_net()s), then rtnl_unlock's
// netdev_run_todo (rcu_barrier(), the free) and the acknowledgement. So
// its CPU time is a one-by-one delete's CPU per request, waits excluded;
// its wall time, which is what a prediction of one-by-one deletes must
// give, is not kept.
func (r *Report) measureRequests(ctx context.Context, b *nlbackend.Backend, o Options) error {
	tmpl, err := ndst.ParseTemplate("cal%d")
	if err != nil {
		return err
	}
	n := 1
	if r.Kind == "veth" {
		n = 2
	}
	var cpu []int64
	for i := -1; i < o.Requests; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := b.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl, Kind: r.Kind}); err != nil {
			return fmt.Errorf("calibrate: create %d device(s): %w", n, err)
		}
		d, err := deleteInOne(ctx, b, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}, n, "delete")
		if err != nil {
			return err
		}
		if i >= 0 {
			cpu = append(cpu, d.Counters["group_delete_cpu_ns"])
		}
	}
	q := spreadOf(cpu)
	r.Request = &RequestCPU{Devices: n, RunsNS: cpu, MidMeanNS: q.MidMeanNS, Q1NS: q.Q1NS, Q3NS: q.Q3NS}
	return nil
}

// spread is the ratio of the slowest to the fastest of runs (0 without two).
func spread(runs []int64) float64 {
	if len(runs) < 2 || slices.Min(runs) <= 0 {
		return 0
	}
	return float64(slices.Max(runs)) / float64(slices.Min(runs))
}

// line fits y = intercept + slope*x through two points, both floored at 0.
func line(x0 int, y0 int64, x1 int, y1 int64) (slope, intercept int64) {
	slope = max(0, (y1-y0)/int64(x1-x0))
	return slope, max(0, y0-slope*int64(x0))
}

// Save writes the table to path atomically (a temporary file renamed over
// it) and checks that costs.Load reads it back.
func Save(t *costs.Table, path string) error {
	if err := t.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	// Replace refuses a link, a directory or a device at path: renaming
	// over one would replace it with this file.
	if err := safefile.Replace(path, 0o644, append(data, '\n'), &safefile.ReplaceOptions{TempPattern: ".ndst-costs-*"}); err != nil {
		return fmt.Errorf("write cost table %s: %w", path, err)
	}
	if _, err := costs.Load(path); err != nil {
		return fmt.Errorf("the written table does not load back: %w", err)
	}
	return nil
}
