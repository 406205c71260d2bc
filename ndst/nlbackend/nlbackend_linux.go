package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Bounds on every wait (see the package doc, "Faults").
const (
	dumpTries      = 10               // interrupted dumps are retried this often
	dumpTimeout    = 30 * time.Second // one dump
	ackTimeout     = 30 * time.Second // one window of acknowledgements
	requestTimeout = 60 * time.Second // one delete (one-by-one) or group delete, plus perDevice each
	perDevice      = 5 * time.Millisecond
	// window is how many requests are written before their
	// acknowledgements are read; the receive buffer holds far more.
	window = 256
)

// Backend is the netlink backend: one namespace, one netlink.Handle and one
// raw rtnetlink socket in it. Its methods are safe for concurrent use (they
// run one at a time).
type Backend struct {
	o       Options
	log     *zap.Logger
	ns      netns.NsHandle
	id      nsID
	created bool // Open created the namespace
	h       *netlink.Handle
	c       *conn
	// host is probed in the background from Open (reading the kernel
	// configuration takes a millisecond or two); hostReady closes then.
	host      HostFacts
	hostReady chan struct{}

	mu sync.Mutex
	// noDummy is set once the kernel refused kind dummy.
	noDummy bool
	// broken is set when a kernel request outlived its timeout: its
	// goroutine may still use the socket, so nothing else may.
	broken error
}

var _ ndst.Backend = (*Backend)(nil)

// Open validates o, checks privileges, opens (or creates) the namespace and
// the sockets in it.
func Open(ctx context.Context, o Options) (*Backend, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkPrivileges(); err != nil {
		return nil, err
	}
	ns, created, err := openNetns(o.Netns, !o.NoCreate)
	if err != nil {
		if o.NoCreate && errors.Is(err, errNoNetns) {
			return nil, fmt.Errorf("network namespace %q does not exist, so it has no devices ('ndst --backend netlink add N' creates it)", o.Netns)
		}
		return nil, err
	}
	b, err := openOn(o, ns)
	if err != nil {
		ns.Close()
		if created { // leave nothing behind
			_ = removeNetns(o.Netns)
		}
		return nil, err
	}
	b.created = created
	if created {
		o.Logger.Debug("created network namespace", zap.String("netns", o.Netns))
	}
	return b, nil
}

// openOn builds a Backend on an open namespace handle (which it then owns).
func openOn(o Options, ns netns.NsHandle) (*Backend, error) {
	id, err := fdID(int(ns))
	if err != nil {
		return nil, err
	}
	if root, err := rootNSID(); err == nil && root == id && !o.AllowRootNS {
		return nil, ndst.Usagef("network namespace %q is the host's root namespace; ndst refuses to work there unless --i-really-mean-the-root-namespace is given", o.Netns)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open a netlink socket in namespace %s: %w", o.Netns, err)
	}
	if err := h.SetSocketTimeout(requestTimeout); err != nil {
		h.Close()
		return nil, err
	}
	c, err := dialAt(ns)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("open a netlink socket in namespace %s: %w", o.Netns, err)
	}
	b := &Backend{o: o, log: o.Logger, ns: ns, id: id, h: h, c: c, hostReady: make(chan struct{})}
	go func() {
		b.host = ProbeHost()
		close(b.hostReady)
	}()
	return b, nil
}

// Name implements ndst.Backend.
func (b *Backend) Name() string { return "netlink" }

// Netns returns the namespace's name.
func (b *Backend) Netns() string { return b.o.Netns }

// Created reports whether Open created the namespace.
func (b *Backend) Created() bool { return b.created }

// Host returns what was read about the host when the backend was opened.
func (b *Backend) Host() HostFacts {
	<-b.hostReady
	return b.host
}

// Close implements ndst.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	// After a timeout a goroutine may still be inside the kernel with one
	// of the sockets; closing it would wait for that goroutine. The
	// sockets then go with the process.
	if b.h != nil && b.broken == nil {
		b.h.Close()
	}
	if b.c != nil && b.broken == nil {
		b.c.close()
	}
	b.h, b.c = nil, nil
	if b.ns.IsOpen() {
		b.ns.Close()
		b.ns = netns.None()
	}
	return nil
}

