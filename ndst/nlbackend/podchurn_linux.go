package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/osthread"
	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/ndst-project/ndst/ndst/nlbackend/wqtrace"
	"golang.org/x/sys/unix"
)

// churn --netns on the real kernel (ndst.PodChurnBackend): pods are named
// namespaces, made as netns add makes them (unshared on a thread of ndst's
// own, lo up and a veth pair into ndst's namespace in one datagram, its
// ownership record, then the bind mount under /run/netns, as container
// runtimes pin theirs) by Parallel creating workers at the rate, and
// deleted Lifetime after each was made by as many deleting workers, as ip
// netns del does (with CNI the veth from inside first). A pod's death is
// when its unmount returned (its last reference goes as the call returns).
// The backlog comes from the deaths and the cleanup_net runs, as for
// unshare. Interrupted, the workers stop; the pods not yet deleted are
// deleted before the command ends, and a pod a killed ndst leaves is one of
// its named namespaces, which reset removes.

// podChurnWindow is how much backlog, beside the pods alive, the memory
// bound allows for: ten seconds of the rate.
const podChurnWindow = 10 * time.Second

// PodChurn implements ndst.PodChurnBackend.
func (b *Backend) PodChurn(ctx context.Context, req ndst.PodChurnRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	b.probeHost()
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if !req.NoVeth && b.root != "" && !b.o.AllowRootNS {
		return nil, b.errRootNS("churn --netns (the host ends of the pods' veth pairs)")
	}
	alive := int(math.Ceil(req.Rate * (req.Lifetime + podChurnWindow).Seconds()))
	if err := b.checkNsMemory(min(alive, req.Pods()), "churn --netns"); err != nil {
		return nil, err
	}
	unlock, err := b.beginChange(ctx, "churn --netns")
	if err != nil {
		return nil, err
	}
	defer unlock()
	unregister, err := lockRegistry(ctx, b.o.WaitLock)
	if err != nil {
		return nil, err
	}
	defer unregister()
	existing, err := scanNetns()
	if err != nil {
		return nil, fmt.Errorf("churn --netns: list %s: %w", netnsDir, err)
	}
	pods := req.Pods()
	names, err := freeNetnsNames(ndst.MustNetnsTemplate("ndstpod%d"), existing, pods)
	if err != nil {
		return nil, err
	}
	links, err := b.dump()
	if err != nil {
		return nil, fmt.Errorf("churn --netns: list devices in namespace %s: %w", b.o.Netns, err)
	}
	var hostNames []string
	if !req.NoVeth {
		tmpl, _ := ndst.ParseTemplate("pv%d")
		if hostNames, err = freeLinkNames(tmpl, links, pods); err != nil {
			return nil, err
		}
	}
	if err := ensureNetnsDir(); err != nil {
		return nil, err
	}
	res := b.newResult("churn-netns")
	defer b.hostFacts(res)
	obs := startBacklogWatch(res, b)
	defer obs.close()
	p := nsPlan{loUp: !req.NoLoUp, veth: !req.NoVeth, inner: "eth0", group: freeGroup(links), hostNs: int(b.ns)}
	run := runPodChurn(ctx, req, p, names, hostNames, obs)
	c := run.times(req)
	if run.err == nil && len(run.deaths) > 0 {
		run.err = obs.waitDrained(ctx, run.deaths, run.lastDeathFloor(), netnsGiveUp(len(run.deaths)))
	}
	obs.reportChurn(c, run.deaths, run.t0, req)
	res.Churn = c
	res.Count = c.Created
	res.WallNS = sender.Monotonic() - run.t0
	res.Latency = c.Create
	if req.FindLimit {
		limit, how := churnLimitFromRuns(c, req)
		if how != "" {
			c.LimitPerSec, c.LimitHow = &limit, how
		}
	}
	if run.err != nil {
		if errors.Is(run.err, context.Canceled) {
			run.err = fmt.Errorf("churn --netns interrupted: %w", run.err)
		}
		left := "every pod made was deleted"
		if c.Deleted < c.Created {
			left = fmt.Sprintf("%d left: ndst --backend netlink reset removes them", c.Created-c.Deleted)
		}
		return fail(res, fmt.Errorf("%w (%d pods made, %d deleted; %s)", run.err, c.Created, c.Deleted, left))
	}
	return res, nil
}

// podRun is what the churn's workers did (CLOCK_MONOTONIC times).
type podRun struct {
	t0                 int64
	made, deleted      []int64 // each pod's create start and its death, by pod
	createLat, delLat  []int64 // by pod (0: not made or deleted)
	deaths             []int64
	madeSteady, delled int
	err                error
}

