package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

// ndst netns add on the real kernel: every namespace is made from inside
// this process, on a few locked threads of its own (netnsWorkers), without
// a process per namespace. A worker thread unshares a new network
// namespace, configures it through a netlink socket opened inside it (lo up,
// the links, the veth pair whose other end the kernel creates straight in
// ndst's namespace, all in one datagram), records the namespace as ndst's
// and only then mounts it under /run/netns: an interruption leaves whole
// namespaces, and a namespace that was not finished goes away with its
// thread's reference.

// netnsWorkers is how many threads create namespaces at once, at most.
const netnsWorkers = 4

// nsCreateTimeout bounds one namespace's creation.
const nsCreateTimeout = 30 * time.Second

// NetnsAdd implements ndst.NetnsBackend.
func (b *Backend) NetnsAdd(ctx context.Context, req ndst.NetnsAddRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	b.probeHost()
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if err := checkNetnsAddrs(req.Addrs); err != nil {
		return nil, err
	}
	kind, explicit := b.o.Kind, b.o.KindExplicit
	if req.Kind != "" {
		if err := ValidateKind(req.Kind); err != nil {
			return nil, err
		}
		kind = req.Kind
	}
	if kind == "veth" && req.Links > 0 {
		return nil, ndst.Usagef("--links with kind veth: links in a namespace are of kind dummy or ifb (--veth adds the veth pair)")
	}
	if kind == "dummy" && b.noDummy && !explicit {
		kind = "ifb"
	}
	if req.Veth && b.root != "" && !b.o.AllowRootNS {
		return nil, b.errRootNS("netns add --veth (the host ends of the pairs)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := b.beginChange(ctx, "netns add")
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
		return nil, fmt.Errorf("netns add: list %s: %w", netnsDir, err)
	}
	existing, cleaned := pruneLocked(existing)
	names, err := freeNetnsNames(req.Template, existing, req.Count)
	if err != nil {
		return nil, err
	}
	links, err := b.dump()
	if err != nil {
		return nil, fmt.Errorf("netns add: list devices in namespace %s: %w", b.o.Netns, err)
	}
	var hostNames []string
	if req.Veth {
		if hostNames, err = freeLinkNames(req.VethTemplate, links, req.Count); err != nil {
			return nil, err
		}
	}
	linkTmpl := req.LinkTemplate
	if !b.o.NameExplicit && linkTmpl.String() == ndst.DefaultTemplate {
		linkTmpl, _ = ndst.ParseTemplate(kind + "%d")
	}
	if err := ensureNetnsDir(); err != nil {
		return nil, err
	}
	res := b.newResult("netns-add")
	defer b.hostFacts(res)
	for _, n := range cleaned.notes() {
		b.notef(res, "%s", n)
	}
	if n := identityNote(); n != "" {
		b.notef(res, "%s", n)
	}
	res.Kind = kind
	if !req.Addrs.IsZero() {
		b.notef(res, "each link %s", req.Addrs)
	}
	p := nsPlan{
		loUp: req.LoUp, links: req.Links, linkTmpl: linkTmpl, kind: kind, veth: req.Veth, inner: req.VethInner,
		group: freeGroup(links), hostNs: int(b.ns), addrs: req.Addrs,
	}
	guard, err := b.netnsMemGuard(req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	made, lat, err := b.createAll(ctx, p, names, hostNames, guard)
	res.WallNS = int64(time.Since(start))
	if errors.Is(err, errNoDummyKind) && !explicit && kind == "dummy" {
		// The kernel has no dummy: the namespaces made so far (none, since
		// the first fails) are whole; go on with ifb.
		b.noDummy = true
		b.notef(res, "the kernel has no dummy link type; created ifb links instead (choose with --kind)")
		p.kind, res.Kind = "ifb", "ifb"
		if !b.o.NameExplicit && req.LinkTemplate.String() == ndst.DefaultTemplate {
			p.linkTmpl, _ = ndst.ParseTemplate("ifb%d")
		}
		var restNames, restHosts []string
		for i, n := range names {
			if !slices.Contains(made, n) {
				restNames = append(restNames, n)
				if req.Veth {
					restHosts = append(restHosts, hostNames[i])
				}
			}
		}
		var more []string
		var l2 []int64
		more, l2, err = b.createAll(ctx, p, restNames, restHosts, guard)
		made, lat = append(made, more...), append(lat, l2...)
		res.WallNS = int64(time.Since(start))
	}
	if guard.perNS > 0 {
		res.Counters = map[string]int64{"kernel_bytes_per_namespace": int64(guard.perNS)}
	}
	var refused *netnsMemError
	if errors.As(err, &refused) {
		return b.refuseNetnsMemory(res, made, refused)
	}
	res.Count = len(made)
	res.Latency = ndst.Summarize(lat)
	if res.Counters == nil {
		res.Counters = map[string]int64{}
	}
	res.Counters["namespaces_created"] = int64(len(made))
	res.Counters["links_per_namespace"] = int64(req.Links)
	if req.Veth {
		res.Counters["veth_pairs"] = int64(len(made))
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("netns add interrupted: %w", err)
		}
		return fail(res, fmt.Errorf("%w (%s)", err, restHint(err, "netns add", "namespaces", len(made), len(names))))
	}
	return res, nil
}

// errNoDummyKind is wrapped when the kernel refuses kind dummy.
var errNoDummyKind = errors.New("the kernel has no dummy link type")

// nsPlan is what goes into each namespace.
type nsPlan struct {
	loUp     bool
	links    int
	linkTmpl ndst.Template
	kind     string
	veth     bool
	inner    string
	group    uint32
	hostNs   int        // ndst's namespace, where the veth pairs' other ends go
	addrs    ndst.Addrs // the links' addresses (netnsaddr_linux.go)
}

// freeNetnsNames picks the count lowest free numbers of tmpl, from 1, among
// every name under /run/netns (ndst's or not).
func freeNetnsNames(tmpl ndst.NetnsTemplate, existing []namespace, count int) ([]string, error) {
	names := make([]string, len(existing))
	for i, n := range existing {
		names[i] = n.Name
	}
	return tmpl.FreeNames(names, count)
}

// freeLinkNames picks the count lowest free numbers of tmpl among the
// links' names.
func freeLinkNames(tmpl ndst.Template, links []link, count int) ([]string, error) {
	used := map[int]bool{}
	for _, l := range links {
		for _, n := range append([]string{l.Name}, l.AltNames...) {
			if k := tmpl.Number(n); k >= 0 {
				used[k] = true
			}
		}
	}
	if free := tmpl.MaxNumber() + 1 - len(used); count > free {
		return nil, ndst.Usagef("name template %s has room for %d more names, asked for %d", tmpl, max(0, free), count)
	}
	out := make([]string, 0, count)
	for k := 0; len(out) < count; k++ {
		if !used[k] {
			out = append(out, tmpl.Name(k))
		}
	}
	return out, nil
}

// ensureNetnsDir makes /run/netns exist as a shared mount point, as `ip
// netns add` does (see createNetns).
func ensureNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", netnsDir, err)
	}
	if err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("make %s a shared mount: %w", netnsDir, err)
		}
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s: %w", netnsDir, err)
		}
		if err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make %s a shared mount: %w", netnsDir, err)
		}
	}
	return nil
}

