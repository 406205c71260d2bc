package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

// del --stream on the real kernel: every link's RTM_DELLINK (a veth pair's
// once), each asking for its acknowledgement, written in one datagram, then
// the answers read: the kernel's netlink_rcv_skb handles the messages one
// after the other, each under its own rtnl_lock, so each is its own
// unregister and its own netdev_run_todo, with no return to user space in
// between.

// oneByOneBound is what each request of a stream adds to its bound: a
// delete's grace periods and barriers, with room.
const oneByOneBound = 2 * time.Second

// delStream deletes sel as one request stream.
func (b *Backend) delStream(ctx context.Context, giveUp time.Duration, res *ndst.Result, links []link, sel []link) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	byIndex := make(map[int]link, len(links))
	for _, l := range links {
		byIndex[l.Index] = l
	}
	gone := map[int]bool{}
	var m msg
	sent := map[uint32]int{}
	devices := 0
	for i, l := range sel {
		if gone[l.Index] {
			continue
		}
		n := 1
		if p, ok := byIndex[l.Peer]; ok && l.Kind == "veth" && l.Peer != l.Index {
			gone[p.Index] = true
			n = 2
		}
		gone[l.Index] = true
		s := b.c.nextSeq()
		sent[s] = i
		appendDelLink(&m, s, l.Index, 0)
		devices += n
	}
	// Every request is a one-by-one delete's: each its own give-up time.
	limit := giveUpAfter(0, devices) + time.Duration(len(sent))*oneByOneBound
	if giveUp > 0 {
		limit = time.Duration(len(sent)) * giveUp
	}
	start := time.Now()
	res.Stream = true
	res.Counters = map[string]int64{"netlink_requests": int64(len(sent)), "batches": int64(len(sent))}
	if err := b.c.send(m.b); err != nil {
		return fmt.Errorf("send %d RTM_DELLINKs: %w", len(sent), err)
	}
	failed, vanished := 0, 0
	var first error
	err := b.bounded(limit+time.Second, "delete stream", func() error {
		return b.c.barrier(sent, time.Now().Add(limit), func(i int, e error) {
			if errors.Is(e, unix.ENODEV) {
				vanished++
				return
			}
			failed++
			if first == nil {
				first = fmt.Errorf("delete %s: %w", sel[i].Name, e)
			}
		})
	})
	res.WallNS = int64(time.Since(start))
	if err != nil {
		return fmt.Errorf("%w (the stream's outcome is unknown after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	res.Count = devices - failed - vanished
	if vanished > 0 {
		res.Counters["vanished"] = int64(vanished)
	}
	return first
}
