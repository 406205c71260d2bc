package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/calltrace"
	"github.com/ndst-project/ndst/ndst/nlbackend/membarrier"
	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/ndst-project/ndst/ndst/nlbackend/wqtrace"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ndst netns del on the real kernel: deleting a namespace is what `ip netns
// del` does, unmounting it and removing its file, which drops its last
// reference; the kernel queues it for its cleanup work and returns. The
// three times of ndst.NetnsTimes are observed from outside:
//
//   - returned: when the umount2 call returned, from the kernel's
//     raw_syscalls:sys_exit tracepoint on the deleting thread (package
//     calltrace). It fires before the thread's return to user space runs
//     the task work that drops the namespace's last reference, so it comes
//     before the cleanup can begin. The time read in user space after the
//     call is what is left where the tracepoint cannot be used, and it can
//     be late: on a busy CPU the thread may get it back only after the
//     cleanup, on another CPU, has already unregistered the devices;
//   - gone: when ndst's namespace saw RTM_DELLINK of the host ends of the
//     namespace's veth pairs (the kernel unregisters them with the
//     namespace's own devices, in one batch); a namespace without a veth
//     pair of its own gets a marker pair before the timing starts when it
//     is the last deleted. It is read when ndst's listener got the
//     message, which is at or after the kernel sent it;
//   - done: when the kernel's cleanup_net run that took the namespace
//     ended, from the workqueue tracepoints (package wqtrace), the run
//     identified by the RTM_DELNSID it sent for the namespace as it
//     started: the last run that started before that message arrived and
//     not before the namespace's delete was called. Where the tracepoints
//     cannot be used, a marker namespace, deleted once the namespace's
//     cleanup has started, starts its own cleanup only when that run has
//     returned (the cleanup work is ordered), and its RTM_DELNSID marks the
//     end.
//
// The three are ordered by what causes what (the delete returns before the
// cleanup that unregisters the devices ends), so a namespace whose times
// are not returned <= gone <= done was not observed well enough: the time
// out of order is left unknown with the reason, never reported.
//
// Every wait is bounded (netnsGiveUp); a cleanup that does not end in time
// is a stuck result, with the kernel's log lines and a verdict.

// netnsGiveUp bounds the wait for a delete's cleanup: 60 s and 10 ms per
// namespace.
func netnsGiveUp(n int) time.Duration { return 60*time.Second + time.Duration(n)*10*time.Millisecond }

// The observers; tests replace them to take the paths without tracepoints.
var (
	openCleanupWatch = wqtrace.Open
	openCallWatch    = calltrace.Open
)

// nsTarget is one namespace a delete takes.
type nsTarget struct {
	name     string
	id       nsID
	nsid     int   // its id in ndst's namespace (-1: none)
	peers    []int // host ends of its veth pairs in ndst's namespace
	called   int64 // CLOCK_MONOTONIC just before its unmount was called
	returned int64 // CLOCK_MONOTONIC when its unmount returned, read after it (0: not deleted)
	deleted  bool
}

