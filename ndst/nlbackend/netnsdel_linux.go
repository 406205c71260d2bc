package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
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
//   - returned: when the unmount returned;
//   - gone: when ndst's namespace saw RTM_DELLINK of the host ends of the
//     namespace's veth pairs (the kernel unregisters them with the
//     namespace's own devices, in one batch); a namespace without a veth
//     pair of its own gets a marker pair before the timing starts when it
//     is the last deleted;
//   - done: when the kernel's cleanup_net run that took the namespace
//     ended, from the workqueue tracepoints (package wqtrace), the run
//     identified by the RTM_DELNSID it sent for the namespace as it
//     started. Where the tracepoints cannot be used, a marker namespace,
//     deleted once the last namespace's cleanup has started, starts its
//     own cleanup only when that run has returned (the cleanup work is
//     ordered), and its RTM_DELNSID marks the end.
//
// Every wait is bounded (netnsGiveUp); a cleanup that does not end in time
// is a stuck result, with the kernel's log lines and a verdict.

// netnsGiveUp bounds the wait for a delete's cleanup: 60 s and 10 ms per
// namespace.
func netnsGiveUp(n int) time.Duration { return 60*time.Second + time.Duration(n)*10*time.Millisecond }

// nsTarget is one namespace a delete takes.
type nsTarget struct {
	name     string
	id       nsID
	nsid     int   // its id in ndst's namespace (-1: none)
	peers    []int // host ends of its veth pairs in ndst's namespace
	returned int64 // CLOCK_MONOTONIC when its unmount returned (0: not deleted)
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
	d := &nsDelete{b: b, res: res, klog: &klog, targets: targets, oneAtATime: req.OneAtATime}
	if err := d.prepare(); err != nil {
		d.close()
		return fail(res, fmt.Errorf("netns del: %w; nothing was deleted", err))
	}
	err = d.run(ctx)
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
	b          *Backend
	res        *ndst.Result
	klog       *kernelLog
	targets    []*nsTarget
	oneAtATime bool

	mon     *nsMonitor
	wq      *wqtrace.Watcher
	markers []*markerNs // fallback for done, in order of use
	used    int         // markers deleted so far
	t0, t1  int64       // CLOCK_MONOTONIC at the first delete and when waiting ended
	gaveUp  time.Duration
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
	if d.wq, err = wqtrace.Open("cleanup_net"); err != nil {
		n := 1
		if d.oneAtATime {
			n = len(d.targets)
		}
		b.notef(d.res, "cleanup end from marker namespaces (%v): each one deleted adds its own cleanup run", err)
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

// run deletes the targets and waits for their cleanup.
func (d *nsDelete) run(ctx context.Context) error {
	d.t0 = sender.Monotonic()
	defer func() { d.t1 = sender.Monotonic() }()
	limit := netnsGiveUp(len(d.targets))
	for i, t := range d.targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := removeNamespace(t); err != nil {
			return err
		}
		if d.oneAtATime {
			if err := d.wait(ctx, d.targets[i:i+1], limit); err != nil {
				return err
			}
		}
	}
	if d.oneAtATime {
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
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	t.returned, t.deleted = sender.Monotonic(), true
	hook("netns-unmounted", 0)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return removeRecord(t.name)
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
		runs := d.wq.Poll()
		all := true
		for _, t := range ts {
			i := d.index(t)
			if d.doneAt[i] != 0 {
				continue
			}
			started := d.mon.started(t.nsid)
			if started == 0 {
				all = false
				continue
			}
			// The run that took it: the last to start before its
			// RTM_DELNSID arrived.
			k := -1
			for j, r := range runs {
				if r.Start <= started {
					k = j
				}
			}
			if k < 0 || runs[k].End == 0 {
				all = false
				continue
			}
			d.doneAt[i], d.runOf[i] = runs[k].End, k
			d.runNS[k] = runs[k].End - runs[k].Start
		}
		return all
	}
	// Markers: once every namespace of ts is being cleaned up, delete the
	// next marker; its cleanup starts when theirs has returned.
	for _, t := range ts {
		if d.mon.started(t.nsid) == 0 {
			return false
		}
	}
	m := d.markers[min(d.used, len(d.markers)-1)]
	if !m.deleted {
		m.delete()
		d.used++
	}
	at := d.mon.started(m.nsid)
	if at == 0 {
		return false
	}
	for _, t := range ts {
		d.doneAt[d.index(t)] = at
	}
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

// report fills the result's times.
func (d *nsDelete) report() {
	res := d.res
	style := ndst.StyleAllAtOnce
	if d.oneAtATime {
		style = ndst.StyleOneAtATime
	}
	n := &ndst.NetnsTimes{Style: style}
	var gone, done []int64
	var lastReturned, lastGone, lastDone int64
	allGone, allDone := true, true
	deleted := 0
	for i, t := range d.targets {
		if !t.deleted {
			continue
		}
		deleted++
		lastReturned = max(lastReturned, t.returned)
		g := int64(0)
		for _, p := range t.peers {
			if at := d.mon.gone(p); at > 0 {
				g = max(g, at)
			} else {
				g = -1
				break
			}
		}
		switch {
		case g > 0:
			gone = append(gone, g-t.returned)
			lastGone = max(lastGone, g)
		case i == len(d.targets)-1 || g < 0:
			allGone = false
		}
		if d.doneAt[i] > 0 {
			done = append(done, d.doneAt[i]-t.returned)
			lastDone = max(lastDone, d.doneAt[i])
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
	res.Latency = ndst.Summarize(done)
	res.WallNS = d.t1 - d.t0
	res.Counters = map[string]int64{"namespaces_deleted": int64(deleted)}
	if n.Batches != nil {
		res.Counters["cleanup_runs"] = int64(*n.Batches)
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
	res.Notes = append(res.Notes, "times: returned when the unmount returned; "+goneHow+"; "+how)
}

func (d *nsDelete) close() {
	if d.mon != nil {
		d.mon.close()
	}
	if d.wq != nil {
		d.wq.Close()
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
