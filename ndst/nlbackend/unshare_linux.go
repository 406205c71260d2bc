package nlbackend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/ndst-project/ndst/ndst/nlbackend/wqtrace"
	"golang.org/x/sys/unix"
)

// ndst unshare on the real kernel (ndst.UnshareBackend): each namespace is
// made by a thread of ndst's own that unshares it, optionally sets its lo
// up and makes its veth pair (the other end straight in ndst's namespace,
// one datagram on a socket opened inside, closed again), and ends: Go
// terminates a locked thread whose goroutine returns, and the thread's
// exit drops the namespace's last reference (exit_task_namespaces), as a
// container's last process does; nothing is mounted, nothing is named, no
// process or shell is started. P workers keep P such threads going at a
// time. A thread's end is when the kernel no longer finds it (tgkill
// answers ESRCH), which is after its namespace's reference went.
//
// The backlog of namespaces waiting for cleanup comes from those ends and
// the cleanup_net runs (package wqtrace): a run takes every namespace that
// died before it started, and frees them when it ends. Beside it,
// /proc/slabinfo's net_namespace line counts every struct net the kernel
// holds (its active objects, less what there were before the command).
// Where the tracepoints cannot be used the slab count is the backlog.
//
// Interrupted, the workers stop making namespaces; those made die with
// their threads, and their veth ends with them: nothing is left but ndst's
// own namespace, which reset removes.

// unshareNsBytes bounds the kernel memory of one namespace with lo up and
// a veth pair: measured on this project's 6.18 host, 347 KiB of
// MemAvailable and 300 KiB of slab per namespace (300 made with netns add
// --lo-up --veth).
const unshareNsBytes = 512 << 10

// Unshare implements ndst.UnshareBackend.
func (b *Backend) Unshare(ctx context.Context, req ndst.UnshareRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	b.probeHost()
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if req.Veth && b.root != "" && !b.o.AllowRootNS {
		return nil, b.errRootNS("unshare --veth (the host ends of the pairs)")
	}
	if err := b.checkNsMemory(req.Count, "unshare"); err != nil {
		return nil, err
	}
	unlock, err := b.beginChange(ctx, "unshare")
	if err != nil {
		return nil, err
	}
	defer unlock()
	var hostNames []string
	group := uint32(0)
	if req.Veth {
		links, err := b.dump()
		if err != nil {
			return nil, fmt.Errorf("unshare: list devices in namespace %s: %w", b.o.Netns, err)
		}
		if hostNames, err = freeLinkNames(req.VethTemplate, links, req.Count); err != nil {
			return nil, err
		}
		group = freeGroup(links)
	}
	res := b.newResult("unshare")
	defer b.hostFacts(res)
	obs := startBacklogWatch(res, b)
	defer obs.close()
	plan := nsPlan{loUp: req.LoUp, veth: req.Veth, inner: "eth0", group: group, hostNs: int(b.ns)}
	t0 := sender.Monotonic()
	w := runUnshares(ctx, req, plan, hostNames)
	t1 := sender.Monotonic()
	times := &ndst.UnshareTimes{Namespaces: len(w.made), Parallel: req.Parallel, LoUp: req.LoUp, Veth: req.Veth,
		PernetLock: "pernet_ops_rwsem"}
	if kernelBefore(release(), 4, 17) {
		times.PernetLock = "net_mutex"
	}
	var lat []int64
	var deaths []int64
	var floor, lastDeath int64 // when the last namespace to die can have been queued
	for _, m := range w.made {
		lat = append(lat, m.created-m.start)
		times.CreatedNS = max(times.CreatedNS, m.created-t0)
		times.ExitedNS = max(times.ExitedNS, m.exited-t0)
		deaths = append(deaths, m.exited)
		if m.exited >= lastDeath {
			lastDeath, floor = m.exited, m.created // its thread exits after it has made it
		}
	}
	times.Create = ndst.Summarize(lat)
	if times.CreatedNS > 0 {
		times.CreateRate = float64(len(lat)) / (float64(times.CreatedNS) / 1e9)
	}
	res.Count = len(w.made)
	res.Latency = times.Create
	res.WallNS = t1 - t0
	if w.err == nil && len(deaths) > 0 {
		w.err = obs.waitDrained(ctx, deaths, floor, netnsGiveUp(len(deaths)))
	}
	obs.report(times, deaths, t0, w.made)
	res.Unshare = times
	res.Counters = map[string]int64{"namespaces_created": int64(len(w.made))}
	if w.err != nil {
		if errors.Is(w.err, context.Canceled) {
			w.err = fmt.Errorf("unshare interrupted: %w", w.err)
		}
		return fail(res, fmt.Errorf("%w (%d namespaces made; each went with its thread)", w.err, len(w.made)))
	}
	return res, nil
}

