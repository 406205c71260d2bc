package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
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

// Backend is the netlink backend: one namespace, one raw rtnetlink socket
// in it, and the sender of its deletes. Its methods are safe for concurrent use (they
// run one at a time).
type Backend struct {
	o       Options
	log     *zap.Logger
	ns      netns.NsHandle
	id      nsID
	created bool // Open created the namespace
	// owned is set when the namespace is ndst's (its ownership record
	// names it, see netnsown_linux.go); notOwned says why it is not.
	// Nothing is changed in a namespace that is not.
	owned    bool
	notOwned string
	// root is why the namespace is the host's root ("" when it is not):
	// changing it is refused unless Options.AllowRootNS.
	root string
	c    *conn
	// snd sends the delete requests (watch_linux.go), started by the first
	// delete.
	snd *sender.Sender
	// host is probed in the background from the first Add or Del
	// (probeHost); hostReady closes then.
	host      HostFacts
	hostReady chan struct{}
	probeOnce sync.Once

	mu sync.Mutex
	// made is set once an add created a link (Close keeps the namespace).
	made bool
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
	b.judgeOwnership()
	return b, nil
}

// judgeOwnership sets b.owned: the namespace at the name is ndst's and is
// the one b works in.
func (b *Backend) judgeOwnership() {
	n := judgeEntry(b.o.Netns)
	switch {
	case n.Ours && n.ID == b.id:
		b.owned = true
	case n.Ours:
		b.notOwned = "the name was bound to another namespace meanwhile"
	default:
		b.notOwned = n.Why
	}
}

// errForeign refuses to change a namespace ndst did not create.
func (b *Backend) errForeign(op string) error {
	return ndst.Usagef("network namespace %s was not created by ndst (%s); ndst does not %s in a namespace it did not create: "+
		"pass --netns a name that does not exist yet (ndst creates it), or, if %s is a leftover of an older ndst, delete it with 'ip netns del %s' first",
		b.o.Netns, b.notOwned, op, b.o.Netns, b.o.Netns)
}

// openOn builds a Backend on an open namespace handle (which it then owns).
func openOn(o Options, ns netns.NsHandle) (*Backend, error) {
	id, err := fdID(int(ns))
	if err != nil {
		return nil, err
	}
	c, err := dialAt(ns)
	if err != nil {
		return nil, fmt.Errorf("open a netlink socket in namespace %s: %w", o.Netns, err)
	}
	b := &Backend{o: o, log: o.Logger, ns: ns, id: id, c: c}
	if isRoot, why := rootNamespace(id); isRoot {
		b.root = why
	}
	return b, nil
}

// Name implements ndst.Backend.
func (b *Backend) Name() string { return "netlink" }

// Netns returns the namespace's name.
func (b *Backend) Netns() string { return b.o.Netns }

// Created reports whether Open created the namespace.
func (b *Backend) Created() bool { return b.created }

// probeHost starts the host probe (ProbeHost), once; Host and hostFacts
// wait for it. Add and Del start it when they begin, so that it runs while
// they do; a listing never pays for it.
func (b *Backend) probeHost() {
	b.probeOnce.Do(func() {
		b.hostReady = make(chan struct{})
		go func() {
			b.host = ProbeHost()
			close(b.hostReady)
		}()
	})
}

// Host returns what ProbeHost read about the host.
func (b *Backend) Host() HostFacts {
	b.probeHost()
	<-b.hostReady
	return b.host
}

// Root reports whether the namespace is the host's root namespace (the
// initial one, or PID 1's), which ndst only lists unless
// Options.AllowRootNS.
func (b *Backend) Root() bool { return b.root != "" }

// errRootNS refuses to change the host's root namespace.
func (b *Backend) errRootNS(op string) error {
	return ndst.Usagef("network namespace %s is the host's root namespace (%s); ndst does not %s there unless --i-really-mean-the-root-namespace is given",
		b.o.Netns, b.root, op)
}

// CheckChange refuses op in the host's root namespace (unless
// Options.AllowRootNS) and in a namespace ndst did not create, as the
// backend's own commands do; the module backend calls it before it makes
// the module change the namespace.
func (b *Backend) CheckChange(op string) error {
	if b.root != "" && !b.o.AllowRootNS {
		return b.errRootNS(op)
	}
	if b.root == "" && !b.owned {
		return b.errForeign(op)
	}
	return nil
}

// beginChange prepares a command that changes the namespace: it refuses
// the host's root namespace and a namespace ndst did not create, takes the
// namespace lock (see lock_linux.go)
// and checks that the name still refers to this namespace. The returned
// function releases the lock.
func (b *Backend) beginChange(ctx context.Context, op string) (func(), error) {
	if err := b.CheckChange(op); err != nil {
		return nil, err
	}
	unlock, err := lockNetns(ctx, int(b.ns), b.o.Netns, b.o.WaitLock)
	if err != nil {
		return nil, err
	}
	if b.vanished() {
		unlock()
		return nil, b.errVanished(op)
	}
	return unlock, nil
}

// Close implements ndst.Backend. A namespace that Open created and in
// which nothing was ever created (the add was refused, or failed before its
// first link) is removed again, so that such a command leaves nothing
// behind: only when its lock is free at once and it holds no device but lo.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.created && !b.made && b.broken == nil && b.c != nil {
		b.removeIfUnused()
	}
	// After a timeout a goroutine may still be inside the kernel with one
	// of the sockets; closing it would wait for that goroutine. The
	// sockets then go with the process.
	if b.c != nil && b.broken == nil {
		b.c.close()
	}
	b.c = nil
	// A sender still inside the kernel finishes by itself.
	b.snd.Close()
	b.snd = nil
	if b.ns.IsOpen() {
		b.ns.Close()
		b.ns = netns.None()
	}
	return nil
}

// removeIfUnused removes the namespace when nothing holds its lock and its
// only device is lo.
func (b *Backend) removeIfUnused() {
	unlock, err := lockNetns(context.Background(), int(b.ns), b.o.Netns, 0)
	if err != nil {
		return
	}
	defer unlock()
	if b.vanished() {
		return
	}
	links, err := b.dump()
	if err != nil || len(links) > 1 || (len(links) == 1 && links[0].Kind != "loopback") {
		return
	}
	if err := removeNetns(b.o.Netns); err == nil {
		b.log.Debug("removed the unused network namespace it created", zap.String("netns", b.o.Netns))
	}
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
	return fmt.Errorf("network namespace %s was deleted or replaced during %s (by `ip netns del`?); rerun to start afresh", b.o.Netns, op)
}

// newResult starts a netlink Result; hostFacts completes it.
func (b *Backend) newResult(op string) *ndst.Result {
	return &ndst.Result{Op: op, Backend: "netlink", Result: ndst.ResultOK}
}

// hostFacts fills the fields every netlink Result shares from the host
// probe, which runs while the operation does (it reads the kernel
// configuration) and is waited for only here, at the end.
func (b *Backend) hostFacts(r *ndst.Result) {
	b.probeHost()
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
// "del-one" (after each one-by-one delete, n = deleted so far),
// "del-listed" (after del has listed the namespace, n = links listed) and
// "add-names" (after names are chosen, before any is created).
var testHook func(event string, n int)

func hook(event string, n int) {
	if testHook != nil {
		testHook(event, n)
	}
}
