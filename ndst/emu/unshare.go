package emu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	ph "github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/sim"
)

// Namespaces that die with their process, on the emulated kernel
// (ndst.UnshareBackend): Parallel user tasks, each a process that calls
// unshare(CLONE_NEWNET) (copy_net_ns: the pernet lock, setup_net, lo),
// optionally sets lo up and makes a veth pair, and exits, its namespace's
// last reference going with it (exit_task_namespaces: __put_net queues the
// cleanup; nothing is mounted, so no umount and no grace period before
// it). The command waits until the cleanup has freed every namespace, and
// reports the backlog from the namespaces' own times.

var _ ndst.UnshareBackend = (*Backend)(nil)

// Unshare implements ndst.UnshareBackend.
func (b *Backend) Unshare(ctx context.Context, req ndst.UnshareRequest) (*ndst.Result, error) {
	if err := b.netnsUsage("unshare"); err != nil {
		return nil, err
	}
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if req.Veth {
		if free := req.VethTemplate.MaxNumber() + 1 - b.countMatching(req.VethTemplate); req.Parallel > free {
			return nil, ndst.Usagef("veth template %s has room for %d more names in the initial namespace, %d needed at once", req.VethTemplate, free, req.Parallel)
		}
	}
	// Every namespace may be waiting for cleanup at once.
	per := 1
	if req.Veth {
		per += 2
	}
	if err := checkMemory(b.stateDevices() + req.Count*(per+netnsDeviceEquivalent)); err != nil {
		return nil, err
	}
	res := b.newResult("unshare", false)
	wall := time.Now()
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	ns := k.namespaces()
	list := make([]*netdev.Netns, 0, req.Count)
	lat := make([]int64, 0, req.Count)
	var created, exited sim.Time
	var workErr error
	next := 0 // the next namespace to make, handed out as workers ask
	running := req.Parallel
	var allExited sim.WaitQueue
	var rtnlWait sim.Time
	cpus := len(k.e.CPUs())
	bound := 600*sim.Second + sim.Time(req.Count*per)*10*sim.Millisecond
	virt, runErr := k.run(ctx, func(t *sim.Task, sys sim.Time) {
		for w := range req.Parallel {
			k.e.Go(fmt.Sprintf("unshare/%d", w), w%cpus, false, func(wt *sim.Task) {
				defer func() {
					for _, p := range wt.Phases() {
						if p.Name == ph.RTNL {
							rtnlWait += p.Wait
						}
					}
					if running--; running == 0 {
						exited = wt.Now()
						allExited.WakeAll()
					}
				}()
				wt.SetMode(sim.ModeUser)
				for workErr == nil && ctx.Err() == nil && next < req.Count {
					i := next
					next++
					s := wt.Now()
					syscall(wt, sys) // unshare(CLONE_NEWNET)
					n, err := ns.Create(wt, fmt.Sprintf("~unshare%d", i))
					if err != nil {
						workErr = err
						return
					}
					list = append(list, n)
					if req.LoUp {
						returnToUser(wt)
						syscall(wt, sys)
						ns.SetLoUp(wt, n)
					}
					if req.Veth {
						returnToUser(wt)
						syscall(wt, sys)
						if _, _, err := ns.AddVeth(wt, n, "eth0", req.VethTemplate); err != nil {
							workErr = fmt.Errorf("namespace %d: %w", i, err)
							return
						}
					}
					lat = append(lat, int64(wt.Now()-s))
					created = max(created, wt.Now())
					// exit: the process's last reference on its namespace.
					syscall(wt, sys)
					ns.Put(wt, n)
					returnToUser(wt)
				}
			})
		}
		t.SetMode(sim.ModeUser)
		allExited.Wait(t, func() bool { return running == 0 })
		t.SetMode(sim.ModeKernel)
		if workErr == nil && ctx.Err() == nil {
			ns.WaitDone(t, list, bound)
		}
	})
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	rel := func(x sim.Time) int64 { return int64(x - k.start) }
	times := &ndst.UnshareTimes{Namespaces: len(list), Parallel: req.Parallel, LoUp: req.LoUp, Veth: req.Veth,
		CreatedNS: rel(created), ExitedNS: rel(exited), Create: ndst.Summarize(lat), Observed: "emulated"}
	if created > k.start {
		times.CreateRate = float64(len(lat)) / (float64(created-k.start) / 1e9)
	}
	times.Backlog, times.PeakWaiting, times.PeakNS = backlogOf(list, k.start)
	freed := 0
	var drained sim.Time
	for _, n := range list {
		if n.State == netdev.NetnsFreed {
			freed++
			drained = max(drained, n.DoneAt)
		}
	}
	if freed == len(list) && freed > 0 {
		v := rel(drained)
		times.DrainedNS = &v
	}
	batches := len(ns.Batches())
	times.Batches, times.BatchSizes = &batches, ns.Batches()
	for _, d := range ns.BatchTimes() {
		times.BatchNS = append(times.BatchNS, int64(d))
	}
	st := ns.Stats()
	times.PernetLock = "pernet_ops_rwsem"
	if b.r.profile.Netns.NetMutex {
		times.PernetLock = "net_mutex"
	}
	waited, maxWait := int(st.CleanupWaits), int64(st.CleanupWaitMax)
	times.CreatesWaited, times.WaitedNS = &waited, &maxWait
	rw := int64(rtnlWait)
	times.RTNLWaitNS = &rw
	res.Unshare = times
	if runErr != nil || workErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped after %v virtual: %d of %d namespaces made, %d freed; the state file is unchanged", virt, len(list), req.Count, freed))
	}
	out, err := b.finish(k, res, virt, time.Since(wall), lat, len(lat), errors.Join(runErr, workErr))
	netnsCounters(k, out)
	if out != nil {
		out.Explain = explainUnshare(b.r, out)
	}
	var stuck *netdev.NetnsStuckError
	if errors.As(runErr, &stuck) {
		out.Result = ndst.ResultStuck
		err = fmt.Errorf("%w: %v", ndst.ErrStuck, runErr)
	}
	return out, err
}

