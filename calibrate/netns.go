package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/netdev"
)

// Namespace calibration. Three per-namespace CPU costs of the emulated
// kernel have no netlink operation of their own to be timed by: setup_net
// with lo set up (netns_setup_ns), the delete's own work besides the grace
// period its umount waits for (netns_put_ns: umount_tree, the final mntput,
// unlinking the bind mount), and a namespace's pernet exit methods in
// cleanup_net (netns_exit_ns). Each is solved so that the emulated kernel
// reproduces one measured time of namespaces created with lo up and deleted
// all at once, at two sizes:
//
//   - setup from the time to create them, and put from when the last
//     delete returned: both times are about linear in their cost (the
//     creates and the deletes run one after another on one task), and one
//     cost serves both sizes, so each is set where the two sizes' relative
//     errors balance;
//   - exit from the cleanup runs themselves: the real backend sees each
//     cleanup_net run start and end (workqueue tracepoints), so every run
//     of every round gives its size and duration, and the emulated runs'
//     time per namespace is matched to the measured one. That holds
//     whatever batches the deletes formed (they form differently when the
//     deletes are slow); without tracepoints, the larger size's
//     cleanup-done time is matched instead. With the runs, a fourth cost
//     is fitted to their line's fixed part: what a run takes once beyond
//     the model's waits (netns_exit_batch_ns, charged as the cleanup
//     worker's CPU: the walks of the pernet operations and their
//     exit_batch methods, and whatever of the host's waits is longer than
//     the model's, which the fit cannot tell apart).
//
// Everything else in those times is the model's mechanism: the umount's
// expedited grace period, cleanup_net's grace period, its rcu_barrier()s, the
// batches the cleanup worker forms while the deletes are still running. The
// sizes are not the ones `ndst predict --netns` checks, and no veth pair nor
// one-at-a-time delete is calibrated.

// NetnsPoint is one namespace size: the rounds' figures (MidMean).
type NetnsPoint struct {
	Namespaces int   `json:"namespaces"`
	AddNS      int64 `json:"add_ns"`      // creating them, lo up
	ReturnedNS int64 `json:"returned_ns"` // the last delete returned
	DoneNS     int64 `json:"done_ns"`     // the cleanup of the last one was done
	Rounds     int   `json:"rounds"`
	// The rounds' times, in the order measured.
	AddRunsNS      []int64 `json:"add_runs_ns,omitempty"`
	ReturnedRunsNS []int64 `json:"returned_runs_ns,omitempty"`
	DoneRunsNS     []int64 `json:"done_runs_ns,omitempty"`
	// Cleanups is every cleanup_net run of every round: how many
	// namespaces it took and how long it ran.
	Cleanups []CleanupRun `json:"cleanup_runs,omitempty"`
}

// CleanupRun is one cleanup_net run.
type CleanupRun struct {
	Namespaces int   `json:"namespaces"`
	NS         int64 `json:"ns"`
}

// cleanupLine is the least-squares line through cleanup runs: a run's
// fixed time (its grace period and rcu_barrier()s) and its time per
// namespace it takes. ok is false without two distinct sizes.
func cleanupLine(pts []NetnsPoint) (fixed, per float64, ok bool) {
	var xs, ys []float64
	for _, p := range pts {
		for _, c := range p.Cleanups {
			xs = append(xs, float64(c.Namespaces))
			ys = append(ys, float64(c.NS))
		}
	}
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if n < 2 || den == 0 {
		return 0, 0, false
	}
	per = (n*sxy - sx*sy) / den
	return (sy - per*sx) / n, per, true
}

// cleanups pairs a delete's cleanup runs with their sizes.
func cleanups(t *ndst.NetnsTimes) []CleanupRun {
	var out []CleanupRun
	for i, n := range t.BatchSizes {
		if i < len(t.BatchNS) && t.BatchNS[i] > 0 {
			out = append(out, CleanupRun{Namespaces: n, NS: t.BatchNS[i]})
		}
	}
	return out
}

// NetnsReturned names the closure point of the deletes' own time.
const NetnsReturned = "netns delete returned"