// runPodChurn makes and deletes the pods.
func runPodChurn(ctx context.Context, req ndst.PodChurnRequest, p nsPlan, names, hosts []string, obs *backlogWatch) *podRun {
	pods := len(names)
	r := &podRun{made: make([]int64, pods), deleted: make([]int64, pods), createLat: make([]int64, pods), delLat: make([]int64, pods)}
	var (
		mu                sync.Mutex
		cond              = sync.NewCond(&mu)
		ready             = make([]bool, pods)  // made, to be deleted
		taken             = make([]bool, pods)  // a deleter has it
		deadline          = make([]int64, pods) // when to delete it
		nextMake, nextDel int
		makersLeft        = req.Parallel
	)
	period := float64(time.Second) / req.Rate
	life := int64(req.Lifetime)
	stop := func() bool { return r.err != nil || ctx.Err() != nil }
	fail := func(err error) {
		mu.Lock()
		if r.err == nil {
			r.err = err
		}
		cond.Broadcast()
		mu.Unlock()
	}
	r.t0 = sender.Monotonic()
	var wg sync.WaitGroup
	for range req.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { mu.Lock(); makersLeft--; cond.Broadcast(); mu.Unlock() }()
			err := osthread.Throwaway(func() error {
				home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(home)
				for {
					mu.Lock()
					if stop() || nextMake >= pods {
						mu.Unlock()
						return nil
					}
					i := nextMake
					nextMake++
					mu.Unlock()
					if wait := r.t0 + int64(float64(i)*period) - sender.Monotonic(); wait > 0 {
						sleepCtx(ctx, time.Duration(wait))
					}
					mu.Lock()
					stopped := stop()
					mu.Unlock()
					if stopped { // interrupted while waiting for its time: not made
						return nil
					}
					host := ""
					if p.veth {
						host = hosts[i]
					}
					s := sender.Monotonic()
					err := makeNamespace(p, names[i], host)
					// Back home, so that the thread holds no pod of its own.
					if serr := unix.Setns(home, unix.CLONE_NEWNET); serr != nil && err == nil {
						err = fmt.Errorf("back to ndst's namespace: %w", serr)
					}
					e := sender.Monotonic()
					if err != nil {
						return fmt.Errorf("pod %s: %w", names[i], err)
					}
					mu.Lock()
					r.made[i], r.createLat[i] = s, e-s
					if s-r.t0 >= int64(req.For)/2 && e-r.t0 < int64(req.For) {
						r.madeSteady++
					}
					ready[i], deadline[i] = true, e+life
					cond.Broadcast()
					mu.Unlock()
				}
			})
			if err != nil {
				fail(err)
			}
		}()
	}
	var dwg sync.WaitGroup
	for range req.Parallel {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			for {
				mu.Lock()
				j := nextPodToDelete(pods, &nextDel, ready, taken, func() bool { return stop() || makersLeft == 0 }, func() bool { return makersLeft > 0 }, cond.Wait)
				if j < 0 {
					mu.Unlock()
					return
				}
				taken[j] = true
				at := deadline[j]
				quick := stop() // interrupted: delete at once
				mu.Unlock()
				if wait := at - sender.Monotonic(); wait > 0 && !quick {
					sleepCtx(ctx, time.Duration(wait))
				}
				s := sender.Monotonic()
				if req.CNI {
					if id, ok := mountedNetns(nsPath(names[j])); ok {
						if _, err := cniDelVeth(&nsTarget{name: names[j], id: id}); err != nil {
							fail(err)
						}
					}
				}
				err := removeNetns(names[j])
				e := sender.Monotonic()
				mu.Lock()
				if err != nil && r.err == nil {
					r.err = fmt.Errorf("delete pod %s: %w", names[j], err)
				}
				r.deleted[j], r.delLat[j] = e, e-s
				r.deaths = append(r.deaths, e)
				if s-r.t0 >= int64(req.For)/2+life && s-r.t0 < int64(req.For)+life {
					r.delled++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Wake the deleters once no pod is coming any more.
	mu.Lock()
	cond.Broadcast()
	mu.Unlock()
	dwg.Wait()
	if r.err == nil && ctx.Err() != nil {
		r.err = ctx.Err()
	}
	return r
}

// nextPodToDelete picks the next pod for a deleter (with the workers' lock
// held; wait releases it while it waits): in the order they were made while
// the churn runs; once it is over (ending says so: interrupted, failed, or
// no maker left), every pod made and not yet taken, after the makers still
// making one (making says so) are done, so that no pod made is left; -1 when
// none is left.
func nextPodToDelete(pods int, next *int, ready, taken []bool, ending, making func() bool, wait func()) int {
	for {
		for *next < pods && taken[*next] {
			*next++
		}
		if *next >= pods {
			return -1
		}
		if ready[*next] {
			return *next
		}
		if !ending() {
			wait()
			continue
		}
		if making() { // a pod in the making must go too
			wait()
			continue
		}
		for k := *next; k < pods; k++ {
			if ready[k] && !taken[k] {
				return k
			}
		}
		return -1
	}
}

// lastDeathFloor is the start of the delete whose return was the last death:
// its namespace was queued for cleanup between the two.
func (r *podRun) lastDeathFloor() int64 {
	var floor, last int64
	for j, e := range r.deleted {
		if e != 0 && e >= last {
			last, floor = e, e-r.delLat[j]
		}
	}
	return floor
}

// sleepCtx sleeps d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// times is the churn's figures from its workers.
func (r *podRun) times(req ndst.PodChurnRequest) *ndst.PodChurnTimes {
	c := &ndst.PodChurnTimes{Rate: req.Rate, ForNS: int64(req.For), LifetimeNS: int64(req.Lifetime), CNI: req.CNI, Parallel: req.Parallel}
	var cl, dl []int64
	for i := range r.made {
		if r.made[i] != 0 {
			c.Created++
			if r.made[i]-r.t0 >= int64(req.For)/2 && r.made[i]-r.t0 < int64(req.For) {
				cl = append(cl, r.createLat[i])
			}
		}
		if r.deleted[i] != 0 {
			c.Deleted++
			dl = append(dl, r.delLat[i])
		}
	}
	c.Create, c.Delete = ndst.Summarize(cl), ndst.Summarize(dl)
	half := req.For.Seconds() / 2
	want := req.Rate * half
	share := max(0, want-2) / want
	c.MadePerSec = float64(r.madeSteady) / half
	c.DeletedPerSec = float64(r.delled) / half
	c.CreatesKeepUp = c.MadePerSec >= (1-ndst.KeepUpSlope)*req.Rate*share
	c.DeletesKeepUp = c.DeletedPerSec >= (1-ndst.KeepUpSlope)*req.Rate*share
	return c
}

// reportChurn fills the churn's backlog from the deaths and the cleanup
// runs (or the slab samples).
func (o *backlogWatch) reportChurn(c *ndst.PodChurnTimes, deaths []int64, t0 int64, req ndst.PodChurnRequest) {
	u := &ndst.UnshareTimes{}
	o.report(u, deaths, t0, nil)
	c.Observed, c.PeakWaiting, c.DrainedNS, c.Batches, c.BatchSizes, c.BatchNS = u.Observed, u.PeakWaiting, u.DrainedNS, u.Batches, u.BatchSizes, u.BatchNS
	pts, _, _, _, _, _, _ := backlogFromRuns(deaths, o.runs, t0, o.lastRunFloor())
	if o.wq == nil {
		pts = u.Backlog
	}
	c.Backlog = ndst.ThinBacklog(pts, ndst.MaxBacklogPoints)
	c.SlopePerSec, _ = ndst.BacklogSlope(pts, int64(req.For)/2, int64(req.For))
	c.KeepsUp = ndst.KeepsUp(c.SlopePerSec, req.Rate)
	c.Freed = 0
	for _, n := range c.BatchSizes {
		c.Freed += n
	}
	// Freed in the steady-state window, from the runs' ends.
	freed := 0
	for _, r := range o.runs {
		if r.End-t0 >= int64(req.For)/2 && r.End-t0 < int64(req.For) {
			k := countBetween(deaths, o.runs, r)
			freed += k
		}
	}
	c.FreedPerSec = float64(freed) / (req.For.Seconds() / 2)
}

// countBetween is how many of deaths run r took: those after the previous
// run that took any started and before r started.
func countBetween(deaths []int64, runs []wqtrace.Run, r wqtrace.Run) int {
	d := slices.Clone(deaths)
	slices.Sort(d)
	prev := int64(math.MinInt64)
	for _, x := range runs {
		if x.Start < r.Start && x.End > 0 {
			prev = max(prev, x.Start)
		}
	}
	lo, _ := slices.BinarySearch(d, prev)
	hi, _ := slices.BinarySearch(d, r.Start)
	return max(0, hi-lo)
}

// churnLimitFromRuns estimates the rate at which the node stops keeping
// up from what the churn measured: the cleanup's capacity from a line
// fitted to its runs (duration = a + b x size: at most 1/b namespaces a
// second however large the runs grow), and the workers' from their
// steady-state times (Parallel pods a create or delete time). "" when the
// runs do not tell (fewer than three sizes, or no growth with size).
func churnLimitFromRuns(c *ndst.PodChurnTimes, req ndst.PodChurnRequest) (float64, string) {
	var n, sx, sy, sxx, sxy float64
	sizes := map[int]bool{}
	for i, k := range c.BatchSizes {
		if i >= len(c.BatchNS) {
			break
		}
		x, y := float64(k), float64(c.BatchNS[i])
		n++
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		sizes[k] = true
	}
	d := n*sxx - sx*sx
	if len(sizes) < 3 || d <= 0 || c.Create == nil || c.Delete == nil {
		return 0, ""
	}
	b := (n*sxy - sx*sy) / d
	a := (sy - b*sx) / n
	if b <= 0 {
		return 0, ""
	}
	cleanup := 1e9 / b
	makers := float64(req.Parallel) * 1e9 / float64(max(c.Create.MedianNS, 1))
	deleters := float64(req.Parallel) * 1e9 / float64(max(c.Delete.MedianNS, 1))
	limit, first := cleanup, "the cleanup"
	if makers < limit {
		limit, first = makers, "the creating workers"
	}
	if deleters < limit {
		limit, first = deleters, "the deleting workers"
	}
	return limit, fmt.Sprintf("estimated from this churn: the cleanup frees at most %.0f a second (%d runs: %.1f ms + %.2f ms a namespace), the %d creating workers make at most %.0f and the deleting ones delete at most %.0f; %s give first; CPUs shared between them lower it",
		cleanup, int(n), a/1e6, b/1e6, req.Parallel, makers, deleters, first)
}