// NetnsDel implements ndst.NetnsBackend.
func (b *Backend) NetnsDel(ctx context.Context, req ndst.NetnsDelRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	b.probeHost()
	if err := ndst.CheckRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	if req.Template.IsZero() {
		req.Template = ndst.MustNetnsTemplate(ndst.DefaultNetnsTemplate)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The locks first, then the scan: a second netns del of the same
	// range waits for the first and finds what is left.
	unlock, err := b.beginChange(ctx, "netns del")
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
		return nil, fmt.Errorf("netns del: list %s: %w", netnsDir, err)
	}
	existing, cleaned := pruneLocked(existing)
	var targets []*nsTarget
	var foreign []string
	type numbered struct {
		k int
		n namespace
	}
	var inRange []numbered
	for _, n := range existing {
		if k := req.Template.Number(n.Name); k >= req.Start && k <= req.Stop {
			inRange = append(inRange, numbered{k, n})
		}
	}
	slices.SortFunc(inRange, func(a, b numbered) int { return a.k - b.k })
	for _, x := range inRange {
		if root, _ := rootNamespace(x.n.ID); x.n.Ours && !root && x.n.ID != b.id {
			targets = append(targets, &nsTarget{name: x.n.Name, id: x.n.ID, nsid: -1})
		} else {
			foreign = append(foreign, x.n.Name)
		}
	}
	skippedNote := ""
	if len(foreign) > 0 {
		skippedNote = fmt.Sprintf("%s in the range not created by ndst left alone: %s", plural(len(foreign), "namespace"), joinNames(foreign))
	}
	if len(targets) == 0 {
		if skippedNote != "" {
			skippedNote = "; " + skippedNote
		}
		return nil, fmt.Errorf("%w: ndst created none named %s with a number in %d..%d%s", ndst.ErrNoNetns, req.Template, req.Start, req.Stop, skippedNote)
	}
	res := b.newResult("netns-del")
	defer b.hostFacts(res)
	res.Skipped = len(foreign)
	for _, n := range cleaned.notes() {
		b.notef(res, "%s", n)
	}
	if n := identityNote(); n != "" {
		b.notef(res, "%s", n)
	}
	if skippedNote != "" {
		res.Notes = append(res.Notes, skippedNote)
	}
	klog := b.openKernelLog(res)
	defer klog.close()
	d := &nsDelete{b: b, res: res, klog: &klog, targets: targets, oneByOne: req.OneByOne, cni: req.CNI}
	if err := d.prepare(); err != nil {
		d.close()
		return fail(res, fmt.Errorf("netns del: %w; nothing was deleted", err))
	}
	err = d.run(ctx)
	if ferr := d.forget(); err == nil {
		err = ferr
	}
	d.close()
	d.report()
	klog.attach(res)
	switch {
	case errors.Is(err, ndst.ErrStuck):
		return res, err
	case err != nil:
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("netns del interrupted: %w", err)
		}
		return fail(res, fmt.Errorf("%w (deleted %d of %d namespaces, each whole; a rerun deletes the rest)", err, res.Count, len(targets)))
	}
	return res, nil
}

// nsDelete is one netns del in progress.
type nsDelete struct {
	b        *Backend
	res      *ndst.Result
	klog     *kernelLog
	targets  []*nsTarget
	oneByOne bool
	// cni deletes each target's veth from inside it first, and cniDel is
	// how long each of those deletes took (netnsdelcni_linux.go).
	cni    bool
	cniDel []int64

	mon     *nsMonitor
	wq      *wqtrace.Watcher
	calls   *calltrace.Watcher // the deleting thread's umount2 returns
	markers []*markerNs        // fallback for done, in order of use
	used    int                // markers deleted so far
	pending *markerNs          // the marker deleted for the wait in progress
	// kernelTimes is how many targets' returned is the kernel's.
	kernelTimes int
	t0, t1      int64 // CLOCK_MONOTONIC at the first delete and when waiting ended
	gaveUp      time.Duration
	// doneAt is each target's cleanup end, 0 until seen; runOf its run.
	doneAt []int64
	runOf  []int
	// runNS is each run's duration, by run.
	runNS      map[int]int64
	markerVeth string
}

