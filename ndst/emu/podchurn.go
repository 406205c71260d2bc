package emu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// Pods created and deleted all day on the emulated kernel
// (ndst.PodChurnBackend): the runtime's creating thread makes a pod every
// 1/Rate seconds (a named namespace: copy_net_ns, lo up, a veth pair into
// the initial namespace, each a request), and its deleting thread deletes
// each Lifetime after it was made (the umount and close of ip netns del, or
// with CNI its veth first), on the kernel of the configuration. After For
// no pod is made; the ones left are deleted on time and the command waits
// until the cleanup has freed them all. The namespaces' own times make the
// backlog.

var _ ndst.PodChurnBackend = (*Backend)(nil)

// podTimes is what is kept of a pod once its namespace is freed.
type podTimes struct{ created, queued, done sim.Time }

// churnRun is one emulated churn's outcome.
type churnRun struct {
	k       *kernel
	virt    sim.Time
	times   *ndst.PodChurnTimes
	created []int64 // steady-state create latencies
	err     error
}

// PodChurn implements ndst.PodChurnBackend.
func (b *Backend) PodChurn(ctx context.Context, req ndst.PodChurnRequest) (*ndst.Result, error) {
	if err := b.netnsUsage("churn --netns"); err != nil {
		return nil, err
	}
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	// At worst every pod is still waiting for cleanup at the end.
	if err := checkMemory(b.stateDevices() + req.Pods()*(podDevices(req)+netnsDeviceEquivalent)); err != nil {
		return nil, ndst.Usagef("--rate %g for %v: %v", req.Rate, req.For, err)
	}
	res := b.newResult("churn-netns", false)
	wall := time.Now()
	run, err := b.churnOnce(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.FindLimit && run.err == nil {
		limit, how, err := b.churnLimit(ctx, req, run.times.Sustained())
		if err != nil {
			run.err = err
		} else {
			run.times.LimitPerSec, run.times.LimitHow = &limit, how
		}
	}
	res.Churn = run.times
	if run.err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped after %v virtual: %d pods made, %d deleted; the state file is unchanged", run.virt, run.times.Created, run.times.Deleted))
	}
	out, err := b.finish(run.k, res, run.virt, time.Since(wall), run.created, run.times.Created, run.err)
	netnsCounters(run.k, out)
	if out != nil {
		out.Explain = explainChurn(b.r, out)
	}
	var stuck *netdev.NetnsStuckError
	if errors.As(run.err, &stuck) {
		out.Result = ndst.ResultStuck
		err = fmt.Errorf("%w: %v", ndst.ErrStuck, run.err)
	}
	return out, err
}

func podDevices(req ndst.PodChurnRequest) int {
	if req.NoVeth {
		return 1
	}
	return 3
}