// backlogOf is the waiting and live counts of the namespaces in list over
// time (a point at every change), thinned, and the peak of the waiting.
func backlogOf(list []*netdev.Netns, start sim.Time) ([]ndst.BacklogPoint, int, int64) {
	pts, peak, at := backlogPoints(list, start)
	return ndst.ThinBacklog(pts, ndst.MaxBacklogPoints), peak, at
}

// backlogPoints is backlogOf without the thinning.
func backlogPoints(list []*netdev.Netns, start sim.Time) ([]ndst.BacklogPoint, int, int64) {
	type ev struct {
		at            sim.Time
		waiting, live int
	}
	evs := make([]ev, 0, 3*len(list))
	for _, n := range list {
		evs = append(evs, ev{n.CreatedAt, 0, 1})
		if n.QueuedAt >= 0 {
			evs = append(evs, ev{n.QueuedAt, 1, 0})
		}
		if n.DoneAt >= 0 {
			evs = append(evs, ev{n.DoneAt, -1, -1})
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return int(a.at - b.at) })
	var pts []ndst.BacklogPoint
	waiting, live, peak := 0, 0, 0
	var peakAt sim.Time
	for i, e := range evs {
		waiting += e.waiting
		live += e.live
		if waiting > peak {
			peak, peakAt = waiting, e.at
		}
		if i+1 < len(evs) && evs[i+1].at == e.at {
			continue // one point per instant
		}
		pts = append(pts, ndst.BacklogPoint{AtNS: int64(e.at - start), Waiting: waiting, Live: live})
	}
	return pts, peak, int64(peakAt - start)
}

// explainUnshare is the one or two sentences under an unshare: how the
// creations and the cleanup kept pace, and what held the creations up.
func explainUnshare(r *resolved, res *ndst.Result) []string {
	u := res.Unshare
	if res.Result != ndst.ResultOK || u == nil || u.DrainedNS == nil || u.Batches == nil || *u.Batches == 0 {
		return nil
	}
	var out []string
	behind := *u.DrainedNS - u.ExitedNS
	out = append(out, fmt.Sprintf("%d workers made %.0f namespaces a second; %s of cleanup took them (at most %d waiting at once), and it ended %s after the last worker exited",
		u.Parallel, u.CreateRate, plural(*u.Batches, "run"), u.PeakWaiting, dur(behind)))
	if u.CreatesWaited != nil && *u.CreatesWaited > 0 {
		out = append(out, fmt.Sprintf("%d creations waited for a running cleanup, up to %s: on kernel %s setup_net and cleanup_net both hold net_mutex; from 4.17 (885842d89a9b) both take pernet_ops_rwsem for reading and creations do not wait",
			*u.CreatesWaited, dur(*u.WaitedNS), r.profile.Name))
	} else if u.PernetLock == "pernet_ops_rwsem" {
		out = append(out, "no creation waited for the cleanup: setup_net and cleanup_net both take pernet_ops_rwsem for reading")
	}
	return out
}
