package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

// Sample is one run of one cell: add N, then delete them all.
type Sample struct {
	Seed   uint64 `json:"seed"`
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
	// AddNS and DelNS are on the cell's clock: virtual time for the
	// emulated kernel, wall time for the real one.
	AddNS int64 `json:"add_ns"`
	DelNS int64 `json:"del_ns"`
	// AddWallNS and DelWallNS are what the run took on the wall clock.
	AddWallNS int64 `json:"add_wall_ns"`
	DelWallNS int64 `json:"del_wall_ns"`
	// Latency is the per-device teardown latency of the delete.
	Latency *ndst.Latency `json:"latency,omitempty"`
	// Counters are the delete's counters (grace periods, sleeps, ...).
	Counters map[string]int64 `json:"counters,omitempty"`
	// Phases is where the deleting task's time went (ndst.Result.Phases).
	Phases []ndst.Phase `json:"phases,omitempty"`
	// StoppedIn is the operation ("add" or "del") a livelock or an error
	// stopped.
	StoppedIn string `json:"stopped_in,omitempty"`

	// What the backend reported about itself and about failures; used for
	// the Record's fields and warnings, not exported per run.
	batched   bool
	host      hostInfo
	notes     []string
	kernelLog []string
}

type hostInfo struct {
	hz, cpus int
	preempt  string
	kind     string
}

// Progress, when set, is told after every run how many of total are done.
type Progress func(done, total int)

// Check validates the Spec (Validate) and then every distinct emulated
// configuration of the matrix by opening it, so that a combination the
// emulated kernel refuses (for example --rcu tiny with 2 CPUs) is reported
// before anything runs.
func (s *Spec) Check(ctx context.Context) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := s.checkMemory(); err != nil {
		return err
	}
	s.na = map[Cell]string{}
	sims, na := 0, 0
	for _, c := range s.Cells() {
		if c.Backend != "sim" {
			continue
		}
		sims++
		k := c
		k.Count, k.Batch = 0, ""
		if why, seen := s.na[k]; seen {
			if why != "" {
				na++
			}
			continue
		}
		b, err := emu.Open(ctx, s.emuConfig(c, s.Seed))
		if err != nil {
			// A combination the kernel line does not have (a wait loop
			// calling a primitive the line lacks, an RCU it did not
			// offer) is a cell of the matrix that does not apply, not a
			// reason to refuse the matrix.
			if !ndst.IsUsage(err) {
				return fmt.Errorf("cell %s: %w", c, err)
			}
			s.na[k] = err.Error()
			na++
			continue
		}
		s.na[k] = ""
		b.Close()
	}
	if sims > 0 && na == sims {
		for _, c := range s.Cells() {
			if c.Backend == "sim" {
				k := c
				k.Count, k.Batch = 0, ""
				return ndst.Usagef("no cell of the matrix applies; cell %s: %s", c, s.na[k])
			}
		}
	}
	return nil
}

// notApplicable says why a cell does not apply ("" when it does).
func (s *Spec) notApplicable(c Cell) string {
	k := c
	k.Count, k.Batch = 0, ""
	return s.na[k]
}

func (s *Spec) emuConfig(c Cell, seed uint64) emu.Config {
	strategy := c.Strategy
	if strategy == DefaultStrategy {
		strategy = "" // the line's own
	}
	return emu.Config{
		Profile: c.Profile, Strategy: strategy, HZ: c.HZ, CPUs: c.CPUs, Preempt: c.Preempt,
		RCU: cmp.Or(c.RCU, s.RCU), Seed: seed, Costs: s.Costs, Watchdog: s.Watchdog, Jitter: s.Jitter,
		NameAlloc: s.NameAlloc, Ephemeral: true, Params: mergeParams(s.Params, c.Params),
	}
}

// mergeParams is the Spec's knobs with the cell's over them.
func mergeParams(spec []string, cell string) []string {
	own := strings.Fields(cell)
	if len(own) == 0 {
		return spec
	}
	named := map[string]bool{}
	for _, p := range own {
		name, _, _ := strings.Cut(p, "=")
		named[name] = true
	}
	var out []string
	for _, p := range spec {
		if name, _, _ := strings.Cut(p, "="); !named[name] {
			out = append(out, p)
		}
	}
	return append(out, own...)
}