// prepare finds each target's nsid and veth peers in ndst's namespace and
// starts the observers, before the timing starts.
func (d *nsDelete) prepare() error {
	b := d.b
	fds := make([]int, 0, len(d.targets))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, t := range d.targets {
		fd, err := unix.Open(nsPath(t.name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", nsPath(t.name), err)
		}
		fds = append(fds, fd)
		if id, err := fdID(fd); err != nil || id != t.id || !isNetnsFD(fd) {
			return fmt.Errorf("%s changed while ndst read it (deleted or replaced by another program?)", nsPath(t.name))
		}
	}
	ids, err := b.c.getNsids(fds, ackTimeout)
	if err != nil {
		return fmt.Errorf("read the namespaces' ids: %w", err)
	}
	var missing []int
	for i, id := range ids {
		if id < 0 {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		var m msg
		sent := map[uint32]int{}
		for _, i := range missing {
			seq := b.c.nextSeq()
			appendNsid(&m, unix.RTM_NEWNSID, seq, fds[i])
			sent[seq] = i
		}
		if err := b.c.send(m.b); err != nil {
			return err
		}
		if err := b.c.barrier(sent, time.Now().Add(ackTimeout), func(int, error) {}); err != nil {
			return err
		}
		if ids, err = b.c.getNsids(fds, ackTimeout); err != nil {
			return err
		}
	}
	byNsid := map[int]*nsTarget{}
	for i, t := range d.targets {
		t.nsid = ids[i]
		if t.nsid >= 0 {
			byNsid[t.nsid] = t
		}
	}
	links, err := b.dump()
	if err != nil {
		return err
	}
	for _, l := range links {
		if t := byNsid[l.PeerNsid]; t != nil && l.Kind == "veth" {
			t.peers = append(t.peers, l.Index)
		}
	}
	last := d.targets[len(d.targets)-1]
	if len(last.peers) == 0 {
		if ifindex, name, err := b.markerVeth(last, fds[len(fds)-1], links); err == nil {
			last.peers = []int{ifindex}
			d.markerVeth = name
		} else {
			b.notef(d.res, "no marker veth pair for when the devices are gone: %v", err)
		}
	}
	if d.mon, err = startMonitor(b.ns); err != nil {
		return fmt.Errorf("listen for the namespaces' teardown: %w", err)
	}
	if d.wq, err = openCleanupWatch("cleanup_net"); err != nil {
		n := 1
		if d.oneByOne {
			n = len(d.targets)
		}
		b.notef(d.res, "cleanup end from marker namespaces (the workqueue tracepoints cannot be used: %v): each one deleted adds its own cleanup run", err)
		for range n {
			m, err := b.newMarker()
			if err != nil {
				return fmt.Errorf("make a marker namespace: %w", err)
			}
			d.markers = append(d.markers, m)
		}
	}
	d.doneAt = make([]int64, len(d.targets))
	d.runOf = make([]int, len(d.targets))
	d.runNS = map[int]int64{}
	return nil
}

// run deletes the targets and waits for their cleanup, on one OS thread
// whose umount2 returns the kernel records (package calltrace).
func (d *nsDelete) run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var err error
	if d.calls, err = openCallWatch(unix.Gettid(), unix.SYS_UMOUNT2); err != nil {
		d.b.notef(d.res, "returned read in user space after each delete (the system call tracepoint cannot be used: %v)", err)
		d.calls = nil
	}
	d.t0 = sender.Monotonic()
	defer func() {
		d.t1 = sender.Monotonic()
		d.kernelTimes = d.kernelReturns()
	}()
	limit := netnsGiveUp(len(d.targets))
	for i, t := range d.targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.cni {
			took, err := cniDelVeth(t)
			if err != nil {
				return err
			}
			d.cniDel = append(d.cniDel, int64(took))
			t.peers = nil // gone: its veth went before the namespace
		}
		if err := removeNamespace(t); err != nil {
			return err
		}
		if d.oneByOne {
			if err := d.wait(ctx, d.targets[i:i+1], limit); err != nil {
				return err
			}
		}
	}
	if d.oneByOne {
		return nil
	}
	return d.wait(ctx, d.targets, limit)
}

