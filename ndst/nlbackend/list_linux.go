package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

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
	if b.root != "" {
		b.o.warn("network namespace %s is the host's root namespace (%s): listing it only; add, del and reset refuse to change it", b.o.Netns, b.root)
	}
	// The lean dump: the library's LinkList would decode every attribute
	// of every link into objects, which for millions of links is gigabytes.
	links, err := b.dump()
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

// deviceOf is a listed link as a Device; its reference count is unknown
// (the kernel does not report it).
func deviceOf(l link) ndst.Device {
	d := ndst.Device{Name: l.Name, Ifindex: l.Index, Kind: l.Kind, State: "down", Foreign: !Owned(l.Group)}
	if l.Up {
		d.State = "up"
	}
	return d
}