// createAll makes the named namespaces: the first alone (a kernel that
// refuses the link kind is found by one namespace, not by several), then
// the rest of the memory guard's window, then, once the guard has measured
// the window and found that the rest fits, the rest, in parallel, stopping
// when memory runs low.
func (b *Backend) createAll(ctx context.Context, p nsPlan, names, hostNames []string, g *nsMemGuard) ([]string, []int64, error) {
	var made []string
	var lat []int64
	step := func(lo, hi int, stop func() error) error {
		hosts := hostNames[min(lo, len(hostNames)):min(hi, len(hostNames))]
		m, l, err := b.createNamespaces(ctx, p, names[lo:hi], hosts, stop)
		made, lat = append(made, m...), append(lat, l...)
		return err
	}
	w := min(len(names), netnsMemWindow)
	if err := step(0, min(1, w), nil); err != nil {
		return made, lat, err
	}
	if err := step(1, w, nil); err != nil || w == len(names) {
		return made, lat, err
	}
	if err := g.measure(len(made), len(names)-w); err != nil {
		return made, lat, err
	}
	return made, lat, step(w, len(names), g.stop)
}

// createNamespaces makes the named namespaces on up to netnsWorkers
// threads and returns those made (in order of names) with each one's time.
// It stops at the first failure, when ctx is done, or when stop (if set,
// consulted before every netnsStopEvery namespaces) fails; the namespaces
// being made then are finished first.
func (b *Backend) createNamespaces(ctx context.Context, p nsPlan, names, hostNames []string, stop func() error) ([]string, []int64, error) {
	type job struct{ i int }
	type done struct {
		i   int
		ns  int64
		err error
	}
	workers := min(netnsWorkers, runtime.NumCPU(), len(names))
	jobs := make(chan job)
	results := make(chan done, len(names)+netnsWorkers)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc := make(chan error, 1)
			// A thread of its own, never the main thread (Go cannot end
			// that one, and it would keep the last namespace alive), back
			// in its first namespace when done and never unlocked.
			go onThrowawayThread(errc, func() error {
				home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(home)
				defer unix.Setns(home, unix.CLONE_NEWNET)
				for j := range jobs {
					host := ""
					if p.veth {
						host = hostNames[j.i]
					}
					t0 := time.Now()
					err := makeNamespace(p, names[j.i], host)
					if err != nil {
						failed.Store(true)
					}
					results <- done{j.i, int64(time.Since(t0)), err}
				}
				return nil
			})
			if err := <-errc; err != nil {
				failed.Store(true)
				results <- done{-1, 0, err}
			}
		}()
	}
	var firstErr error