// removeNamespace deletes one namespace as `ip netns del` does.
func removeNamespace(t *nsTarget) error {
	p := nsPath(t.name)
	if id, ok := mountedNetns(p); !ok || id != t.id {
		return fmt.Errorf("%s changed before it was deleted (by another program?); left alone", p)
	}
	t.called = sender.Monotonic()
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	t.returned, t.deleted = sender.Monotonic(), true
	hook("netns-unmounted", 0)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// forget removes the ownership records of the namespaces deleted, once
// the deletes and the wait are over, whatever their outcome: a record is
// ndst's bookkeeping, not part of `ip netns del`, and removing it between
// two deletes would time a file system's unlink as the kernel's delete
// (where /run is on disk, as ext4: 0.1-0.4 ms each, and spread). A
// process killed before this leaves records without their namespaces,
// which the next command prunes (netnsown_linux.go).
func (d *nsDelete) forget() error {
	var first error
	for _, t := range d.targets {
		if !t.deleted {
			continue
		}
		if err := removeRecord(t.name); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// wait waits until the cleanup of every namespace of ts is done, at most
// limit from the first one's delete.
func (d *nsDelete) wait(ctx context.Context, ts []*nsTarget, limit time.Duration) error {
	deadline := time.Duration(ts[0].returned) + limit
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if d.allDone(ts) {
			return nil
		}
		now := time.Duration(sender.Monotonic())
		if now > deadline {
			d.gaveUp = now - time.Duration(ts[0].returned)
			return d.stuck(ts)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.mon.changed:
		case <-tick.C:
		}
		d.klog.read()
	}
}

// allDone reports whether the cleanup of every namespace of ts was seen to
// end (see the file's comment), noting when.
func (d *nsDelete) allDone(ts []*nsTarget) bool {
	if d.wq != nil {
		// When each RTM_DELNSID arrived, read before the tracepoints: a
		// run's start is recorded before it sends the message, so every
		// run that started before an arrival read here is in runs.
		started := make([]int64, len(ts))
		for j, t := range ts {
			started[j] = d.mon.started(t.nsid)
		}
		runs := d.wq.Poll()
		all := true
		for j, t := range ts {
			i := d.index(t)
			if d.doneAt[i] != 0 {
				continue
			}
			if started[j] == 0 {
				all = false
				continue
			}
			// The run that took it: the last to start before its
			// RTM_DELNSID arrived, and not before its delete was called.
			k := -1
			for r := range runs {
				if runs[r].Start <= started[j] {
					k = r
				}
			}
			if k < 0 || runs[k].Start < t.called || runs[k].End == 0 {
				all = false
				continue
			}
			d.doneAt[i], d.runOf[i] = runs[k].End, k
			d.runNS[k] = runs[k].End - runs[k].Start
		}
		return all
	}
	// Markers: once every namespace of ts is being cleaned up, delete the
	// next marker, once for this wait; its cleanup starts when theirs has
	// returned.
	if d.pending == nil {
		for _, t := range ts {
			if d.mon.started(t.nsid) == 0 {
				return false
			}
		}
		if d.used >= len(d.markers) {
			return false // cannot happen: one marker per wait
		}
		d.pending = d.markers[d.used]
		d.pending.delete()
		d.used++
	}
	at := d.mon.started(d.pending.nsid)
	if at == 0 {
		return false
	}
	for _, t := range ts {
		d.doneAt[d.index(t)] = at
	}
	d.pending = nil
	return true
}

func (d *nsDelete) index(t *nsTarget) int { return slices.Index(d.targets, t) }

// stuck makes the result a stuck one: the cleanup of ts did not end in time.
func (d *nsDelete) stuck(ts []*nsTarget) error {
	res := d.res
	d.klog.read()
	var names []string
	for _, t := range ts {
		if d.doneAt[d.index(t)] == 0 {
			names = append(names, t.name)
		}
	}
	e := evidence{waited: d.gaveUp, waiting: d.klog.nwait}
	if l, err := membarrier.Measure(gpSamples); err == nil {
		e.gp, e.gpSamples = l.Median(), len(l.Samples)
	} else {
		e.gpErr = err.Error()
	}
	if h := d.b.Host(); h.CPUs == 1 && h.HZ > 0 {
		e.gp, e.gpSamples, e.gpErr = time.Second/time.Duration(h.HZ), 0, ""
	}
	res.Verdict = judge(e)
	res.Stuck = d.klog.stuckDevices()
	res.Result = ndst.ResultStuck
	res.Error = fmt.Sprintf("gave up after %s waiting for the kernel's cleanup of %s; %s; verdict %s",
		dur(d.gaveUp), joinNames(names), d.klog.named(), res.Verdict.Kind)
	res.Explain = append(res.Explain, res.Verdict.Why)
	return fmt.Errorf("%w: %s", ndst.ErrStuck, res.Error)
}

// nsTimes is one namespace's three times (CLOCK_MONOTONIC ns; 0: unknown).
type nsTimes struct{ returned, gone, done int64 }

// ordered returns t with every time that breaks returned <= gone <= done
// made unknown, and why (empty when all known times are in order). The
// order is causal (see the file's comment), so a time out of it was
// observed too late or matched to the wrong event, and is never reported.
func ordered(t nsTimes) (nsTimes, string) {
	var why string
	if t.done != 0 && t.done < t.returned {
		t.done = 0
		why = "its cleanup's end was seen before its delete returned (matched to another run)"
	}
	switch {
	case t.gone == 0:
	case t.gone < t.returned:
		t.gone = 0
		why = "its devices were gone before ndst saw the delete return (a time read in user space, late on a busy CPU)"
	case t.done != 0 && t.gone > t.done:
		t.gone = 0
		why = "the RTM_DELLINK reached ndst only after the cleanup had ended (ndst's listener waited for a CPU)"
	}
	return t, why
}

// kernelReturns gives each deleted target the time its umount2 returned as
// the kernel recorded it (the k-th return on the deleting thread is the
// k-th delete called); a return that is missing (the kernel dropped the
// record) or not within the call as seen from user space leaves the
// user-space time. It returns how many targets have a kernel time.
func (d *nsDelete) kernelReturns() int {
	if d.calls == nil {
		return 0
	}
	times, _ := d.calls.Returns()
	k, n := 0, 0
	for _, t := range d.targets {
		if t.called == 0 {
			continue
		}
		if k < len(times) && times[k] >= t.called && (t.returned == 0 || times[k] <= t.returned) {
			if t.deleted {
				t.returned = times[k]
				n++
			}
		}
		k++
	}
	return n
}

// report fills the result's times.
func (d *nsDelete) report() {
	res := d.res
	style := ndst.StyleAllAtOnce
	if d.oneByOne {
		style = ndst.StyleOneByOne
	}
	if d.cni {
		style = ndst.StyleCNI
	}
	kernelTimes := d.kernelTimes
	n := &ndst.NetnsTimes{Style: style}
	if d.cni {
		n.CNIDelete = ndst.Summarize(d.cniDel)
		d.b.notef(res, "gone is not measured with --cni: each pod's veth, whose host end's RTM_DELLINK marks it, went before its namespace (the veth deletes are timed on their own)")
	}
	var gone, done []int64
	var lastReturned, lastGone, lastDone int64
	allGone, allDone := true, true
	deleted := 0
	dropped := map[string]int{}
	for i, t := range d.targets {
		if !t.deleted {
			continue
		}
		deleted++
		g := int64(0)
		for _, p := range t.peers {
			if at := d.mon.gone(p); at > 0 {
				g = max(g, at)
			} else {
				g = -1
				break
			}
		}
		tt, why := ordered(nsTimes{returned: t.returned, gone: max(g, 0), done: d.doneAt[i]})
		if why != "" {
			dropped[why]++
			if g > 0 && tt.gone == 0 {
				g = -1
			}
		}
		lastReturned = max(lastReturned, tt.returned)
		switch {
		case g > 0:
			gone = append(gone, tt.gone-tt.returned)
			lastGone = max(lastGone, tt.gone)
		case i == len(d.targets)-1 || g < 0:
			allGone = false
		}
		if tt.done > 0 {
			done = append(done, tt.done-tt.returned)
			lastDone = max(lastDone, tt.done)
		} else {
			allDone = false
		}
	}
	n.Namespaces = deleted
	res.Count = deleted
	rel := func(x int64) *int64 { v := x - d.t0; return &v }
	if deleted > 0 {
		n.ReturnedNS = *rel(lastReturned)
		if allGone && lastGone > 0 {
			n.GoneNS = rel(lastGone)
		}
		if allDone && lastDone > 0 {
			n.DoneNS = rel(lastDone)
		}
	}
	if len(gone) == deleted {
		n.Gone = ndst.Summarize(gone)
	}
	if d.wq != nil && allDone && deleted > 0 {
		n.Done = ndst.Summarize(done)
		sizes := map[int]int{}
		var order []int
		for i, t := range d.targets {
			if t.deleted {
				if _, ok := sizes[d.runOf[i]]; !ok {
					order = append(order, d.runOf[i])
				}
				sizes[d.runOf[i]]++
			}
		}
		slices.Sort(order)
		batches := len(order)
		n.Batches = &batches
		for _, k := range order {
			n.BatchSizes = append(n.BatchSizes, sizes[k])
			n.BatchNS = append(n.BatchNS, d.runNS[k])
		}
	}
	res.Netns = n
	if allDone {
		res.Latency = ndst.Summarize(done)
	}
	res.WallNS = d.t1 - d.t0
	res.Counters = map[string]int64{"namespaces_deleted": int64(deleted)}
	if n.Batches != nil {
		res.Counters["cleanup_runs"] = int64(*n.Batches)
	}
	for _, why := range slices.Sorted(maps.Keys(dropped)) {
		res.Notes = append(res.Notes, fmt.Sprintf("a time of %s left unknown: %s", plural(dropped[why], "namespace"), why))
	}
	if lost := d.mon.lostEvents(); lost > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the kernel dropped %d notifications ndst listened for: some times are unknown", lost))
	}
	how := "done from the workqueue tracepoints (the end of each cleanup_net run)"
	if d.wq == nil {
		how = "done from marker namespaces"
	}
	goneHow := "gone from RTM_DELLINK of the host ends of their veth pairs"
	if d.markerVeth != "" {
		goneHow = fmt.Sprintf("gone from RTM_DELLINK of a marker veth pair (%s) in the last namespace", d.markerVeth)
	}
	retHow := "returned when the umount2 call returned (its sys_exit tracepoint)"
	switch {
	case kernelTimes == 0:
		retHow = "returned read in user space after each umount2 call"
	case kernelTimes < deleted:
		retHow = fmt.Sprintf("returned when the umount2 call returned (its sys_exit tracepoint; read in user space for %d of %d)", deleted-kernelTimes, deleted)
	}
	res.Notes = append(res.Notes, "times: "+retHow+"; "+goneHow+"; "+how)
}

func (d *nsDelete) close() {
	if d.mon != nil {
		d.mon.close()
	}
	if d.wq != nil {
		d.wq.Close()
	}
	if d.calls != nil {
		d.calls.Close()
	}
	for _, m := range d.markers {
		m.delete()
	}
}

// markerNs is an unnamed namespace held only by a descriptor: closing it is
// its delete.
type markerNs struct {
	fd      int
	nsid    int
	deleted bool
}

// newMarker makes an empty namespace with an nsid in ndst's namespace.
func (b *Backend) newMarker() (*markerNs, error) {
	fdc := make(chan int, 1)
	errc := make(chan error, 1)
	go onThrowawayThread(errc, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return err
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		fdc <- fd
		return err
	})
	if err := <-errc; err != nil {
		return nil, err
	}
	m := &markerNs{fd: <-fdc, nsid: -1}
	var msg_ msg
	seq := b.c.nextSeq()
	appendNsid(&msg_, unix.RTM_NEWNSID, seq, m.fd)
	if err := b.c.send(msg_.b); err != nil {
		m.delete()
		return nil, err
	}
	_ = b.c.barrier(map[uint32]int{seq: 0}, time.Now().Add(ackTimeout), func(int, error) {})
	ids, err := b.c.getNsids([]int{m.fd}, ackTimeout)
	if err != nil || ids[0] < 0 {
		m.delete()
		return nil, fmt.Errorf("no nsid for the marker namespace (%v)", err)
	}
	m.nsid = ids[0]
	runtime.KeepAlive(m)
	return m, nil
}

