package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/ndst-project/ndst/phase"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Del implements ndst.Backend (see the package doc).
func (b *Backend) Del(ctx context.Context, req ndst.DelRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	b.probeHost()
	if err := ndst.CheckRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := b.beginChange(ctx, "del")
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The sender (a process, the first time) starts while the listing runs.
	senderReady := make(chan struct{})
	go func() {
		defer close(senderReady)
		_, _ = b.sender() // startWatch reports a failure
	}()
	links, err := b.dump()
	<-senderReady
	if err != nil {
		return nil, fmt.Errorf("del: list devices in namespace %s: %w", b.o.Netns, err)
	}
	hook("del-listed", len(links))
	res := b.newResult("del")
	defer b.hostFacts(res)
	res.Batched = !req.OneByOne && !req.Stream
	sel, extraPeers, skipped := selectLinks(links, req)
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
	release, err := b.startHolds(res, sel)
	if err != nil {
		if ndst.IsUsage(err) {
			return nil, err
		}
		return fail(res, err)
	}
	defer release()
	w, err := b.startWatch(res, req.Attribute)
	if err != nil {
		return fail(res, fmt.Errorf("del: %w", err))
	}
	switch {
	case req.Stream:
		err = b.delStream(ctx, req.GiveUp, res, links, sel)
	case req.OneByOne:
		err = b.delOneByOne(ctx, w, req.GiveUp, res, links, sel)
	default:
		err = b.delBatch(ctx, w, req.GiveUp, res, links, sel)
	}
	err = w.finish(err)
	if errors.Is(err, ndst.ErrStuck) {
		return res, err
	}
	if err == nil && b.vanished() {
		err = b.errVanished("del")
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("del interrupted: %w", err)
			counted := b.recount(res, sel)
			switch {
			case !counted && w.inFlight > 0:
				return fail(res, fmt.Errorf("%w (deleted %d of %d devices, and the request in flight, %s, goes on in the kernel, which does not stop a delete half way; "+
					"'ndst list' shows what is left, and a rerun deletes it)", err, res.Count, len(sel), w.inFlightWhat))
			case counted && res.Count >= len(sel):
				return fail(res, fmt.Errorf("%w, but the request in flight finished in the kernel: all %d devices were deleted", err, len(sel)))
			}
		}
		return fail(res, fmt.Errorf("%w (deleted %d of %d devices; a rerun continues)", err, res.Count, len(sel)))
	}
	b.log.Debug("del", zap.Int("count", res.Count), zap.Bool("batched", res.Batched), zap.Duration("wall", time.Duration(res.WallNS)))
	return res, nil
}

// recountTimeout bounds the listing of an interrupted delete's recount,
// so that a signal still ends the command within a second or so.
const recountTimeout = 700 * time.Millisecond

// recount corrects the count of an interrupted delete: the request in
// flight when the signal came was not acknowledged, yet the kernel goes on
// with it, so the devices of sel that a listing taken afterwards no longer
// shows (less those someone else removed, counted as vanished) are the
// ones deleted. Without the listing (it timed out) the count stays at the
// acknowledged requests, and a note says it may be short by one request;
// recount then returns false.
func (b *Backend) recount(res *ndst.Result, sel []link) bool {
	var links []link
	err := b.bounded(recountTimeout+100*time.Millisecond, "list links", func() error {
		var err error
		links, err = b.c.dumpLinks(1, recountTimeout)
		return err
	})
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the count is of the acknowledged requests: the one in flight when interrupted may have deleted more (listing afterwards failed: %v)", err))
		return false
	}
	present := make(map[int]bool, len(links))
	for _, l := range links {
		present[l.Index] = true
	}
	gone := 0
	for _, l := range sel {
		if !present[l.Index] {
			gone++
		}
	}
	gone -= int(res.Counters["vanished"])
	if gone > res.Count {
		res.Notes = append(res.Notes, fmt.Sprintf("%s more than acknowledged: the request in flight when interrupted went on in the kernel (counted from a listing afterwards)", plural(gone-res.Count, "device")))
		res.Count = gone
	}
	return true
}