// Namespace sizes and rounds of a calibration. A cleanup's time spreads
// over its waits, which end on ticks: on this project's 2-CPU host the
// cleanup done of 40 namespaces ranged by 15-20% within a calibration
// (79-96 ms), and with five rounds the figure of eight calibrations in a
// row missed the closure limit on it by -8.7% to +8.1%, about its mean of
// 0. Ten rounds halve the variance of the median they give (its spread
// shrinks by about 1/sqrt(2)).
const (
	netnsSmall, netnsLarge = 40, 200
	netnsRounds            = 10
)

// measureNetns creates netnsSmall and netnsLarge namespaces with lo up and
// deletes them all at once, netnsRounds times each after a warm-up round.
func (r *Report) measureNetns(ctx context.Context, b *nlbackend.Backend) (err error) {
	tmpl, err := ndst.ParseNetnsTemplate(fmt.Sprintf("ndst-cal%d-%%d", os.Getpid()))
	if err != nil {
		return err
	}
	// Whatever an interrupted or failed run left (a netns add stopped
	// half way, a delete that did not finish) goes on every way out.
	defer func() {
		if _, derr := b.DropNamespaces(tmpl); derr != nil && err == nil {
			err = fmt.Errorf("remove the namespaces an unfinished run left: %w", derr)
		}
	}()
	runs := map[int][3][]int64{}
	cl := map[int][]CleanupRun{}
	for round := -1; round < netnsRounds; round++ {
		for _, n := range []int{netnsLarge, netnsSmall} {
			if err := ctx.Err(); err != nil {
				return err
			}
			a, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, Template: tmpl, LoUp: true})
			if err != nil {
				return fmt.Errorf("create %d namespaces: %w", n, err)
			}
			d, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: n, Template: tmpl})
			if err != nil {
				return fmt.Errorf("delete %d namespaces: %w", n, err)
			}
			if a.Count != n || d.Count != n || d.Netns == nil || d.Netns.DoneNS == nil {
				return fmt.Errorf("created %d and deleted %d of %d namespaces, or the cleanup's end was not observed", a.Count, d.Count, n)
			}
			if round < 0 {
				continue
			}
			cl[n] = append(cl[n], cleanups(d.Netns)...)
			x := runs[n]
			x[0] = append(x[0], a.WallNS)
			x[1] = append(x[1], d.Netns.ReturnedNS)
			x[2] = append(x[2], *d.Netns.DoneNS)
			runs[n] = x
		}
	}
	r.Netns = nil
	for _, n := range []int{netnsSmall, netnsLarge} {
		x := runs[n]
		r.Netns = append(r.Netns, NetnsPoint{Namespaces: n, AddNS: MidMean(x[0]), ReturnedNS: MidMean(x[1]),
			DoneNS: MidMean(x[2]), Rounds: len(x[0]), AddRunsNS: x[0], ReturnedRunsNS: x[1], DoneRunsNS: x[2], Cleanups: cl[n]})
	}
	return nil
}

// emulatedNetns runs the namespace calibration's runs on the emulated
// kernel with table t: for each size, the figures (fig) over ClosurePhases
// start phases.
func emulatedNetns(ctx context.Context, base emu.Config, t *costs.Table, sizes []int, fig figureFunc) ([]NetnsPoint, error) {
	tmpl := ndst.MustNetnsTemplate(ndst.DefaultNetnsTemplate)
	out := make([]NetnsPoint, len(sizes))
	for i, n := range sizes {
		type run struct {
			add, ret, done int64
			cl             []CleanupRun
		}
		runs, err := overPhases(ctx, base, t, func(b *emu.Backend) (run, error) {
			a, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, Template: tmpl, LoUp: true})
			if err != nil {
				return run{}, err
			}
			d, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: n, Template: tmpl})
			if err != nil {
				return run{}, err
			}
			if d.Netns == nil || d.Netns.DoneNS == nil {
				return run{}, fmt.Errorf("emulated delete of %d namespaces: no cleanup end", n)
			}
			return run{*a.VirtualNS, d.Netns.ReturnedNS, *d.Netns.DoneNS, cleanups(d.Netns)}, nil
		})
		if err != nil {
			return nil, err
		}
		var add, ret, done []int64
		var cl []CleanupRun
		for _, r := range runs {
			add, ret, done = append(add, r.add), append(ret, r.ret), append(done, r.done)
			cl = append(cl, r.cl...)
		}
		out[i] = NetnsPoint{Namespaces: n, AddNS: fig(add), ReturnedNS: fig(ret), DoneNS: fig(done), Rounds: ClosurePhases, Cleanups: cl}
	}
	return out, nil
}