// Run checks the Spec, runs every cell Runs times and returns one Record per
// cell, in the order of Cells. Emulated runs go to Workers goroutines; the
// real-kernel runs follow, one at a time. It fails only on bad input, on an
// interruption (ctx) or when the real-kernel backend cannot be used; a
// livelocked or failed run is recorded in its cell.
func Run(ctx context.Context, s *Spec, progress Progress) (*Report, error) {
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	if s.Template == (ndst.Template{}) {
		s.Template, _ = ndst.ParseTemplate(ndst.DefaultTemplate)
	}
	cells := s.Cells()
	samples := make([][]Sample, len(cells))
	for i := range samples {
		samples[i] = make([]Sample, s.Runs)
	}
	total := len(cells) * s.Runs
	var (
		mu   sync.Mutex
		done int
	)
	tick := func() {
		if progress == nil {
			return
		}
		mu.Lock()
		done++
		d := done
		mu.Unlock()
		progress(d, total)
	}
	start := time.Now()
	defer relaxGC(s)()

	type job struct{ cell, run int }
	jobs := make(chan job)
	workers := s.workers()
	var wg sync.WaitGroup
	for range workers {
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			for j := range jobs {
				samples[j.cell][j.run] = s.runSim(ctx, cells[j.cell], s.Seed+uint64(j.run))
				tick()
			}
		})
	}
	var netlinkCells []int
feed:
	for i, c := range cells {
		if c.Backend != "sim" {
			netlinkCells = append(netlinkCells, i)
			continue
		}
		if s.notApplicable(c) != "" {
			samples[i] = nil
			for range s.Runs {
				tick()
			}
			continue
		}
		for r := range s.Runs {
			select {
			case jobs <- job{i, r}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench interrupted: %w", err)
	}
	if len(netlinkCells) > 0 {
		if err := s.runNetlink(ctx, cells, netlinkCells, samples, tick); err != nil {
			return nil, err
		}
	}
	rep := newReport(s, cells, samples)
	rep.WallNS = int64(time.Since(start))
	return rep, nil
}

// workers is the number of emulated runs at once: --jobs (default one per
// core), never more than MaxJobs nor than the matrix's emulated runs.
func (s *Spec) workers() int {
	w := s.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	runs := 0
	for _, c := range s.Cells() {
		if c.Backend == "sim" {
			runs += s.Runs
		}
	}
	return max(1, min(w, MaxJobs, runs))
}

// peakDevices is the most devices the emulated runs can hold at once, w at a
// time: the sum of the w largest runs (each cell's N, Runs times).
func (s *Spec) peakDevices(w int) int {
	var counts []int
	for _, c := range s.Cells() {
		if c.NetnsCell() {
			counts = append(counts, c.netnsDevices())
		} else if c.Backend == "sim" {
			counts = append(counts, c.Count)
		}
	}
	slices.SortFunc(counts, func(a, b int) int { return b - a })
	peak := 0
	for _, n := range counts {
		take := min(w, s.Runs)
		peak += take * n
		if w -= take; w == 0 {
			break
		}
	}
	return peak
}

// checkMemory refuses a matrix whose emulated runs, --jobs of them at once,
// would not fit in the memory available (unless Confirmed), with the
// estimate and what to change.
func (s *Spec) checkMemory() error {
	w := s.workers()
	peak := s.peakDevices(w)
	need, avail, ok := memoryEstimate(peak)
	if !ok || need < avail*8/10 || s.Confirmed {
		return nil
	}
	one, _, _ := memoryEstimate(s.peakDevices(1))
	return fmt.Errorf("the emulated runs need about %s of memory with %d running at once (--jobs %d: %d devices), "+
		"but only %s is available; use fewer --jobs (one at a time needs about %s), smaller --count, or --yes to run anyway",
		emu.HumanBytes(need), w, w, peak, emu.HumanBytes(avail), emu.HumanBytes(one))
}

// relaxGC lets the heap grow to gcPercent% between collections while the
// emulated runs are small beside the memory available: they allocate
// short-lived events by the million (a timer, a tick, a step of a spinning
// task), and with the default the collector is most of a run's CPU time.
// It returns the function that restores the setting.
func relaxGC(s *Spec) func() {
	need, avail, ok := memoryEstimate(s.peakDevices(s.workers()))
	if !ok || need*gcPercent/100 > avail/8 {
		return func() {}
	}
	old := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(old) }
}

const gcPercent = 400

// memoryEstimate is emu.MemoryEstimate; tests replace it.
var memoryEstimate = emu.MemoryEstimate

