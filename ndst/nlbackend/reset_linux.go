package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ResetNamespace deletes the namespace o.Netns like `ip netns del`, but
// first deletes its devices itself so that they are gone when it returns:
// every ndst link with one group delete per interface group, then any other
// virtual device one by one (they would die with the namespace anyway; the
// report names them). Each request returns once its devices are freed and
// is bounded by a timeout. lo and physical devices are left to the kernel,
// which returns physical ones to the root namespace. It holds the namespace
// lock throughout. A namespace that does not exist is not an error: the
// report says so. The host's root namespace is refused unless
// o.AllowRootNS; even then only ndst's own devices there are deleted.
func ResetNamespace(ctx context.Context, o Options) (*ResetReport, error) {
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
	start := time.Now()
	rep := &ResetReport{Op: "reset", Backend: "netlink", Result: "ok", Netns: o.Netns, Path: nsPath(o.Netns)}
	defer func() { rep.WallNS = int64(time.Since(start)) }()
	p := nsPath(o.Netns)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return rep, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reset: open %s: %w", p, err)
	}
	rep.Existed = true
	if !isNetnsFD(fd) { // a stale file from an interrupted creation
		var st unix.Stat_t
		ferr := unix.Fstat(fd, &st)
		unix.Close(fd)
		if ferr != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 0 {
			return nil, fmt.Errorf("reset: %s is neither a network namespace nor the empty file an interrupted `ip netns add` leaves; not removing it", p)
		}
		rep.Stale = true
		return rep, removeNetns(o.Netns)
	}
	b, err := openOn(o, netns.NsHandle(fd))
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	defer b.Close()
	if b.root != "" && !o.AllowRootNS {
		return nil, b.errRootNS("reset")
	}
	unlock, err := lockNetns(ctx, int(b.ns), o.Netns, o.WaitLock)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if b.vanished() { // deleted by another reset while we waited
		rep.Existed = false
		return rep, nil
	}
	if err := b.deleteAll(ctx, rep); err != nil {
		return nil, fmt.Errorf("reset %s: %w (deleted %d devices of ndst's so far)", o.Netns, err, rep.Deleted)
	}
	if b.root != "" {
		rep.Root = true // the name is removed; the namespace itself lives on
	}
	return rep, removeNetns(o.Netns)
}

// Reset is ResetNamespace without the report.
func Reset(ctx context.Context, o Options) error {
	_, err := ResetNamespace(ctx, o)
	return err
}

// deleteAll deletes every ndst link, one group delete per group, then
// (except in the root namespace) the other virtual devices one by one.
func (b *Backend) deleteAll(ctx context.Context, rep *ResetReport) error {
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
		if err := ctx.Err(); err != nil {
			return err
		}
		var m msg
		seq := b.c.nextSeq()
		appendDelLink(&m, seq, 0, g)
		timeout := requestTimeout + time.Duration(n)*perDevice
		err := b.bounded(timeout+time.Second, "delete group", func() error { return b.c.request(&m, seq, timeout) })
		if err != nil {
			return fmt.Errorf("delete interface group %d (%d devices): %w", g, n, err)
		}
		rep.Deleted += n
	}
	if len(groups) > 0 {
		if links, err = b.dump(); err != nil {
			return err
		}
	}
	for _, l := range links {
		if Owned(l.Group) || l.Kind == "loopback" {
			continue
		}
		if l.Kind == "" { // no link kind: a physical device
			rep.Returned = append(rep.Returned, l.Name)
			continue
		}
		if b.root != "" {
			continue // the host's devices are never touched
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var m msg
		seq := b.c.nextSeq()
		appendDelLink(&m, seq, l.Index, 0)
		err := b.bounded(requestTimeout+time.Second, "delete "+l.Name, func() error { return b.c.request(&m, seq, requestTimeout) })
		switch {
		case err == nil:
			rep.Foreign = append(rep.Foreign, l.Name)
		case errors.Is(err, unix.ENODEV), errors.Is(err, unix.EOPNOTSUPP):
		default:
			return fmt.Errorf("delete %s: %w", l.Name, err)
		}
	}
	if b.root != "" {
		rep.Returned = nil
	}
	return nil
}