// checkNsMemory refuses count namespaces that, all waiting for cleanup at
// once, would not fit in the memory available.
func (b *Backend) checkNsMemory(count int, op string) error {
	if b.o.NoMemoryCheck {
		return nil
	}
	mem, err := readMeminfo()
	if err != nil {
		return fmt.Errorf("%s: cannot bound its memory: %w (--no-memory-check skips the bound)", op, err)
	}
	if need := uint64(count) * unshareNsBytes; need > mem.usable() {
		return ndst.Usagef("%s: %d namespaces, if all were waiting for the cleanup at once, would need about %s of kernel memory (%s each); %s is available (MemAvailable %s less %s kept for the system); --no-memory-check overrides",
			op, count, humanBytes(float64(need)), humanBytes(unshareNsBytes), humanBytes(float64(mem.usable())), humanBytes(float64(mem.avail)), humanBytes(float64(mem.reserve())))
	}
	return nil
}

// madeNs is one namespace an unshare made: when its thread began, when
// the namespace was ready, and when the thread had ended (CLOCK_MONOTONIC).
type madeNs struct{ start, created, exited int64 }

// unshareWork is what the workers did.
type unshareWork struct {
	made []madeNs
	err  error
}

// runUnshares runs the workers until Count namespaces are made, the first
// failure, or ctx is done.
func runUnshares(ctx context.Context, req ndst.UnshareRequest, p nsPlan, hostNames []string) unshareWork {
	var (
		mu   sync.Mutex
		w    unshareWork
		next int
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if w.err != nil || ctx.Err() != nil || next >= req.Count {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range req.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				host := ""
				if p.veth {
					host = hostNames[i]
				}
				m, err := unshareOnce(p, host)
				mu.Lock()
				if err != nil && w.err == nil {
					w.err = fmt.Errorf("namespace %d: %w", i, err)
				}
				if err == nil {
					w.made = append(w.made, m)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if w.err == nil && ctx.Err() != nil {
		w.err = ctx.Err()
	}
	slices.SortFunc(w.made, func(a, b madeNs) int { return int(a.start - b.start) })
	return w
}

// unshareOnce makes one namespace on a new thread that then ends, and
// returns once the kernel has let the thread go.
func unshareOnce(p nsPlan, host string) (madeNs, error) {
	type out struct {
		m   madeNs
		tid int
		err error
	}
	c := make(chan out, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		o := out{tid: unix.Gettid()}
		if o.tid == unix.Getpid() {
			// The main thread is never terminated; take another.
			m, err := unshareOnce(p, host)
			c <- out{m: m, tid: -1, err: err}
			runtime.UnlockOSThread()
			return
		}
		o.m.start = sender.Monotonic()
		o.err = configureUnshared(p, host)
		o.m.created = sender.Monotonic()
		c <- o
	}()
	o := <-c
	if o.tid < 0 {
		return o.m, o.err
	}
	o.m.exited = awaitThreadEnd(o.tid)
	return o.m, o.err
}

// configureUnshared unshares a namespace on the calling locked thread and
// sets it up as p says, through a netlink socket it closes again (a socket
// would keep the namespace alive).
func configureUnshared(p nsPlan, host string) error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("unshare a network namespace: %w", err)
	}
	if !p.loUp && !p.veth {
		return nil
	}
	c, err := dialHere()
	if err != nil {
		return fmt.Errorf("open a netlink socket in it: %w", err)
	}
	defer c.close()
	var m msg
	sent := map[uint32]int{}
	if p.loUp {
		s := c.nextSeq()
		sent[s] = -1
		appendSetUp(&m, s, 1)
	}
	if p.veth {
		s := c.nextSeq()
		sent[s] = -2
		appendVethTo(&m, s, p.inner, host, p.group, p.hostNs)
	}
	if err := c.send(m.b); err != nil {
		return err
	}
	var first error
	err = c.barrier(sent, time.Now().Add(nsCreateTimeout), func(what int, e error) {
		if first == nil && what == -1 {
			first = fmt.Errorf("set lo up: %w", e)
		} else if first == nil {
			first = fmt.Errorf("create veth pair eth0/%s: %w", host, e)
		}
	})
	if err != nil {
		return err
	}
	return first
}

// awaitThreadEnd returns when the kernel no longer finds thread tid of this
// process (its exit is done, its namespaces let go), polling for up to a
// second.
func awaitThreadEnd(tid int) int64 {
	pid := unix.Getpid()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if err := unix.Tgkill(pid, tid, 0); errors.Is(err, unix.ESRCH) {
			break
		}
		time.Sleep(20 * time.Microsecond)
	}
	return sender.Monotonic()
}

