package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ResetAll removes what ndst made on the real kernel, and nothing else:
//
//   - in the namespace o.Netns, when it is ndst's (a namespace it did not
//     create is refused, changing nothing), ndst's own links, one group
//     delete per interface group, each request returning once its devices
//     are freed and bounded by a timeout; then the namespace itself, like
//     `ip netns del`. A namespace that still holds virtual devices ndst did
//     not create is kept, and the error names them: deleting it would
//     delete them, and a veth's peer in another namespace with them.
//     Physical devices are left to the kernel, which returns them to the
//     root namespace. The host's root namespace is refused unless
//     o.AllowRootNS; even then only ndst's own devices there are deleted
//     and the name removed;
//   - every other namespace under /run/netns that is ndst's (netns add,
//     and those of an interrupted calibrate, predict or bench), except one
//     whose creator still runs or whose lock is held (an ndst at work);
//   - the leftovers of an ndst killed while it created or deleted a
//     namespace: ownership records whose namespace is gone, and empty
//     files under /run/netns that have a record;
//   - the spare record files (recordspare_linux.go).
//
// A namespace that does not exist is not an error: the report says so.
func ResetAll(ctx context.Context, o Options) (*ResetReport, error) { return reset(ctx, o, true) }

// ResetNamespace is ResetAll for the namespace o.Netns and the leftovers
// only: what a command that made a throwaway namespace calls when it ends.
func ResetNamespace(ctx context.Context, o Options) (*ResetReport, error) {
	return reset(ctx, o, false)
}

func reset(ctx context.Context, o Options, all bool) (*ResetReport, error) {
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
	home, err := openHome(o, rep)
	if err != nil {
		return nil, err
	}
	var homeID nsID
	if home != nil {
		defer home.Close()
		homeID = home.id
		unlock, err := lockNetns(ctx, int(home.ns), o.Netns, o.WaitLock)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	unregister, err := lockRegistry(ctx, o.WaitLock)
	if err != nil {
		return nil, err
	}
	defer unregister()
	var homeErr error
	if home != nil {
		if home.vanished() { // deleted by another reset while we waited
			rep.Existed = false
		} else if homeErr = resetHome(ctx, home, rep); homeErr != nil && !rep.NamespaceKept {
			return rep, homeErr
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	existing, err := scanNetns()
	if err != nil {
		return rep, fmt.Errorf("reset: list %s: %w", netnsDir, err)
	}
	existing, cleaned := pruneLocked(existing)
	rep.Notes = append(rep.Notes, cleaned.notes()...)
	if len(cleaned.Failed) > 0 {
		return rep, fmt.Errorf("reset: could not remove ndst's leftovers: %s", joinNames(cleaned.Failed))
	}
	for _, n := range existing {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if !all || !n.Ours || n.Name == o.Netns || (homeID != nsID{} && n.ID == homeID) {
			continue
		}
		if root, _ := rootNamespace(n.ID); root {
			continue
		}
		if why := inUse(n); why != "" {
			rep.InUse = append(rep.InUse, n.Name+" ("+why+")")
			continue
		}
		if err := removeNetns(n.Name); err != nil {
			return rep, fmt.Errorf("reset: delete namespace %s: %w", n.Name, err)
		}
		rep.Namespaces = append(rep.Namespaces, n.Name)
	}
	if all {
		n, err := dropSpares()
		if n > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("removed %s under %s", plural(n, "spare record file"), spareDir()))
		}
		if err != nil {
			return rep, fmt.Errorf("reset: remove the spare record files under %s: %w", spareDir(), err)
		}
	}
	if n := identityNote(); n != "" {
		rep.Notes = append(rep.Notes, n)
	}
	if homeErr != nil {
		rep.Result, rep.Error = ndst.ResultError, homeErr.Error()
	}
	return rep, homeErr
}

// openHome opens o.Netns for reset: nil when it does not exist or was a
// leftover (removed under the registry lock later, by the prune), an error
// when it is not ndst's.
func openHome(o Options, rep *ResetReport) (*Backend, error) {
	p := nsPath(o.Netns)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reset: open %s: %w", p, err)
	}
	rep.Existed = true
	if !isNetnsFD(fd) {
		unix.Close(fd)
		if n := judgeEntry(o.Netns); n.Leftover {
			rep.Stale = true // the prune removes it
			return nil, nil
		}
		return nil, ndst.Usagef("reset: %s is not a network namespace, and ndst has no record of it (an `ip netns add` in progress, or another program's file?); not removing it", p)
	}
	b, err := openOn(o, netns.NsHandle(fd))
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	b.judgeOwnership()
	if err := b.CheckChange("reset"); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// resetHome deletes ndst's links in the home namespace, then the namespace
// unless it holds devices of someone else's.
func resetHome(ctx context.Context, b *Backend, rep *ResetReport) error {
	if err := b.deleteOwned(ctx, rep); err != nil {
		return fmt.Errorf("reset %s: %w (deleted %d devices of ndst's so far)", b.o.Netns, err, rep.Deleted)
	}
	if b.root != "" {
		rep.Root = true // the name is removed; the namespace itself lives on
		rep.Kept = nil
		return removeNetns(b.o.Netns)
	}
	if pids := processesIn(b.id); len(pids) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s still in namespace %s (pid %s): it lives on, without its name, until they leave it",
			plural(len(pids), "process"), b.o.Netns, joinNames(pids)))
	}
	if len(rep.Kept) > 0 {
		rep.Result = ndst.ResultError
		rep.NamespaceKept = true
		return fmt.Errorf("reset: network namespace %s holds %s that ndst did not create: %s; deleting the namespace would delete them "+
			"(and a veth's peer in another namespace with it), so it was kept, with ndst's %s deleted; delete those devices "+
			"(ip -n %s link del DEVICE) or the namespace (ip netns del %s) yourself, then rerun reset",
			b.o.Netns, plural(len(rep.Kept), "virtual device"), joinNames(rep.Kept), plural(rep.Deleted, "device"), b.o.Netns, b.o.Netns)
	}
	return removeNetns(b.o.Netns)
}