// ready returns an error when the backend cannot take requests.
func (b *Backend) ready() error {
	if b.broken != nil {
		return b.broken
	}
	if b.c == nil {
		return errors.New("netlink backend is closed")
	}
	return nil
}

// vanished reports whether the namespace's name no longer refers to the
// namespace this backend works in (someone ran `ip netns del`).
func (b *Backend) vanished() bool {
	id, err := statID(nsPath(b.o.Netns))
	return err != nil || id != b.id
}

func (b *Backend) errVanished(op string) error {
	return fmt.Errorf("network namespace %q was deleted or replaced during %s (by `ip netns del`?); rerun to start afresh", b.o.Netns, op)
}

// newResult fills the fields every netlink Result shares.
func (b *Backend) newResult(op string) *ndst.Result {
	r := &ndst.Result{Op: op, Backend: "netlink", Result: ndst.ResultOK}
	<-b.hostReady
	if b.host.HZ > 0 {
		hz := b.host.HZ
		r.HZ = &hz
	}
	if b.host.CPUs > 0 {
		cpus := b.host.CPUs
		r.CPUs = &cpus
	}
	if b.host.Preempt != "" {
		p := b.host.Preempt
		r.Preempt = &p
	}
	return r
}

func fail(r *ndst.Result, err error) (*ndst.Result, error) {
	r.Result = ndst.ResultError
	r.Error = err.Error()
	return r, err
}

func (b *Backend) notef(r *ndst.Result, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.Notes = append(r.Notes, s)
	b.o.note("%s", s)
}

// threadCPU is the calling OS thread's CPU time in ns (user and system).
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// bounded runs fn, giving up after timeout. On timeout fn's goroutine may
// still be inside the kernel with the socket, so the backend is marked broken.
func (b *Backend) bounded(timeout time.Duration, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		b.broken = fmt.Errorf("%s: the kernel did not answer within %v; the request may still complete", what, timeout)
		return b.broken
	}
}