// Namespace cost keys of a table's extra map (netdev.NetnsCostsOf reads them).
const (
	keyNetnsSetup = "netns_setup_ns"
	keyNetnsPut   = "netns_put_ns"
	keyNetnsExit  = "netns_exit_ns"
	// keyNetnsExitBatch is a cleanup_net run's own cost, once a run
	// (netdev.NetnsCosts.ExitBatch), fitted with the cleanup runs.
	keyNetnsExitBatch = "netns_exit_batch_ns"
	// keyNetnsFiles is measured since the unshares (unshare.go): naming a
	// namespace, beyond the kernel's create (netdev/netnsfiles.go).
	keyNetnsFiles = "netns_files_ns"
)

// fitNetns solves the three namespace costs (see above) on r.Table, and
// with the unshares measured the fourth, netns_files_ns (unshare.go).
func (r *Report) fitNetns(ctx context.Context, base emu.Config) error {
	if len(r.Netns) < 2 {
		return nil
	}
	t := r.Table
	sizes := make([]int, len(r.Netns))
	for i, p := range r.Netns {
		sizes[i] = p.Namespaces
	}
	large := len(sizes) - 1
	m := r.Netns[large]
	n := int64(sizes[large])
	run := func(sizes []int) ([]NetnsPoint, error) {
		pts, err := emulatedNetns(ctx, base, t, sizes, r.figure())
		if err != nil {
			return nil, fmt.Errorf("calibrate: namespace closure: %w", err)
		}
		r.FitIterations++
		return pts, nil
	}
	// Start from zero exit cost, so that the cleanup does not delay the
	// fits of setup and put through RTNL.
	t.Extra[keyNetnsExit] = 0
	for _, k := range []string{keyNetnsSetup, keyNetnsPut} {
		if _, ok := t.Extra[k]; !ok {
			t.Extra[k] = 0
		}
	}
	// The named creates' own cost: with the unshares measured, setup is
	// theirs (unshare.go) and the creates fit netns_files_ns, the naming
	// they add; a report from before them fits setup to the creates, which
	// then holds the naming too, and has no files cost.
	createKey := keyNetnsSetup
	delete(t.Extra, keyNetnsFiles)
	if r.Unshare != nil {
		if err := r.fitSetupToUnshare(ctx, base); err != nil {
			return err
		}
		createKey = keyNetnsFiles
		t.Extra[keyNetnsFiles] = 0
	}
	// The create cost and put: each time is about linear in its cost. One
	// cost serves both sizes, so each step moves it to where the relative
	// errors of the two sizes balance (the smallest worst error a single
	// per-namespace cost allows). The slope is one per namespace for the
	// deletes, which one task sends, and less for the creates, which the
	// backend makes on a worker per CPU: after a first step with a slope
	// of one, each step takes the slope its last two steps showed.
	type balancer struct {
		meas     func(NetnsPoint) int64
		c0, e0   float64
		havePrev bool
	}
	step := func(b *balancer, c int64, pts []NetnsPoint) int64 {
		var sumErr, sumSlope float64
		for i, p := range pts {
			mv := float64(b.meas(r.Netns[i]))
			sumErr += (float64(b.meas(p)) - mv) / mv
			sumSlope += float64(p.Namespaces) / mv
		}
		if b.havePrev && float64(c) != b.c0 {
			if s := (sumErr - b.e0) / (float64(c) - b.c0); s > 0 && s <= sumSlope {
				sumSlope = s
			}
		}
		b.c0, b.e0, b.havePrev = float64(c), sumErr, true
		return max(0, c-int64(math.Round(sumErr/sumSlope)))
	}
	add := func(p NetnsPoint) int64 { return p.AddNS }
	ret := func(p NetnsPoint) int64 { return p.ReturnedNS }
	bc, bp := &balancer{meas: add}, &balancer{meas: ret}
	for range 6 {
		pts, err := run(sizes)
		if err != nil {
			return err
		}
		s0, p0 := t.Extra[createKey], t.Extra[keyNetnsPut]
		t.Extra[createKey] = step(bc, s0, pts)
		t.Extra[keyNetnsPut] = step(bp, p0, pts)
		if abs(t.Extra[createKey]-s0) < 1000 && abs(t.Extra[keyNetnsPut]-p0) < 1000 {
			break
		}
	}
	// Exit: the per-namespace time of a cleanup run, measured over every
	// run of the calibration (each run's start and end on the real kernel,
	// whatever batches the deletes happened to form), is matched by the
	// emulated runs' by bisection (the emulated slope grows with the cost,
	// in steps, as the runs' waits end at ticks).
	// Without run times (no workqueue tracepoints), the larger size's
	// cleanup-done time is matched instead, by bisection.
	if mFixed, mPer, ok := cleanupLine(r.Netns); ok {
		r.NetnsFit = "cleanup runs"
		fitPer := func() error {
			lo, hi := int64(0), max(int64(1000), 2*int64(mPer))
			for range 16 {
				mid := (lo + hi) / 2
				t.Extra[keyNetnsExit] = mid
				pts, err := run(sizes)
				if err != nil {
					return err
				}
				if _, ePer, ok := cleanupLine(pts); ok && ePer < mPer {
					lo = mid
				} else {
					hi = mid
				}
			}
			t.Extra[keyNetnsExit] = (lo + hi) / 2
			return nil
		}
		t.Extra[keyNetnsExitBatch] = 0
		if err := fitPer(); err != nil {
			return err
		}
		// The runs' fixed part beyond the model's waits: what a run
		// costs once (netns_exit_batch_ns), where the emulated line's
		// intercept meets the measured one. The emulated intercept is a
		// step function of it (the waits end on ticks: a step of a run's
		// own cost can move the intercept by most of a tick), so the
		// cost is bracketed and bisected, and the one tried whose
		// intercept came nearest the measured is kept; then the time a
		// namespace again, which a run's own cost barely moves.
		if err := fitExitBatch(t, mFixed, func() (float64, error) {
			pts, err := run(sizes)
			if err != nil {
				return 0, err
			}
			eFixed, _, ok := cleanupLine(pts)
			if !ok {
				return 0, errNoCleanupLine
			}
			return mFixed - eFixed, nil
		}); err != nil {
			return err
		}
		if err := fitPer(); err != nil {
			return err
		}
	} else {
		r.NetnsFit = "cleanup done"
		lo, hi := int64(0), max(int64(1000), m.DoneNS/n*2)
		for range 16 {
			mid := (lo + hi) / 2
			t.Extra[keyNetnsExit] = mid
			e, err := run(sizes[large:])
			if err != nil {
				return err
			}
			if e[0].DoneNS < m.DoneNS {
				lo = mid
			} else {
				hi = mid
			}
		}
		t.Extra[keyNetnsExit] = (lo + hi) / 2
	}
	if r.Unshare != nil {
		// The unshares again, beside the cleanup's exit cost as fitted,
		// and the naming on top of them.
		if err := r.fitSetupToUnshare(ctx, base); err != nil {
			return err
		}
		bf := &balancer{meas: add}
		for range 3 {
			pts, err := run(sizes)
			if err != nil {
				return err
			}
			f0 := t.Extra[keyNetnsFiles]
			t.Extra[keyNetnsFiles] = step(bf, f0, pts)
			if abs(t.Extra[keyNetnsFiles]-f0) < 1000 {
				break
			}
		}
	}
	for _, p := range r.Netns {
		t.Extra[fmt.Sprintf("netns_add_%d_ns", p.Namespaces)] = p.AddNS
		t.Extra[fmt.Sprintf("netns_returned_%d_ns", p.Namespaces)] = p.ReturnedNS
		t.Extra[fmt.Sprintf("netns_done_%d_ns", p.Namespaces)] = p.DoneNS
	}
	return nil
}