feed:
	for i := range names {
		if failed.Load() {
			break
		}
		if stop != nil && i > 0 && i%netnsStopEvery == 0 {
			if err := stop(); err != nil {
				firstErr = err
				break feed
			}
		}
		select {
		case <-ctx.Done():
			firstErr = ctx.Err()
			break feed
		case jobs <- job{i}:
		}
	}
	close(jobs)
	wg.Wait() // the namespaces in progress are finished
	close(results)
	ok := make([]bool, len(names))
	lat := make([]int64, len(names))
	for r := range results {
		if r.i < 0 {
			firstErr = r.err
			continue
		}
		if r.err != nil {
			if firstErr == nil || errors.Is(firstErr, context.Canceled) {
				firstErr = fmt.Errorf("namespace %s: %w", names[r.i], r.err)
				if errors.Is(r.err, errNoDummyKind) {
					firstErr = r.err
				}
			}
			continue
		}
		ok[r.i], lat[r.i] = true, r.ns
	}
	var made []string
	var times []int64
	for i, n := range names {
		if ok[i] {
			made = append(made, n)
			times = append(times, lat[i])
		}
	}
	return made, times, firstErr
}

// makeNamespace creates one namespace on the calling (locked) thread,
// which it leaves inside it.
func makeNamespace(p nsPlan, name, hostName string) error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("unshare a network namespace: %w", err)
	}
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(self)
	id, err := identityOf(self)
	if err != nil {
		return err
	}
	c, err := dialHere()
	if err != nil {
		return fmt.Errorf("open a netlink socket in it: %w", err)
	}
	defer c.close()
	var m msg
	sent := map[uint32]int{}
	add := func(what int) uint32 { s := c.nextSeq(); sent[s] = what; return s }
	if p.loUp {
		appendSetUp(&m, add(-1), 1)
	}
	for k := range p.links {
		appendNewLink(&m, add(k), p.kind, p.linkTmpl.Name(k), "", p.group)
	}
	if p.veth {
		appendVethTo(&m, add(-2), p.inner, hostName, p.group, p.hostNs)
	}
	var firstErr error
	if len(m.b) > 0 {
		if err := c.send(m.b); err != nil {
			return err
		}
		err := c.barrier(sent, time.Now().Add(nsCreateTimeout), func(what int, e error) {
			if firstErr != nil {
				return
			}
			switch {
			case what == -1:
				firstErr = fmt.Errorf("set lo up: %w", e)
			case what == -2:
				firstErr = fmt.Errorf("create veth pair %s/%s: %w", p.inner, hostName, e)
			case p.kind == "dummy" && errors.Is(e, unix.EOPNOTSUPP):
				firstErr = errNoDummyKind
			default:
				firstErr = fmt.Errorf("create %s link %s: %w", p.kind, p.linkTmpl.Name(what), e)
			}
		})
		if err != nil {
			return err
		}
	}
	if firstErr == nil {
		firstErr = configureNsLinks(c, p)
	}
	if firstErr != nil {
		// What was made goes with the namespace when the thread leaves it,
		// asynchronously; the veth pair is deleted now so that its other
		// end's name is free again at once.
		if p.veth {
			var d msg
			seq := c.nextSeq()
			off := d.begin(unix.RTM_DELLINK, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq)
			d.ifinfo(0)
			d.str(unix.IFLA_IFNAME, p.inner)
			d.end(off)
			_ = c.request(&d, seq, ackTimeout)
		}
		return firstErr
	}
	return recordAndMount(name, id)
}

// recordAndMount makes the namespace of the calling thread, whose identity
// is id, ndst's namespace name: its record first, then its file under
// /run/netns, then the bind mount (see netnsown_linux.go for why in this
// order). On failure it undoes what it did; an undo that fails is part of
// the error.
func recordAndMount(name string, id nsIdentity) error {
	if err := writeRecord(name, id); err != nil {
		return err
	}
	path := nsPath(name)
	undo := func(err error, file bool) error {
		var errs []error
		if file {
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove %s: %w", path, rerr))
			}
		}
		if rerr := removeRecord(name); rerr != nil {
			errs = append(errs, rerr)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w; undoing it failed too: %w", err, errors.Join(errs...))
		}
		return err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o444)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return undo(fmt.Errorf("%s %w meanwhile (by another program?)", path, errNameTaken), false)
		}
		return undo(fmt.Errorf("create %s: %w", path, err), false)
	}
	unix.Close(fd)
	hook("netns-file", 0)
	if err := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, ""); err != nil {
		return undo(fmt.Errorf("bind-mount it on %s: %w", path, err), true)
	}
	return nil
}

// errNameTaken is wrapped when a name under /run/netns was taken between
// the scan and the create.
var errNameTaken = errors.New("was taken")

// dialHere opens an rtnetlink socket in the calling thread's namespace.
func dialHere() (*conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	return setupConn(fd)
}