// churnOnce boots a kernel and runs the churn on it.
func (b *Backend) churnOnce(ctx context.Context, req ndst.PodChurnRequest) (*churnRun, error) {
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	ns := k.namespaces()
	pods := req.Pods()
	period := sim.Time(float64(sim.Second) / req.Rate)
	forT, life := sim.Time(req.For), sim.Time(req.Lifetime)
	var (
		kept                  []podTimes // freed pods, by the cleanup's OnFree
		made                  = make([]*netdev.Netns, pods)
		deadline              = make([]sim.Time, pods)
		createLat, deleteLat  []int64
		madeSteady, delSteady int
		nextMake, nextDel     int
		madeCount, deleted    int
		makers, deleters      = req.Parallel, req.Parallel
		madeQ, doneQ          sim.WaitQueue
		workErr               error
		vethTmpl, _           = ndst.ParseTemplate("pv%d")
		bound                 = 600*sim.Second + sim.Time(pods*podDevices(req))*10*sim.Millisecond
		start                 sim.Time
		pending               = map[*netdev.Netns]int{} // deleted, not yet freed
	)
	ns.OnFree = func(n *netdev.Netns) {
		if _, ok := pending[n]; ok {
			delete(pending, n)
			kept = append(kept, podTimes{n.CreatedAt, n.QueuedAt, n.DoneAt})
		}
	}
	stop := func() bool { return workErr != nil || ctx.Err() != nil }
	cpus := len(k.e.CPUs())
	virt, runErr := k.run(ctx, func(t *sim.Task, sys sim.Time) {
		start = t.Now()
		for w := range req.Parallel {
			k.e.Go(fmt.Sprintf("runtime/create/%d", w), w%cpus, false, func(ct *sim.Task) {
				defer func() { makers--; madeQ.WakeAll(); doneQ.WakeAll() }()
				ct.SetMode(sim.ModeUser)
				for !stop() && nextMake < pods {
					i := nextMake
					nextMake++
					if at := start + sim.Time(i)*period; ct.Now() < at {
						ct.Nanosleep(at - ct.Now())
					}
					s := ct.Now()
					syscall(ct, sys)
					n, err := ns.Create(ct, fmt.Sprintf("~pod%d", i))
					if err != nil {
						workErr = fmt.Errorf("pod %d: %w", i, err)
						return
					}
					if !req.NoLoUp {
						returnToUser(ct)
						syscall(ct, sys)
						ns.SetLoUp(ct, n)
					}
					if !req.NoVeth {
						returnToUser(ct)
						syscall(ct, sys)
						if _, _, err := ns.AddVeth(ct, n, "eth0", vethTmpl); err != nil {
							workErr = fmt.Errorf("pod %d: %w", i, err)
							return
						}
					}
					// A pod is a named namespace (as netns add makes it).
					ns.NameNamespace(ct, n)
					returnToUser(ct)
					if s-start >= forT/2 && s-start < forT {
						createLat = append(createLat, int64(ct.Now()-s))
					}
					if ct.Now()-start >= forT/2 && ct.Now()-start < forT {
						madeSteady++
					}
					made[i], deadline[i] = n, ct.Now()+life
					madeCount++
					madeQ.WakeAll()
				}
			})
		}
		for w := range req.Parallel {
			k.e.Go(fmt.Sprintf("runtime/delete/%d", w), (w+1)%cpus, false, func(dt *sim.Task) {
				defer func() { deleters--; doneQ.WakeAll() }()
				dt.SetMode(sim.ModeUser)
				for !stop() && nextDel < pods {
					j := nextDel
					nextDel++
					madeQ.Wait(dt, func() bool { return made[j] != nil || stop() || makers == 0 })
					n := made[j]
					if n == nil {
						return
					}
					if at := deadline[j]; dt.Now() < at {
						dt.Nanosleep(at - dt.Now())
					}
					made[j] = nil
					s := dt.Now()
					syscall(dt, sys)
					if req.CNI && cniDelVeth(dt, ns, n, sys, nil) {
						syscall(dt, sys)
					}
					ns.Unmount(dt, n)
					pending[n] = j
					ns.Put(dt, n)
					ns.ReleaseMount(dt)
					returnToUser(dt)
					deleteLat = append(deleteLat, int64(dt.Now()-s))
					deleted++
					if s-start >= forT/2+life && s-start < forT+life {
						delSteady++
					}
				}
			})
		}
		t.SetMode(sim.ModeUser)
		doneQ.Wait(t, func() bool { return makers == 0 && deleters == 0 })
		t.SetMode(sim.ModeKernel)
		if !stop() {
			ns.WaitDone(t, pendingList(pending), bound)
		}
	})
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	times := &ndst.PodChurnTimes{Rate: req.Rate, ForNS: int64(req.For), LifetimeNS: int64(req.Lifetime), CNI: req.CNI,
		Parallel: req.Parallel, Created: madeCount, Deleted: deleted, Freed: len(kept),
		Create: ndst.Summarize(createLat), Delete: ndst.Summarize(deleteLat), Observed: "emulated"}
	// The pods not freed (a stopped run) count as they stood.
	for _, n := range made {
		if n != nil {
			kept = append(kept, podTimes{n.CreatedAt, n.QueuedAt, -1})
		}
	}
	for _, n := range pendingList(pending) {
		kept = append(kept, podTimes{n.CreatedAt, n.QueuedAt, -1})
	}
	var pts []ndst.BacklogPoint
	pts, times.PeakWaiting, _ = backlogOfTimes(kept, start)
	times.Backlog = ndst.ThinBacklog(pts, ndst.MaxBacklogPoints)
	times.SlopePerSec, _ = ndst.BacklogSlope(pts, int64(forT/2), int64(forT))
	times.KeepsUp = ndst.KeepsUp(times.SlopePerSec, req.Rate)
	half := (forT / 2).Seconds()
	times.MadePerSec = float64(madeSteady) / half
	times.CreatesKeepUp = times.MadePerSec >= (1-ndst.KeepUpSlope)*req.Rate*steadyShare(req)
	times.DeletedPerSec = float64(delSteady) / half
	times.DeletesKeepUp = times.DeletedPerSec >= (1-ndst.KeepUpSlope)*req.Rate*steadyShare(req)
	freedSteady := 0
	last := sim.Time(-1)
	for _, p := range kept {
		if p.done >= 0 {
			last = max(last, p.done)
			if p.done-start >= forT/2 && p.done-start < forT {
				freedSteady++
			}
		}
	}
	times.FreedPerSec = float64(freedSteady) / half
	if last >= 0 && len(kept) == madeCount && madeCount > 0 && runErr == nil && workErr == nil {
		v := int64(last - start)
		times.DrainedNS = &v
	}
	batches := len(ns.Batches())
	times.Batches, times.BatchSizes = &batches, ns.Batches()
	for _, d := range ns.BatchTimes() {
		times.BatchNS = append(times.BatchNS, int64(d))
	}
	return &churnRun{k: k, virt: virt, times: times, created: createLat, err: errors.Join(runErr, workErr)}, nil
}