// errNoCleanupLine: the emulated runs gave no least-squares line (one size
// of run only).
var errNoCleanupLine = errors.New("calibrate: the emulated cleanup runs give no line")

// exitBatchSteps is how many bisection steps fitExitBatch takes once it
// has bracketed the measured intercept.
const exitBatchSteps = 6

// fitExitBatch sets netns_exit_batch_ns to the cost, at least 0, whose
// emulated cleanup-run intercept comes nearest the measured one: short(),
// run with the table as it is, is the measured intercept less the emulated
// one. It starts from 0, steps by the shortfall until the emulated
// intercept reaches the measured one (bracketing it), then bisects the
// bracket, and keeps the best cost tried.
func fitExitBatch(t *costs.Table, mFixed float64, short func() (float64, error)) error {
	bestB, bestD := int64(0), math.Inf(1)
	try := func(b int64) (float64, error) {
		t.Extra[keyNetnsExitBatch] = b
		d, err := short()
		if err != nil {
			return 0, err
		}
		if math.Abs(d) < bestD {
			bestB, bestD = b, math.Abs(d)
		}
		return d, nil
	}
	defer func() { t.Extra[keyNetnsExitBatch] = bestB }()
	d, err := try(0)
	if err != nil || d <= 0 {
		return ignoreNoLine(err) // the model's waits alone reach the host's
	}
	lo, hi := int64(0), int64(-1)
	for range 4 {
		next := lo + max(int64(math.Round(d)), 100_000)
		if next > int64(mFixed) {
			next = int64(mFixed) // a run's own cost is less than its whole fixed part
		}
		if next <= lo {
			break
		}
		if d, err = try(next); err != nil {
			return ignoreNoLine(err)
		}
		if d <= 0 {
			hi = next
			break
		}
		lo = next
	}
	if hi < 0 {
		return nil
	}
	for range exitBatchSteps {
		if hi-lo < 50_000 {
			break
		}
		mid := (lo + hi) / 2
		d, err := try(mid)
		if err != nil {
			return ignoreNoLine(err)
		}
		if d > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return nil
}

// ignoreNoLine: without an emulated line the batch cost stays where the
// last line left it.
func ignoreNoLine(err error) error {
	if errors.Is(err, errNoCleanupLine) {
		return nil
	}
	return err
}

// netnsClosure adds the namespace runs to the closure.
func (r *Report) netnsClosure(ctx context.Context, base emu.Config) error {
	if len(r.Netns) == 0 {
		return nil
	}
	sizes := make([]int, len(r.Netns))
	for i, p := range r.Netns {
		sizes[i] = p.Namespaces
	}
	e, err := emulatedNetns(ctx, base, r.Table, sizes, r.figure())
	if err != nil {
		return fmt.Errorf("calibrate: namespace closure: %w", err)
	}
	for i, m := range r.Netns {
		for _, x := range []struct {
			what string
			m, e int64
		}{{"netns add", m.AddNS, e[i].AddNS}, {NetnsReturned, m.ReturnedNS, e[i].ReturnedNS},
			{"netns cleanup done", m.DoneNS, e[i].DoneNS}} {
			p := ClosurePoint{What: x.what, Devices: m.Namespaces, MeasuredNS: x.m, EmulatedNS: x.e}
			if x.m > 0 {
				p.Error = float64(x.e-x.m) / float64(x.m)
			}
			r.Closure = append(r.Closure, p)
		}
	}
	r.NetnsCleanupLines = nil
	if mf, mp, ok := cleanupLine(r.Netns); ok {
		if ef, ep, ok := cleanupLine(e); ok {
			r.NetnsCleanupLines = &CleanupLines{MeasuredFixedNS: int64(mf), MeasuredPerNS: int64(mp), EmulatedFixedNS: int64(ef), EmulatedPerNS: int64(ep)}
		}
	}
	return nil
}

// CleanupLines are the least-squares lines through the measured and the
// emulated cleanup_net runs of a calibration (cleanupLine): a run's fixed
// time and its time a namespace taken.
type CleanupLines struct {
	MeasuredFixedNS int64 `json:"measured_fixed_ns"`
	MeasuredPerNS   int64 `json:"measured_per_namespace_ns"`
	EmulatedFixedNS int64 `json:"emulated_fixed_ns"`
	EmulatedPerNS   int64 `json:"emulated_per_namespace_ns"`
}

// cleanupMiss says, from the cleanup runs' lines and the deletes' own
// closure, what of the cleanup-done time of n namespaces differs.
func (r *Report) cleanupMiss(n int) string {
	m := "the cleanup_net runs (netns_exit_ns a namespace and netns_exit_batch_ns a run, fitted to the runs' own durations, with the model's batching, its grace period and two rcu_barrier()s) do not reproduce this size"
	l := r.NetnsCleanupLines
	if l == nil {
		return m + ": the namespaces the runs took, or their waits, differ from the model's"
	}
	m += fmt.Sprintf(": a run's fixed part (least squares over every run of both sizes) is %s here and %s in the model, its time a namespace %s and %s",
		dur(l.MeasuredFixedNS), dur(l.EmulatedFixedNS), dur(l.MeasuredPerNS), dur(l.EmulatedPerNS))
	if d := l.MeasuredFixedNS - l.EmulatedFixedNS; l.MeasuredFixedNS > 0 && math.Abs(float64(d)) > 0.05*float64(l.MeasuredFixedNS) {
		var batch int64
		if r.Table != nil {
			batch = r.Table.Extra[keyNetnsExitBatch]
		}
		if d < 0 && batch == 0 {
			m += fmt.Sprintf(" (the model's fixed part is its waits alone, netns_exit_batch_ns at its floor of 0, and they take %s longer than the host's whole fixed part: the host's grace period and rcu_barrier()s in cleanup_net are shorter than the model's; a grace period here took %s)", dur(abs(d)), r.gpNote())
		} else {
			m += fmt.Sprintf(" (the model's fixed part is its waits, which end on ticks, and netns_exit_batch_ns %s fitted to the host's: a run's own cost moves it in steps of a tick, and the last step left it %s off; a grace period here took %s)", dur(batch), dur(abs(d)), r.gpNote())
		}
	}
	for _, p := range r.Closure {
		if p.What == NetnsReturned && p.Devices == n && math.Abs(p.Error) > ClosureLimit {
			m += fmt.Sprintf("; and the deletes, which the runs take their batches from, return %+.0f%% off (%s measured): %s", 100*p.Error, dur(p.MeasuredNS), r.returnedMiss(p))
		}
	}
	return m
}

// returnedMiss says, from the fit, why the deletes' own time p (the last
// delete's return) misses. Each emulated delete is its umount's expedited
// grace period (netdev.Namespaces.Unmount; on lines with the expedited
// worker thread, 6.12 on, that worker is woken onto an idle CPU and wakes
// the caller back: two wake-ups of an idle CPU at the calibrated median
// when the other CPU is idle) plus netns_put, the one cost fitted to the
// deletes of both sizes.
func (r *Report) returnedMiss(p ClosurePoint) string {
	put := int64(-1)
	if r.Table != nil {
		if v, ok := r.Table.Extra[keyNetnsPut]; ok {
			put = v
		}
	}
	gp := "its umount's expedited grace period"
	if netdev.Profiles[r.Profile].ExpKthreadWorker {
		wake := "an unmeasured wake-up latency"
		if r.Wakeup != nil && r.Wakeup.N > 0 {
			wake = "the wake-up median here, " + dur(r.Wakeup.P50NS)
		}
		gp += " (on the line's worker thread: two wake-ups of an idle CPU, taking " + wake + " each, while the other CPU is idle; fewer while it is busy)"
	}
	switch {
	case put == 0 && p.Error > 0:
		return "netns_put, fitted to the deletes of both sizes, is at its floor (0), and the model's own wait in each delete, " + gp + ", already takes longer than a delete here"
	case put >= 0:
		return fmt.Sprintf("netns_put (%s), fitted to the deletes of both sizes, balances their errors: the two sizes do not scale alike here and in the model, whose deletes each wait for %s", dur(put), gp)
	}
	return "netns_put was not fitted"
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// HasNetnsCosts reports whether a table carries a namespace calibration.
func HasNetnsCosts(t *costs.Table) bool {
	if t == nil {
		return false
	}
	for _, k := range []string{keyNetnsSetup, keyNetnsPut, keyNetnsExit} {
		if _, ok := t.Extra[k]; !ok {
			return false
		}
	}
	return true
}

func cleanupCount(pts []NetnsPoint) int {
	n := 0
	for _, p := range pts {
		n += len(p.Cleanups)
	}
	return n
}