// giveUpAfter is how long one delete request of n devices is waited for:
// giveUp when set (--give-up), else requestTimeout plus perDevice each.
func giveUpAfter(giveUp time.Duration, n int) time.Duration {
	if giveUp > 0 {
		return giveUp
	}
	return requestTimeout + time.Duration(n)*perDevice
}

// selectLinks returns the owned links with ifindex in [start, stop] plus the
// owned veth peers of those (extra counts them), ordered by ifindex, and the
// number of foreign links in the range (including veths whose peer is not
// ndst's to delete).
func selectLinks(links []link, req ndst.DelRequest) (sel []link, extra, skipped int) {
	start, stop := req.Start, req.Stop
	byIndex := make(map[int]link, len(links))
	for _, l := range links {
		byIndex[l.Index] = l
	}
	chosen := map[int]bool{}
	for _, l := range links {
		if l.Index < start || l.Index > stop || !req.Selects(l.Name) {
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
			if ok && (p.Index < start || p.Index > stop || !req.Selects(p.Name)) && !chosen[p.Index] {
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

// maxGroupDeletes bounds the group deletes of one batched del: a range
// that covers more whole groups than this is moved to one group instead.
const maxGroupDeletes = 4

// wholeGroups returns the interface groups of sel when sel is exactly every
// link of those groups, at most maxGroupDeletes of them; else nil.
func wholeGroups(links, sel []link) []uint32 {
	inSel := map[uint32]int{}
	for _, l := range sel {
		inSel[l.Group]++
	}
	if len(inSel) > maxGroupDeletes {
		return nil
	}
	for _, l := range links {
		if inSel[l.Group] > 0 {
			inSel[l.Group]--
		} else if _, ok := inSel[l.Group]; ok {
			return nil // a link of the group outside sel
		}
	}
	groups := make([]uint32, 0, len(inSel))
	for _, l := range sel {
		if !slices.Contains(groups, l.Group) {
			groups = append(groups, l.Group)
		}
	}
	return groups
}

// delBatch deletes exactly the links of sel, listed under the namespace
// lock, with one RTM_DELLINK per interface group. A group holds only the
// links of one add (or of one earlier delete's move), which no other add
// ever joins, so when sel is every link of its groups (at most
// maxGroupDeletes of them) those groups are deleted as they are. Otherwise
// sel is first moved to a group unique to this delete (pipelined
// RTM_SETLINKs) and that group is deleted: a link created after the
// listing, by anyone, is in neither.
func (b *Backend) delBatch(ctx context.Context, w *watch, giveUp time.Duration, res *ndst.Result, links []link, sel []link) error {
	groups := wholeGroups(links, sel)
	requests := 0
	start := time.Now()
	moved := len(sel)
	if groups == nil {
		group := freeGroup(links)
		groups = []uint32{group}
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
		res.Counters = map[string]int64{"moved": int64(moved)}
	} else {
		res.Counters = map[string]int64{}
	}
	count := map[uint32]int{}
	for _, l := range sel {
		count[l.Group]++
	}
	var del, cpu int64
	for _, group := range groups {
		var m msg
		seq := b.c.nextSeq()
		appendDelLink(&m, seq, 0, group)
		requests++
		n := count[group]
		if len(groups) == 1 {
			n = moved
		}
		r, err := w.call(ctx, sender.Request{Op: sender.OpNetlink, File: senderSocket, Seq: seq, Data: m.b},
			giveUpAfter(giveUp, n), phase.Unregister, fmt.Sprintf("%s in one batch (%s)", plural(n, "device"), groupNames(sel, group, len(groups) == 1)), n)
		if err == nil {
			err = r.Err()
			del += r.T1 - r.T0
			cpu += r.CPU1 - r.CPU0
		}
		if err != nil {
			res.WallNS = int64(time.Since(start))
			res.Counters["netlink_requests"] = int64(requests)
			return fmt.Errorf("delete interface group %d: %w", group, err)
		}
		res.Count += n
	}
	res.WallNS = int64(time.Since(start))
	res.Counters["netlink_requests"] = int64(requests)
	res.Counters["batches"] = int64(len(groups))
	res.Counters["group_delete_ns"] = del
	res.Counters["group_delete_cpu_ns"] = cpu
	return nil
}

// groupNames names the devices of sel that one group delete takes (all of
// sel when they were moved to one group), the first three and how many more.
func groupNames(sel []link, group uint32, all bool) string {
	var names []string
	for _, l := range sel {
		if all || l.Group == group {
			names = append(names, l.Name)
		}
	}
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// freeGroup picks an owned group that no link uses, at random so that
// ndst processes that do not share a lock (none should) rarely collide.
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
		sent := make(map[uint32]int, end-i)
		for j := i; j < end; j++ {
			seq := b.c.nextSeq()
			appendSetGroup(&m, seq, sel[j].Index, group)
			sent[seq] = j
		}
		// One datagram carries the whole window: the kernel handles each
		// message in turn and answers only failures (see barrier). It
		// runs under a timeout (RTNL waits); its goroutine writes only its
		// own counters, read once it has finished.
		requests += end - i
		n := end - i
		var firstErr error
		err := b.bounded(ackTimeout+time.Second, "move devices", func() error {
			if err := b.c.send(m.b); err != nil {
				return err
			}
			return b.c.barrier(sent, time.Now().Add(ackTimeout), func(j int, e error) {
				n--
				if !errors.Is(e, unix.ENODEV) && firstErr == nil {
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
// waiting for each like `ip link del` (through the library, in the
// sender), and records each one's latency as the sender timed it.
func (b *Backend) delOneByOne(ctx context.Context, w *watch, giveUp time.Duration, res *ndst.Result, links []link, sel []link) error {
	gone := map[int]bool{}
	var lat []int64
	requests := 0
	vanished := 0
	start := time.Now()
	res.Counters = map[string]int64{}
	defer func() {
		res.WallNS = int64(time.Since(start))
		res.Latency = ndst.Summarize(lat)
		res.Counters["netlink_requests"] = int64(requests)
		res.Counters["batches"] = int64(requests)
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
		n, what := 1, fmt.Sprintf("%s (ifindex %d)", l.Name, l.Index)
		if p, ok := byIndex[l.Peer]; ok && l.Kind == "veth" && l.Peer != l.Index {
			gone[p.Index] = true
			n, what = 2, fmt.Sprintf("%s (ifindex %d) and its peer %s", l.Name, l.Index, p.Name)
		}
		gone[l.Index] = true
		r, err := w.call(ctx, sender.Request{Op: sender.OpLinkDel, File: senderNetns, Ifindex: int32(l.Index)},
			giveUpAfter(giveUp, n), phase.Unregister, what, n)
		requests++
		if err != nil {
			return fmt.Errorf("delete %s: %w", what, err)
		}
		switch err := r.Err(); {
		case err == nil:
			res.Count += n
			lat = append(lat, r.T1-r.T0)
			hook("del-one", res.Count)
		case errors.Is(err, unix.ENODEV):
			vanished += n
		default:
			return fmt.Errorf("delete %s: %w", what, err)
		}
	}
	return nil
}

// RequestGaps times the gaps of a one-by-one delete's loop without deleting
// anything: n delete requests for an ifindex that no device has, which the
// kernel rejects at once (ENODEV), sent as delOneByOne sends its requests
// (through the watch and the sender, the kernel log read after each). Each
// gap is the time from one request's reply in the sender to the next
// request's send, in the sender's clock: ndst's own work between two
// requests (the reply's way back, the loop, the next request's way to the
// sender), which every request of a one-by-one delete pays on top of the
// kernel's.
func (b *Backend) RequestGaps(ctx context.Context, n int) ([]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	res := b.newResult("del")
	res.Counters = map[string]int64{}
	w, err := b.startWatch(res, false)
	if err != nil {
		return nil, fmt.Errorf("request gaps: %w", err)
	}
	defer w.close()
	var gaps []int64
	var last int64
	for i := 0; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := w.call(ctx, sender.Request{Op: sender.OpLinkDel, File: senderNetns, Ifindex: 1<<31 - 1},
			requestTimeout, phase.Unregister, "no device (a rejected request)", 0)
		if err != nil {
			return nil, fmt.Errorf("request gaps: %w", err)
		}
		if err := r.Err(); !errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("request gaps: a delete of ifindex %d answered %v, want ENODEV", 1<<31-1, err)
		}
		if i > 0 {
			gaps = append(gaps, r.T0-last)
		}
		last = r.T1
	}
	return gaps, nil
}