// runSim runs one emulated run: a fresh kernel with an empty namespace.
func (s *Spec) runSim(ctx context.Context, c Cell, seed uint64) Sample {
	if c.Workload != "" {
		return s.runWorkloadSim(ctx, c, seed)
	}
	if c.NetnsCell() {
		return s.runNetnsSim(ctx, c, seed)
	}
	smp := Sample{Seed: seed, Result: ndst.ResultOK}
	b, err := emu.Open(ctx, s.emuConfig(c, seed))
	if err != nil {
		return failed(smp, err)
	}
	defer b.Close()
	add, err := b.Add(ctx, ndst.AddRequest{Count: c.Count, Template: s.Template})
	if add != nil {
		smp.AddNS, smp.AddWallNS = deref(add.VirtualNS), add.WallNS
	}
	if err != nil {
		smp.StoppedIn = "add"
		return outcome(smp, add, err)
	}
	smp.StoppedIn = "del"
	del, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: c.OneByOne()})
	if del != nil {
		smp.DelNS, smp.DelWallNS = deref(del.VirtualNS), del.WallNS
		smp.Latency, smp.Counters, smp.batched = del.Latency, del.Counters, del.Batched
		smp.Phases = del.Phases
	}
	return outcome(smp, del, err)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func failed(smp Sample, err error) Sample {
	smp.Result, smp.Error = ndst.ResultError, err.Error()
	return smp
}

// outcome records how a run ended.
func outcome(smp Sample, r *ndst.Result, err error) Sample {
	if r != nil {
		smp.notes, smp.kernelLog = r.Notes, r.KernelLog
	}
	switch {
	case err == nil:
		smp.StoppedIn = ""
		return smp
	case errors.Is(err, ndst.ErrLivelock):
		smp.Result = ndst.ResultLivelock
		smp.Error = err.Error()
		if r != nil && r.Error != "" {
			smp.Error = r.Error
		}
		return smp
	}
	return failed(smp, err)
}

// runNetlink runs the real-kernel cells one run at a time in the throwaway
// namespace s.Netlink.Netns, which it creates and removes.
func (s *Spec) runNetlink(ctx context.Context, cells []Cell, idx []int, samples [][]Sample, tick func()) error {
	o := s.Netlink
	b, err := nlbackend.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("netlink backend: %w", err)
	}
	defer func() {
		b.Close()
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = nlbackend.Reset(rctx, o)
	}()
	if !b.Created() {
		return ndst.Usagef("network namespace %s already exists; the bench needs a throwaway namespace of its own (remove it with 'ndst --backend netlink --netns %s reset')", o.Netns, o.Netns)
	}
	for _, i := range idx {
		c := cells[i]
		for range s.Warmup {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("bench interrupted: %w", err)
			}
			_ = s.runReal(ctx, b, c, s.Seed)
		}
		for r := range s.Runs {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("bench interrupted: %w", err)
			}
			samples[i][r] = s.runReal(ctx, b, c, s.Seed+uint64(r))
			tick()
		}
	}
	return nil
}

// runReal adds c.Count links and deletes them all, on the real kernel.
func (s *Spec) runReal(ctx context.Context, b ndst.Backend, c Cell, seed uint64) Sample {
	smp := Sample{Seed: seed, Result: ndst.ResultOK}
	add, err := b.Add(ctx, ndst.AddRequest{Count: c.Count, Template: s.Template, Kind: s.Netlink.Kind})
	if add != nil {
		smp.AddNS, smp.AddWallNS = add.WallNS, add.WallNS
		smp.host.kind = add.Kind
	}
	if err != nil {
		smp.StoppedIn = "add"
		smp = outcome(smp, add, err)
		s.cleanup(ctx, b)
		return smp
	}
	smp.StoppedIn = "del"
	del, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: c.OneByOne()})
	if del != nil {
		smp.DelNS, smp.DelWallNS = del.WallNS, del.WallNS
		smp.Latency, smp.Counters, smp.batched = del.Latency, del.Counters, del.Batched
		smp.host.hz, smp.host.cpus = derefInt(del.HZ), derefInt(del.CPUs)
		if del.Preempt != nil {
			smp.host.preempt = *del.Preempt
		}
	}
	if err != nil {
		s.cleanup(ctx, b)
	}
	return outcome(smp, del, err)
}

// cleanup deletes whatever a failed run left, so the next run starts empty.
func (s *Spec) cleanup(ctx context.Context, b ndst.Backend) {
	_, _ = b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32})
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