func (m *markerNs) delete() {
	if !m.deleted {
		unix.Close(m.fd)
		m.deleted = true
	}
}

// markerVeth adds a veth pair to namespace t (open at nsfd): its inner end
// ndstmark, its host end in ndst's namespace named ndstmark%d, so that the
// host end's RTM_DELLINK tells when t's devices are gone.
func (b *Backend) markerVeth(t *nsTarget, nsfd int, links []link) (int, string, error) {
	tmpl, _ := ndst.ParseTemplate("ndstmark%d")
	names, err := freeLinkNames(tmpl, links, 1)
	if err != nil {
		return 0, "", err
	}
	c, err := dialAt(netns.NsHandle(nsfd))
	if err != nil {
		return 0, "", err
	}
	defer c.close()
	var m msg
	seq := c.nextSeq()
	appendVethTo(&m, seq, "ndstmark", names[0], GroupOwned, int(b.ns))
	if err := c.send(m.b); err != nil {
		return 0, "", err
	}
	var first error
	if err := c.barrier(map[uint32]int{seq: 0}, time.Now().Add(ackTimeout), func(_ int, e error) { first = e }); err != nil {
		return 0, "", err
	}
	if first != nil {
		return 0, "", first
	}
	after, err := b.dump()
	if err != nil {
		return 0, "", err
	}
	for _, l := range after {
		if l.Name == names[0] {
			return l.Index, names[0], nil
		}
	}
	return 0, "", errors.New("the marker's host end did not appear")
}