// steadyShare is the share of the rate the steady-state window can see
// made: all of it, less two pods for the window's edges (a short churn's
// window holds few).
func steadyShare(req ndst.PodChurnRequest) float64 {
	want := req.Rate * req.For.Seconds() / 2
	return max(0, want-2) / want
}

// pendingList is the pods of pending in the order they were deleted.
func pendingList(pending map[*netdev.Netns]int) []*netdev.Netns {
	list := make([]*netdev.Netns, 0, len(pending))
	for n := range pending {
		list = append(list, n)
	}
	slices.SortFunc(list, func(a, b *netdev.Netns) int { return pending[a] - pending[b] })
	return list
}

// backlogOfTimes is backlogOf for pods kept as times (done -1: not freed).
func backlogOfTimes(pods []podTimes, start sim.Time) ([]ndst.BacklogPoint, int, int64) {
	list := make([]*netdev.Netns, len(pods))
	for i, p := range pods {
		list[i] = &netdev.Netns{CreatedAt: p.created, QueuedAt: p.queued, DoneAt: p.done}
	}
	pts, peak, at := backlogPoints(list, start)
	return pts, peak, at
}

// churnLimit bisects the rate at which the cleanup stops keeping up, with
// churns of their own (at most 20 s of virtual time each): from the
// request's rate up or down by doubling until it changes, then to 5%.
func (b *Backend) churnLimit(ctx context.Context, req ndst.PodChurnRequest, keepsUp bool) (float64, string, error) {
	probe := req
	probe.FindLimit = false
	probes, why := 0, ""
	ok := func(r0 float64) (bool, error) {
		rate := r0
		probes++
		// At most 20 s of virtual time and 20,000 pods a probe.
		probe.Rate = rate
		probe.For = min(req.For, 20*time.Second, time.Duration(20000/rate*float64(time.Second)))
		if probe.Pods() < 2 {
			return true, nil
		}
		if err := checkMemory(b.stateDevices() + probe.Pods()*(podDevices(probe)+netnsDeviceEquivalent)); err != nil {
			return false, fmt.Errorf("searching the limit: %w", err)
		}
		r, err := b.churnOnce(ctx, probe)
		if err != nil {
			return false, err
		}
		if r.err != nil {
			return false, r.err
		}
		switch {
		case !r.times.DeletesKeepUp:
			why = fmt.Sprintf("above it the %d deleting workers fall behind (%s pods a second asked, %s deleted)", req.Parallel, rateOf(r0), rateOf(r.times.DeletedPerSec))
		case !r.times.KeepsUp:
			why = fmt.Sprintf("above it the cleanup's backlog grows (%s pods a second: %+.1f waiting a second)", rateOf(r0), r.times.SlopePerSec)
		case !r.times.CreatesKeepUp:
			why = fmt.Sprintf("above it the %d creating workers fall behind (%s pods a second asked, %s made)", req.Parallel, rateOf(r0), rateOf(r.times.MadePerSec))
		}
		return r.times.Sustained(), nil
	}
	lo, hi := 0.0, 0.0
	if keepsUp {
		lo = req.Rate
		for r := 2 * req.Rate; ; r *= 2 {
			if r > ndst.MaxPodRate {
				return math.Inf(1), fmt.Sprintf("emulated: keeps up at every rate up to %d a second", ndst.MaxPodRate), nil
			}
			k, err := ok(r)
			if err != nil {
				return 0, "", err
			}
			if !k {
				hi = r
				break
			}
			lo = r
		}
	} else {
		hi = req.Rate
		for r := req.Rate / 2; ; r /= 2 {
			if probe.Rate = r; probe.Pods() < 2 {
				return r, "emulated: does not keep up even at the slowest rate that makes two pods", nil
			}
			k, err := ok(r)
			if err != nil {
				return 0, "", err
			}
			if k {
				lo = r
				break
			}
			hi = r
		}
	}
	for hi-lo > 0.05*lo {
		mid := (lo + hi) / 2
		k, err := ok(mid)
		if err != nil {
			return 0, "", err
		}
		if k {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, fmt.Sprintf("emulated: the highest rate that kept up in %d churns of up to 20 s and 20,000 pods, to 5%%; %s", probes, why), nil
}

// explainChurn is the one or two sentences under a pod churn.
func explainChurn(r *resolved, res *ndst.Result) []string {
	c := res.Churn
	if res.Result != ndst.ResultOK || c == nil || c.Batches == nil {
		return nil
	}
	var out []string
	switch {
	case !c.CreatesKeepUp:
		s := fmt.Sprintf("the %d creating workers fell behind: %.0f pods made a second for %g asked (each took %s at the median)", c.Parallel, c.MadePerSec, c.Rate, dur(c.Create.MedianNS))
		if st := res.Counters["pernet_lock_waits"]; st > 0 && r.profile.Netns.NetMutex {
			s += fmt.Sprintf("; %d creations waited for net_mutex, which the cleanup holds for its whole run on kernel %s", st, r.profile.Name)
		}
		out = append(out, s)
	case !c.DeletesKeepUp:
		out = append(out, fmt.Sprintf("the %d deleting workers fell behind: %.0f pods deleted a second for %g made (each delete took %s at the median)", c.Parallel, c.DeletedPerSec, c.Rate, dur(c.Delete.MedianNS)))
	}
	if c.KeepsUp {
		out = append(out, fmt.Sprintf("the cleanup kept up: in the steady state its backlog grew by %.2f namespaces a second (at most %d waiting), %.0f freed a second", c.SlopePerSec, c.PeakWaiting, c.FreedPerSec))
	} else {
		out = append(out, fmt.Sprintf("the cleanup did not keep up: its backlog grew by %.1f namespaces a second (%d waiting at the peak), %.0f freed a second for %g made, so memory grows until the churn stops", c.SlopePerSec, c.PeakWaiting, c.FreedPerSec, c.Rate))
	}
	if c.LimitPerSec != nil && !math.IsInf(*c.LimitPerSec, 1) {
		out = append(out, fmt.Sprintf("on kernel %s with %s this node keeps up to about %s pods a second (%s)", r.profile.Name, plural(r.cfg.CPUs, "CPU"), rateOf(*c.LimitPerSec), c.LimitHow))
	}
	return out
}

// rateOf prints a rate with the digits that matter: 8.4, 250.
func rateOf(r float64) string {
	if r < 100 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}