// backlogWatch follows the cleanup runs and the slab count during a
// workload.
type backlogWatch struct {
	b    *Backend
	res  *ndst.Result
	wq   *wqtrace.Watcher
	runs []wqtrace.Run
	// slab samples: CLOCK_MONOTONIC and net_namespace active objects.
	mu       sync.Mutex
	slab     [][2]int64
	slabBase int64
	stop     chan struct{}
	done     chan struct{}
	// floor: the earliest time the last namespace to die can have been
	// queued (waitDrained's), when hasFloor.
	floor    int64
	hasFloor bool
}

// startBacklogWatch opens the workqueue tracepoints and starts sampling
// /proc/slabinfo every 10 ms; what cannot be used is said in a note.
func startBacklogWatch(res *ndst.Result, b *Backend) *backlogWatch {
	o := &backlogWatch{b: b, res: res, slabBase: -1, stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	if o.wq, err = wqtrace.Open("cleanup_net"); err != nil {
		b.notef(res, "the backlog from /proc/slabinfo alone (the workqueue tracepoints cannot be used: %v)", err)
		o.wq = nil
	}
	if n, err := netNamespaceObjs(); err != nil {
		b.notef(res, "no slab count of struct net (%v)", err)
		close(o.done)
		return o
	} else {
		o.slabBase = n
	}
	go func() {
		defer close(o.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-t.C:
				if n, err := netNamespaceObjs(); err == nil {
					o.mu.Lock()
					o.slab = append(o.slab, [2]int64{sender.Monotonic(), n})
					if len(o.slab) > 1<<16 { // ten minutes: keep every other
						o.slab = thin2(o.slab)
					}
					o.mu.Unlock()
				}
			}
		}
	}()
	return o
}

func thin2(s [][2]int64) [][2]int64 {
	out := s[:0]
	for i := 0; i < len(s); i += 2 {
		out = append(out, s[i])
	}
	return out
}

func (o *backlogWatch) close() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	<-o.done
	if o.wq != nil {
		o.wq.Close()
		o.wq = nil
	}
}