// dump lists the namespace's links with the lean dump.
func (b *Backend) dump() ([]link, error) {
	var links []link
	err := b.bounded(dumpTries*dumpTimeout+time.Second, "list links", func() error {
		var err error
		links, err = b.c.dumpLinks(dumpTries, dumpTimeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	return links, nil
}

// testHook, when set (by tests only), is called at points where a test
// may interfere: "add-window" (after each window of creates, n = links
// created so far), "move-window" (after each window of group moves),
// "del-one" (after each one-by-one delete, n = deleted so far) and
// "add-names" (after names are chosen, before any is created).
var testHook func(event string, n int)

func hook(event string, n int) {
	if testHook != nil {
		testHook(event, n)
	}
}

// unit is what one create request makes: one link, or a veth pair.
type unit struct{ name, peer string }

// allocate picks count names from t with the lowest numbers not used by a
// name in links.
func allocate(t ndst.Template, links []link, count int) ([]string, error) {
	used := make(map[int]bool, len(links))
	for _, l := range links {
		if n := t.Number(l.Name); n >= 0 {
			used[n] = true
		}
		for _, a := range l.AltNames {
			if n := t.Number(a); n >= 0 {
				used[n] = true
			}
		}
	}
	max := t.MaxNumber()
	names := make([]string, 0, count)
	for n := 0; len(names) < count; n++ {
		if n > max || n < 0 {
			return nil, ndst.Usagef("name template %q has room for only %d more names (numbers up to %d fit in 15 bytes); cannot add %d",
				t.String(), len(names), max, count)
		}
		if !used[n] {
			names = append(names, t.Name(n))
		}
	}
	return names, nil
}

// Add implements ndst.Backend: it creates req.Count links (see the package
// doc for veth and the dummy fallback).
func (b *Backend) Add(ctx context.Context, req ndst.AddRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	if req.Count < 1 || req.Count > ndst.MaxCount {
		return nil, ndst.Usagef("count must be in 1..%d, got %d", ndst.MaxCount, req.Count)
	}
	tmpl := req.Template
	if tmpl == (ndst.Template{}) {
		tmpl, _ = ndst.ParseTemplate(ndst.DefaultTemplate)
	}
	kind, explicit := b.o.Kind, b.o.KindExplicit
	if req.Kind != "" && req.Kind != kind {
		if err := ValidateKind(req.Kind); err != nil {
			return nil, err
		}
		kind, explicit = req.Kind, true
	}
	if kind == "veth" && req.Count%2 != 0 {
		return nil, ndst.Usagef("veth devices come in pairs: add %d with kind veth needs an even count (N devices = N/2 pairs)", req.Count)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.vanished() {
		return nil, b.errVanished("add")
	}
	links, err := b.dump()
	if err != nil {
		return nil, fmt.Errorf("add: list devices in namespace %s: %w", b.o.Netns, err)
	}
	names, err := allocate(tmpl, links, req.Count)
	if err != nil {
		return nil, err
	}
	units := make([]unit, 0, len(names))
	if kind == "veth" {
		// The kernel registers the peer first: giving it the lower
		// number keeps names and ifindexes in the same order.
		for i := 0; i < len(names); i += 2 {
			units = append(units, unit{name: names[i+1], peer: names[i]})
		}
	} else {
		for _, n := range names {
			units = append(units, unit{name: n})
		}
	}
	hook("add-names", 0)
	res := b.newResult("add")
	if b.created {
		res.Notes = append(res.Notes, fmt.Sprintf("created network namespace %s", b.o.Netns))
	}
	if kind == "dummy" && b.noDummy {
		if explicit {
			return fail(res, errNoDummy())
		}
		kind = "ifb"
	}
	res.Kind = kind

	perUnit := 1
	if kind == "veth" {
		perUnit = 2
		res.Notes = append(res.Notes, fmt.Sprintf("%d veth pairs (%d devices)", len(units), req.Count))
	}
	lat := make([]int64, len(units))
	ok := make([]bool, len(units))
	var firstErr error
	requests := 0
	var m msg
	start := time.Now()
	probe := kind == "dummy" // the first request finds out whether dummy exists
	for i := 0; i < len(units) && firstErr == nil; {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		end := min(i+window, len(units))
		if probe {
			end = i + 1
		}
		// The window runs under a timeout: a create waits for the RTNL
		// lock inside the kernel. Its goroutine writes only w, which is
		// merged once it has finished.
		w := addWindow{lat: make([]int64, end-i), ok: make([]bool, end-i), errAt: -1}
		err := b.bounded(ackTimeout+time.Second, "create links", func() error {
			return b.createWindow(&w, &m, kind, units[i:end], ackTimeout)
		})
		if err != nil {
			requests += end - i
			firstErr = fmt.Errorf("add: %w (the outcome of the last %d requests is unknown)", err, end-i)
			break
		}
		requests += w.sent
		copy(lat[i:end], w.lat)
		copy(ok[i:end], w.ok)
		firstErr = w.err
		if w.sent < end-i && w.err == nil {
			end = i + w.sent
		}
		hook("add-window", countOK(ok)*perUnit)
		if probe {
			probe = false
			if firstErr != nil && errors.Is(firstErr, unix.EOPNOTSUPP) {
				b.noDummy = true
				if explicit {
					firstErr = errNoDummy()
					break
				}
				kind = "ifb"
				res.Kind = kind
				b.notef(res, "this kernel has no dummy link type; using ifb (choose with --kind)")
				firstErr = nil
				continue // retry the same unit as ifb
			}
		}
		i = end
	}
	res.WallNS = int64(time.Since(start))
	var okLat []int64
	for j := range units {
		if ok[j] {
			res.Count += perUnit
			okLat = append(okLat, lat[j])
		}
	}
	res.Latency = ndst.Summarize(okLat)
	res.Counters = map[string]int64{"netlink_requests": int64(requests)}
	if firstErr == nil && b.vanished() {
		firstErr = b.errVanished("add")
	}
	if firstErr != nil {
		if errors.Is(firstErr, context.Canceled) || errors.Is(firstErr, context.DeadlineExceeded) {
			firstErr = fmt.Errorf("add interrupted: %w", firstErr)
		}
		return fail(res, fmt.Errorf("%w (created %d of %d devices; each is whole, a rerun continues)", firstErr, res.Count, req.Count))
	}
	b.log.Debug("add", zap.Int("count", res.Count), zap.String("kind", kind), zap.Duration("wall", time.Duration(res.WallNS)))
	return res, nil
}

// addWindow is the outcome of one window of creates.
type addWindow struct {
	lat   []int64
	ok    []bool
	sent  int
	err   error // the first failure, at index errAt of the window
	errAt int
}

// createWindow sends one RTM_NEWLINK per unit, timing each send (the kernel
// creates the link inside it), then reads the acknowledgements.
func (b *Backend) createWindow(w *addWindow, m *msg, kind string, units []unit, timeout time.Duration) error {
	want := make(map[uint32]int, len(units))
	for j, u := range units {
		m.b = m.b[:0]
		seq := b.c.nextSeq()
		appendNewLink(m, seq, kind, u.name, u.peer, GroupOwned)
		t0 := time.Now()
		err := b.c.send(m.b)
		w.lat[j] = int64(time.Since(t0))
		if err != nil {
			w.err, w.errAt = fmt.Errorf("send RTM_NEWLINK for %s: %w", u.name, err), j
			break
		}
		w.sent++
		want[seq] = j
	}
	return b.c.acks(want, time.Now().Add(timeout), func(j int, err error) {
		if err == nil {
			w.ok[j] = true
			return
		}
		if w.err == nil || j < w.errAt {
			w.err, w.errAt = b.createError(units[j], kind, err), j
		}
	})
}

func countOK(ok []bool) int {
	n := 0
	for _, v := range ok {
		if v {
			n++
		}
	}
	return n
}

func errNoDummy() error {
	return errors.New("this kernel has no dummy link type (EOPNOTSUPP) and --kind dummy was given; use --kind ifb or veth")
}

// createError explains a failed RTM_NEWLINK.
func (b *Backend) createError(u unit, kind string, err error) error {
	name := u.name
	if u.peer != "" {
		name += "/" + u.peer
	}
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("create %s: a device with that name already exists in namespace %s: %w", name, b.o.Netns, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("create %s: not permitted (CAP_NET_ADMIN in namespace %s): %w", name, b.o.Netns, err)
	}
	return fmt.Errorf("create %s (%s): %w", name, kind, err)
}

// Del implements ndst.Backend (see the package doc).
func (b *Backend) Del(ctx context.Context, req ndst.DelRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	if req.Start < 1 || req.Start > req.Stop {
		return nil, ndst.Usagef("bad range %d %d; want 1 <= START <= STOP", req.Start, req.Stop)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.vanished() {
		return nil, b.errVanished("del")
	}
	links, err := b.dump()
	if err != nil {
		return nil, fmt.Errorf("del: list devices in namespace %s: %w", b.o.Netns, err)
	}
	res := b.newResult("del")
	res.Batched = !req.OneByOne
	sel, extraPeers, skipped := selectLinks(links, req.Start, req.Stop)
	res.Skipped = skipped
	if len(sel) == 0 {
		owned := 0
		for _, l := range links {
			if Owned(l.Group) {
				owned++
			}
		}
		return fail(res, fmt.Errorf("del %d %d: %w created by ndst in namespace %s (it has %s; %s not created by ndst left alone)",
			req.Start, req.Stop, ndst.ErrNoDevices, b.o.Netns, plural(owned, "such device"), plural(skipped, "device")))
	}
	if extraPeers > 0 {
		with := "with their pairs"
		if extraPeers == 1 {
			with = "with its pair"
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s outside the range deleted %s", plural(extraPeers, "veth peer"), with))
	}
	if skipped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s in the range not created by ndst (such as lo) left alone", plural(skipped, "device")))
	}
	res.Kind = kindOf(sel)
	if req.OneByOne {
		err = b.delOneByOne(ctx, res, links, sel)
	} else {
		err = b.delBatch(ctx, res, links, sel)
	}
	if err == nil && b.vanished() {
		err = b.errVanished("del")
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("del interrupted: %w", err)
		}
		return fail(res, fmt.Errorf("%w (deleted %d of %d devices; a rerun continues)", err, res.Count, len(sel)))
	}
	b.log.Debug("del", zap.Int("count", res.Count), zap.Bool("batched", res.Batched), zap.Duration("wall", time.Duration(res.WallNS)))
	return res, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// selectLinks returns the owned links with ifindex in [start, stop] plus the
// owned veth peers of those (extra counts them), ordered by ifindex, and the
// number of foreign links in the range (including veths whose peer is not
// ndst's to delete).
func selectLinks(links []link, start, stop int) (sel []link, extra, skipped int) {
	byIndex := make(map[int]link, len(links))
	for _, l := range links {
		byIndex[l.Index] = l
	}
	chosen := map[int]bool{}
	for _, l := range links {
		if l.Index < start || l.Index > stop {
			continue
		}
		if !Owned(l.Group) {
			skipped++
			continue
		}
		if l.Kind == "veth" {
			p, ok := byIndex[l.Peer]
			if l.Peer > 0 && (!l.PeerHere || !ok || !Owned(p.Group)) {
				// Deleting this end would delete a peer that is not ours.
				skipped++
				continue
			}
			if ok && (p.Index < start || p.Index > stop) && !chosen[p.Index] {
				chosen[p.Index] = true
				extra++
			}
		}
		chosen[l.Index] = true
	}
	for _, l := range links {
		if chosen[l.Index] {
			sel = append(sel, l)
		}
	}
	sort.Slice(sel, func(i, j int) bool { return sel[i].Index < sel[j].Index })
	return sel, extra, skipped
}

func kindOf(sel []link) string {
	k := ""
	for _, l := range sel {
		switch {
		case k == "":
			k = l.Kind
		case k != l.Kind:
			return "mixed"
		}
	}
	return k
}

// delBatch deletes sel with one RTM_DELLINK on an interface group. When sel
// is exactly one whole group it is deleted as it is; otherwise sel is first
// moved to a private, unused group (pipelined RTM_SETLINKs).
func (b *Backend) delBatch(ctx context.Context, res *ndst.Result, links []link, sel []link) error {
	group, whole := sel[0].Group, true
	inGroup := 0
	for _, l := range links {
		if l.Group == group {
			inGroup++
		}
	}
	for _, l := range sel {
		if l.Group != group {
			whole = false
		}
	}
	whole = whole && inGroup == len(sel)
	requests := 0
	start := time.Now()
	moved := len(sel)
	if !whole {
		group = freeGroup(links)
		var err error
		moved, requests, err = b.moveToGroup(ctx, sel, group)
		if err != nil {
			res.WallNS = int64(time.Since(start))
			res.Counters = map[string]int64{"netlink_requests": int64(requests), "moved": int64(moved)}
			if moved > 0 {
				return fmt.Errorf("%w; nothing was deleted (%d devices were moved to group %d and remain ndst's)", err, moved, group)
			}
			return fmt.Errorf("%w; nothing was deleted", err)
		}
	}
	var m msg
	seq := b.c.nextSeq()
	appendDelLink(&m, seq, 0, group)
	requests++
	timeout := requestTimeout + time.Duration(len(sel))*perDevice
	t0 := time.Now()
	var cpu atomic.Int64
	err := b.bounded(timeout+time.Second, "delete group", func() error {
		// The kernel handles the request in this thread's send: its CPU
		// clock counts that work and not the sleeps in between.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU()
		err := b.c.request(&m, seq, timeout)
		cpu.Store(threadCPU() - c0)
		return err
	})
	del := time.Since(t0)
	res.WallNS = int64(time.Since(start))
	res.Counters = map[string]int64{"netlink_requests": int64(requests), "batches": 1, "group_delete_ns": int64(del),
		"group_delete_cpu_ns": cpu.Load()}
	if !whole {
		res.Counters["moved"] = int64(moved)
	}
	if err != nil {
		return fmt.Errorf("delete interface group %d: %w", group, err)
	}
	res.Count = moved
	return nil
}

// freeGroup picks an owned group that no link uses.
func freeGroup(links []link) uint32 {
	used := map[uint32]bool{GroupOwned: true}
	for _, l := range links {
		used[l.Group] = true
	}
	for {
		g := OwnedGroupMin + uint32(rand.IntN(int(OwnedGroupMax-OwnedGroupMin))) + 1
		if !used[g] {
			return g
		}
	}
}

// moveToGroup moves sel to group with pipelined RTM_SETLINKs and returns
// how many moved. Links that vanished meanwhile (ENODEV) are not counted.
func (b *Backend) moveToGroup(ctx context.Context, sel []link, group uint32) (moved, requests int, err error) {
	var m msg
	for i := 0; i < len(sel); {
		if err := ctx.Err(); err != nil {
			return moved, requests, err
		}
		end := min(i+window, len(sel))
		m.b = m.b[:0]
		want := make(map[uint32]int, end-i)
		for j := i; j < end; j++ {
			seq := b.c.nextSeq()
			appendSetGroup(&m, seq, sel[j].Index, group)
			want[seq] = j
		}
		// One datagram carries the whole window: the kernel handles each
		// message in turn and queues one acknowledgement per message. It
		// runs under a timeout (RTNL waits); its goroutine writes only its
		// own counters, read once it has finished.
		requests += end - i
		var n int
		var firstErr error
		err := b.bounded(ackTimeout+time.Second, "move devices", func() error {
			if err := b.c.send(m.b); err != nil {
				return err
			}
			return b.c.acks(want, time.Now().Add(ackTimeout), func(j int, e error) {
				switch {
				case e == nil:
					n++
				case errors.Is(e, unix.ENODEV):
				case firstErr == nil:
					firstErr = fmt.Errorf("move %s to group %d: %w", sel[j].Name, group, e)
				}
			})
		})
		if err != nil {
			return moved, requests, fmt.Errorf("move devices to group %d: %w", group, err)
		}
		moved += n
		if firstErr != nil {
			return moved, requests, firstErr
		}
		hook("move-window", moved)
		i = end
	}
	return moved, requests, nil
}

// delOneByOne deletes each link (each veth pair) with its own RTM_DELLINK,
// waiting for each like `ip link del`.
func (b *Backend) delOneByOne(ctx context.Context, res *ndst.Result, links []link, sel []link) error {
	gone := map[int]bool{}
	var lat []int64
	requests := 0
	vanished := 0
	start := time.Now()
	defer func() {
		res.WallNS = int64(time.Since(start))
		res.Latency = ndst.Summarize(lat)
		res.Counters = map[string]int64{"netlink_requests": int64(requests), "batches": int64(requests)}
		if vanished > 0 {
			res.Counters["vanished"] = int64(vanished)
		}
	}()
	byIndex := make(map[int]link, len(links))
	for _, l := range links {
		byIndex[l.Index] = l
	}
	for _, l := range sel {
		if gone[l.Index] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n := 1
		if p, ok := byIndex[l.Peer]; ok && l.Kind == "veth" && l.Peer != l.Index {
			gone[p.Index] = true
			n = 2
		}
		gone[l.Index] = true
		dev := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: l.Index, Name: l.Name}}
		t0 := time.Now()
		err := b.bounded(requestTimeout+time.Second, "delete "+l.Name, func() error { return b.h.LinkDel(dev) })
		d := int64(time.Since(t0))
		requests++
		switch {
		case err == nil:
			res.Count += n
			lat = append(lat, d)
			hook("del-one", res.Count)
		case errors.Is(err, unix.ENODEV):
			vanished += n
		default:
			return fmt.Errorf("delete %s (ifindex %d): %w", l.Name, l.Index, err)
		}
	}
	return nil
}

// RoundTrips times n netlink requests that the kernel rejects at once (an
// RTM_GETLINK for an ifindex no device has). Each is timed like a create in
// Add: the send alone, inside which rtnetlink handles the request, so the
// figure is the cost of one user/kernel round trip carrying a request,
// without the work the request would do.
func (b *Backend) RoundTrips(n int) ([]time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, n)
	var m msg
	for range n {
		m.b = m.b[:0]
		seq := b.c.nextSeq()
		off := m.begin(unix.RTM_GETLINK, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq)
		m.ifinfo(1<<31 - 1)
		m.end(off)
		t0 := time.Now()
		err := b.c.send(m.b)
		d := time.Since(t0)
		var answer error
		if err == nil {
			err = b.c.acks(map[uint32]int{seq: 0}, time.Now().Add(ackTimeout), func(_ int, e error) { answer = e })
		}
		if err == nil && answer != nil && !errors.Is(answer, unix.ENODEV) {
			err = answer
		}
		if err != nil {
			return out, fmt.Errorf("netlink round trip: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// List implements ndst.Backend: every device of the namespace, ordered by
// ifindex. PageSize is ignored (the kernel pages the dump itself).
func (b *Backend) List(ctx context.Context, req ndst.ListRequest) ([]ndst.Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.vanished() {
		return nil, b.errVanished("list")
	}
	var links []netlink.Link
	err := b.bounded(dumpTimeout*dumpTries, "list links", func() error {
		for range dumpTries {
			var err error
			links, err = b.h.LinkList()
			if !errors.Is(err, netlink.ErrDumpInterrupted) {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return errDumpKeptChanging
	})
	if err != nil {
		return nil, fmt.Errorf("list devices in namespace %s: %w", b.o.Netns, err)
	}
	devs := make([]ndst.Device, 0, len(links))
	for _, l := range links {
		devs = append(devs, deviceOf(l))
	}
	slices.SortFunc(devs, func(a, b ndst.Device) int { return a.Ifindex - b.Ifindex })
	return devs, nil
}

func deviceOf(l netlink.Link) ndst.Device {
	a := l.Attrs()
	d := ndst.Device{Name: a.Name, Ifindex: a.Index, Kind: l.Type(), State: "down", Foreign: !Owned(a.Group)}
	if a.EncapType == "loopback" {
		d.Kind = "loopback"
	} else if d.Kind == "device" {
		d.Kind = ""
	}
	if a.Flags&net.FlagUp != 0 {
		d.State = "up"
	}
	return d
}

// Reset deletes the namespace o.Netns like `ip netns del`, but first
// deletes its devices itself so that they are gone when Reset returns: every
// ndst link with one group delete per interface group, then any other
// virtual device one by one (they would die with the namespace anyway; a
// notice names them). Each request returns once its devices are freed and
// is bounded by a timeout. lo and physical devices are left to the kernel.
// A namespace that does not exist is not an error.
func Reset(ctx context.Context, o Options) error {
	o, err := o.normalize()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkPrivileges(); err != nil {
		return err
	}
	p := nsPath(o.Netns)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		o.note("network namespace %s does not exist; nothing to reset", o.Netns)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reset: open %s: %w", p, err)
	}
	if !isNetnsFD(fd) { // a stale file from an interrupted creation
		unix.Close(fd)
		return removeNetns(o.Netns)
	}
	b, err := openOn(o, netns.NsHandle(fd))
	if err != nil {
		unix.Close(fd)
		return err
	}
	err = b.deleteAll()
	b.Close()
	if err != nil {
		return fmt.Errorf("reset %s: %w", o.Netns, err)
	}
	return removeNetns(o.Netns)
}

// deleteAll deletes every ndst link, one group delete per group, then the
// other virtual devices one by one.
func (b *Backend) deleteAll() error {
	links, err := b.dump()
	if err != nil {
		return err
	}
	groups := map[uint32]int{}
	for _, l := range links {
		if Owned(l.Group) {
			groups[l.Group]++
		}
	}
	for g, n := range groups {
		var m msg
		seq := b.c.nextSeq()
		appendDelLink(&m, seq, 0, g)
		timeout := requestTimeout + time.Duration(n)*perDevice
		err := b.bounded(timeout+time.Second, "delete group", func() error { return b.c.request(&m, seq, timeout) })
		if err != nil {
			return fmt.Errorf("delete interface group %d (%d devices): %w", g, n, err)
		}
	}
	if len(groups) > 0 {
		if links, err = b.dump(); err != nil {
			return err
		}
	}
	var others []string
	for _, l := range links {
		if Owned(l.Group) || l.Kind == "loopback" || l.Kind == "" {
			continue // lo, and devices without a link kind (physical)
		}
		var m msg
		seq := b.c.nextSeq()
		appendDelLink(&m, seq, l.Index, 0)
		err := b.bounded(requestTimeout+time.Second, "delete "+l.Name, func() error { return b.c.request(&m, seq, requestTimeout) })
		switch {
		case err == nil:
			others = append(others, l.Name)
		case errors.Is(err, unix.ENODEV), errors.Is(err, unix.EOPNOTSUPP):
		default:
			return fmt.Errorf("delete %s: %w", l.Name, err)
		}
	}
	if len(others) > 0 {
		b.o.note("reset: also deleted %s not created by ndst: %s", plural(len(others), "device"), strings.Join(others, ", "))
	}
	return nil
}