// deleteOwned deletes every ndst link, one group delete per group, and
// lists in rep the devices it leaves: virtual devices of others (Kept) and
// physical ones (Returned, which the kernel gives back to the root
// namespace when the namespace goes).
func (b *Backend) deleteOwned(ctx context.Context, rep *ResetReport) error {
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
	order := make([]uint32, 0, len(groups))
	for g := range groups {
		order = append(order, g)
	}
	slices.Sort(order)
	for _, g := range order {
		n := groups[g]
		if err := ctx.Err(); err != nil {
			return err
		}
		var m msg
		seq := b.c.nextSeq()
		appendDelLink(&m, seq, 0, g)
		timeout := requestTimeout + time.Duration(n)*perDevice
		err := b.bounded(timeout+time.Second, "delete group", func() error { return b.c.request(&m, seq, timeout) })
		if errors.Is(err, unix.ENODEV) {
			// The group's devices went with a group deleted before: VLANs
			// and macvlans with their lower device.
			continue
		}
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
		switch {
		case l.Kind == moduleKind && !Owned(l.Group):
			// The ndst module's own (--backend module): rtnetlink cannot
			// delete them (kmod/dev.c), they go with the namespace.
			rep.Module++
		case Owned(l.Group) || l.Kind == "loopback":
		case l.Kind == "": // no link kind: a physical device
			if b.root == "" {
				rep.Returned = append(rep.Returned, l.Name)
			}
		case b.root == "":
			name := l.Name
			if l.Kind == "veth" && !l.PeerHere && l.PeerNsid >= 0 {
				name += " (a veth whose peer is in another namespace)"
			}
			rep.Kept = append(rep.Kept, name)
		}
	}
	return nil
}

// moduleKind is the link kind of the ndst kernel module's devices
// (kmod/dev.c, modbackend.Kind): devices of ndst's, which only the module
// can delete, and which go with their namespace.
const moduleKind = "ndst"

// inUse says why reset must leave ndst's namespace n alone ("" when it may
// delete it): the ndst that created it still runs (this process
// included), or an ndst holds its lock.
func inUse(n namespace) string {
	if n.rec.creatorAlive() {
		return "its creator, " + describePID(n.rec.pid) + ", still runs"
	}
	fd, err := unix.Open(nsPath(n.Name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	unlock, err := lockNetns(context.Background(), fd, n.Name, 0)
	if err != nil {
		return "in use: " + err.Error()
	}
	unlock()
	return ""
}

// maxProcScan bounds how many processes processesIn looks at.
const maxProcScan = 1 << 16

// processesIn lists the PIDs whose network namespace is id, at most 20.
func processesIn(id nsID) []string {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(maxProcScan)
	var out []string
	for _, s := range names {
		pid, err := strconv.Atoi(s)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if got, err := statID("/proc/" + s + "/ns/net"); err == nil && got == id {
			out = append(out, s)
			if len(out) == 20 {
				break
			}
		}
	}
	return out
}

// Reset is ResetNamespace without the report.
func Reset(ctx context.Context, o Options) error {
	_, err := ResetNamespace(ctx, o)
	return err
}

// DropNamespaces deletes ndst's namespaces named by tmpl (any number),
// like `ip netns del`, without waiting for the kernel's cleanup, and
// returns how many: what a command that made namespaces for a measurement
// runs on its way out, an interruption included (it takes no context, so
// that a cancelled one still cleans up). The registry lock is waited for
// at most dropWait.
func (b *Backend) DropNamespaces(tmpl ndst.NetnsTemplate) (int, error) {
	unregister, err := lockRegistry(context.Background(), dropWait)
	if err != nil {
		return 0, err
	}
	defer unregister()
	existing, err := scanNetns()
	if err != nil {
		return 0, err
	}
	existing, _ = pruneLocked(existing)
	n := 0
	var errs []error
	for _, ns := range existing {
		if !ns.Ours || tmpl.Number(ns.Name) < 0 || ns.ID == b.id {
			continue
		}
		if err := removeNetns(ns.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// dropWait bounds DropNamespaces' wait for the registry lock.
const dropWait = 10 * time.Second