// waitDrained waits until the cleanup has taken the last namespace that
// died, within limit: from the tracepoints, a cleanup run that ended after it
// (drainedBy), or the slab count back to its base. floor is the earliest
// time the last namespace can have been queued for cleanup (the start of
// the call whose return was its death): the call queues it before it
// returns, so the run that takes it may start before the death is seen.
func (o *backlogWatch) waitDrained(ctx context.Context, deaths []int64, floor int64, limit time.Duration) error {
	last := slices.Max(deaths)
	o.floor, o.hasFloor = floor, true
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.wq != nil {
			o.runs = o.wq.Poll()
			if drainedBy(o.runs, last, floor, sender.Monotonic()) {
				return nil
			}
		} else if o.slabBase >= 0 {
			if n, err := netNamespaceObjs(); err == nil && n <= o.slabBase {
				return nil
			}
		} else {
			return nil // nothing to wait with: drained stays unknown
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("%w: the cleanup of the namespaces had not ended %v after the last one died", ndst.ErrStuck, limit)
}

// drainSettle is how long after a cleanup run that may have taken the last
// namespace no new run must have started: one queued while it ran starts
// as soon as the worker is free.
const drainSettle = 50 * time.Millisecond

// drainedBy says whether runs show the cleanup done with the namespaces that
// died by last (queued at floor or after) at now: a run that started at or
// after last has ended; or a run that started at or after floor and was
// still running at last has ended, drainSettle ago, with no run started
// after it (a namespace queued during it gets a run of its own).
func drainedBy(runs []wqtrace.Run, last, floor, now int64) bool {
	var cand *wqtrace.Run
	for i := range runs {
		r := &runs[i]
		if r.Start >= last && r.End > 0 {
			return true
		}
		if r.Start >= floor && (cand == nil || r.Start > cand.Start) {
			cand = r
		}
	}
	return cand != nil && cand.End >= last && now-cand.End >= int64(drainSettle)
}

// report fills the backlog of times from the deaths and the runs (or the
// slab samples), from t0.
func (o *backlogWatch) report(u *ndst.UnshareTimes, deaths []int64, t0 int64, made []madeNs) {
	close(o.stop)
	<-o.done
	if o.wq != nil {
		o.runs = o.wq.Poll()
	}
	pts, peak, peakAt, drained, batches, sizes, durs := backlogFromRuns(deaths, o.runs, t0, o.lastRunFloor())
	if o.wq != nil {
		u.Observed = "workqueue tracepoints"
		u.Backlog, u.PeakWaiting, u.PeakNS = ndst.ThinBacklog(pts, ndst.MaxBacklogPoints), peak, peakAt
		if drained >= 0 {
			u.DrainedNS = &drained
		}
		u.Batches, u.BatchSizes, u.BatchNS = &batches, sizes, durs
		o.addSlabLive(u.Backlog, t0)
		return
	}
	u.Observed = "slabinfo"
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.slab {
		if s[0] < t0 {
			continue
		}
		live := int(max(0, s[1]-o.slabBase))
		u.Backlog = append(u.Backlog, ndst.BacklogPoint{AtNS: s[0] - t0, Waiting: live, Live: live})
		if live > u.PeakWaiting {
			u.PeakWaiting, u.PeakNS = live, s[0]-t0
		}
	}
	u.Backlog = ndst.ThinBacklog(u.Backlog, ndst.MaxBacklogPoints)
	if n := len(o.slab); n > 0 && o.slab[n-1][1] <= o.slabBase {
		for i := n - 1; i >= 0 && o.slab[i][1] <= o.slabBase; i-- {
			v := o.slab[i][0] - t0
			u.DrainedNS = &v
		}
	}
}

// addSlabLive fills the points' live counts from the nearest slab sample
// before each.
func (o *backlogWatch) addSlabLive(pts []ndst.BacklogPoint, t0 int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	j := 0
	for i := range pts {
		at := pts[i].AtNS + t0
		for j+1 < len(o.slab) && o.slab[j+1][0] <= at {
			j++
		}
		if j < len(o.slab) && o.slab[j][0] <= at {
			pts[i].Live = int(max(0, o.slab[j][1]-o.slabBase))
		}
	}
}

// lastRunFloor is backlogFromRuns' floor: -1 when waitDrained did not run.
func (o *backlogWatch) lastRunFloor() int64 {
	if !o.hasFloor {
		return -1
	}
	return o.floor
}

// backlogFromRuns is the waiting count over time from the namespaces'
// deaths and the cleanup runs: a run takes every namespace that died
// before it started and not taken yet, and frees them when it ends. It
// returns the points (from t0), the peak and when, when the last taken
// was freed (-1: not all were), and the runs that took any, their sizes
// and durations.
func backlogFromRuns(deaths []int64, runs []wqtrace.Run, t0, floor int64) ([]ndst.BacklogPoint, int, int64, int64, int, []int, []int64) {
	d := slices.Clone(deaths)
	slices.Sort(d)
	type ev struct {
		at int64
		n  int
	}
	var evs []ev
	for _, x := range d {
		evs = append(evs, ev{x, 1})
	}
	taken := 0
	drained := int64(-1)
	var sizes []int
	var durs []int64
	// The run that takes the last namespace may start before its death is
	// seen (see drainedBy): the latest run that started at floor or after
	// and ended after the last death takes what is left.
	lastRun := -1
	if floor >= 0 && len(d) > 0 {
		for i, r := range runs {
			if r.Start >= floor && r.End >= d[len(d)-1] && (lastRun < 0 || r.Start > runs[lastRun].Start) {
				lastRun = i
			}
		}
	}
	for i, r := range runs {
		if r.End == 0 || r.Start < t0 {
			continue
		}
		k, _ := slices.BinarySearch(d, r.Start)
		if i == lastRun {
			k = len(d)
		}
		if n := k - taken; n > 0 {
			evs = append(evs, ev{r.End, -n})
			sizes = append(sizes, n)
			durs = append(durs, r.End-r.Start)
			taken = k
			if taken == len(d) {
				drained = r.End - t0
			}
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return int(a.at - b.at) })
	var pts []ndst.BacklogPoint
	w, peak := 0, 0
	var peakAt int64
	for i, e := range evs {
		w += e.n
		if w > peak {
			peak, peakAt = w, e.at-t0
		}
		if i+1 < len(evs) && evs[i+1].at == e.at {
			continue
		}
		pts = append(pts, ndst.BacklogPoint{AtNS: e.at - t0, Waiting: w})
	}
	return pts, peak, peakAt, drained, len(sizes), sizes, durs
}

// netNamespaceObjs reads the active objects of /proc/slabinfo's
// net_namespace line.
func netNamespaceObjs() (int64, error) {
	data, err := os.ReadFile("/proc/slabinfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) > 2 && string(f[0]) == "net_namespace" {
			return strconv.ParseInt(string(f[1]), 10, 64)
		}
	}
	return 0, errors.New("/proc/slabinfo has no net_namespace line (the cache is merged with another)")
}

// kernelBefore reports whether release (as uname -r prints it) is older
// than major.minor.
func kernelBefore(release string, major, minor int) bool {
	var a, b int
	if _, err := fmt.Sscanf(release, "%d.%d", &a, &b); err != nil {
		return false
	}
	return a < major || a == major && b < minor
}

// release is the running kernel's release (uname -r).
func release() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
