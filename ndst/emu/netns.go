package emu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	ph "github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/statefile"
)

// Network namespaces on the emulated kernel (package netdev's Namespaces):
// NetnsAdd, NetnsDel and NetnsList implement ndst.NetnsBackend, and
// Config.Netns makes Add, Del and List act inside one namespace. The state
// file keeps every namespace with its devices and ifindex cursor, and the
// veth pairs (format version 2); device flags say what each device is.

var _ ndst.NetnsBackend = (*Backend)(nil)

// Device flags in the state file.
const (
	flagUp       = 1 << 0 // IFF_UP
	flagLoopback = 1 << 1 // lo
	flagVeth     = 1 << 2 // one end of a veth pair
)

func kindOf(flags uint32) netdev.Kind {
	switch {
	case flags&flagLoopback != 0:
		return netdev.KindLoopback
	case flags&flagVeth != 0:
		return netdev.KindVeth
	}
	return netdev.KindDummy
}

// devices returns the persisted devices of the namespace the backend acts
// in.
func (b *Backend) devices() []statefile.Device {
	if b.r.cfg.Netns == "" {
		return b.state.Devices
	}
	if n := b.state.Netns(b.r.cfg.Netns); n != nil {
		return n.Devices
	}
	return nil
}

// stateDevices counts every persisted device, of every namespace.
func (b *Backend) stateDevices() int {
	n := len(b.state.Devices)
	for _, ns := range b.state.Namespaces {
		n += len(ns.Devices)
	}
	return n
}

// stateUnits is the memory the state's kernel holds, in devices' worth:
// its devices, and each namespace's own tables (netnsDeviceEquivalent).
// Without the namespaces' own share, a state of many namespaces of lo
// alone was counted 33 times too small.
func (b *Backend) stateUnits() int {
	return b.stateDevices() + len(b.state.Namespaces)*netnsDeviceEquivalent
}

// checkNetns refuses a Config.Netns that names no emulated namespace.
func (b *Backend) checkNetns() error {
	name := b.r.cfg.Netns
	if name == "" {
		return nil
	}
	if err := ndst.ValidateNetnsName(name); err != nil {
		return err
	}
	if b.state.Netns(name) == nil {
		return fmt.Errorf("%w: %s (%s)", ndst.ErrNoNetns, name, b.describeNetns())
	}
	return nil
}

// describeNetns summarises the persisted namespaces for error messages.
func (b *Backend) describeNetns() string {
	switch n := len(b.state.Namespaces); n {
	case 0:
		return "the emulated kernel has no namespaces besides the initial one; ndst netns add N creates some"
	case 1:
		return "the emulated kernel has one namespace, " + b.state.Namespaces[0].Name
	default:
		return fmt.Sprintf("the emulated kernel has %d namespaces, %s ... %s (ndst netns list shows them)", n,
			b.state.Namespaces[0].Name, b.state.Namespaces[n-1].Name)
	}
}

// namespaces returns the kernel's namespace set, making it on first use
// (k.reg is then the initial namespace).
func (k *kernel) namespaces() *netdev.Namespaces {
	if k.ns == nil {
		k.ns = netdev.NewNamespaces(k.reg, netdev.NetnsCostsOf(k.reg.CostTable()))
		if k.knobs != nil {
			k.knobs.ApplyNamespaces(k.ns)
		}
	}
	return k.ns
}

// restore lists a persisted device of the initial namespace.
func (k *kernel) restore(d statefile.Device) error {
	if d.Flags == 0 {
		return k.reg.Restore(d.Name, int(d.Ifindex))
	}
	if hasLinkConfig(d.Flags) {
		return restoreLink(k.reg, d)
	}
	_, err := k.namespaces().RestoreDevice(nil, d.Name, int(d.Ifindex), kindOf(d.Flags), d.Flags&flagUp != 0)
	return err
}

// checkStateFlags refuses a state whose devices or namespaces carry flag
// bits this ndst does not define (checkFlags; namespaces define none), as
// a corrupt state file: nothing is restored from it.
func (b *Backend) checkStateFlags() error {
	bad := func(reason string) error { return statefile.Corrupt(b.r.cfg.StatePath, reason) }
	for _, d := range b.state.Devices {
		if why := checkFlags(d); why != "" {
			return bad(why)
		}
	}
	for _, ns := range b.state.Namespaces {
		if ns.Flags != 0 {
			return bad(fmt.Sprintf("namespace %s has flag bits %#x that this ndst does not define", ns.Name, ns.Flags))
		}
		for _, d := range ns.Devices {
			if why := checkFlags(d); why != "" {
				return bad("namespace " + ns.Name + ": " + why)
			}
		}
	}
	return nil
}

// bootNetns restores the persisted namespaces and veth pairs, and moves
// k.reg to the namespace the command acts in.
func (b *Backend) bootNetns(ctx context.Context, k *kernel) error {
	st := b.state
	if len(st.Namespaces) == 0 && len(st.Veths) == 0 && b.r.cfg.Netns == "" {
		return nil
	}
	ns := k.namespaces()
	bad := func(err error) error { return fmt.Errorf("state file %s: %w", b.r.cfg.StatePath, err) }
	for i := range st.Namespaces {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		sn := &st.Namespaces[i]
		n, err := ns.Restore(sn.Name, int(sn.NextIfindex))
		if err != nil {
			return bad(err)
		}
		for _, d := range sn.Devices {
			dev, err := ns.RestoreDevice(n, d.Name, int(d.Ifindex), kindOf(d.Flags), d.Flags&flagUp != 0)
			if err == nil && hasLinkConfig(d.Flags) {
				var c netdev.LinkConfig
				if c, err = linkConfig(d.Flags); err == nil {
					err = n.Reg.RestoreLink(dev, c)
				}
			}
			if err != nil {
				return bad(fmt.Errorf("namespace %s: %w", sn.Name, err))
			}
		}
	}
	end := func(e statefile.End) *netdev.Device {
		reg := ns.Host()
		if e.Netns != "" {
			if n, ok := ns.Lookup(e.Netns); ok {
				reg = n.Reg
			}
		}
		d, _ := reg.ByIndex(int(e.Ifindex))
		return d
	}
	for _, p := range st.Veths {
		a, c := end(p.A), end(p.B)
		if a == nil || c == nil {
			return bad(fmt.Errorf("veth pair %v-%v: an end is missing", p.A, p.B))
		}
		if err := ns.RestorePeers(a, c); err != nil {
			return bad(err)
		}
	}
	if name := b.r.cfg.Netns; name != "" {
		n, ok := ns.Lookup(name)
		if !ok {
			return fmt.Errorf("%w: %s (%s)", ndst.ErrNoNetns, name, b.describeNetns())
		}
		k.reg = n.Reg
	}
	return nil
}

// kind names a device's kind for listings.
func (k *kernel) kind(d *netdev.Device) string {
	if k.ns != nil {
		if kind := k.ns.Kind(d); kind != netdev.KindDummy {
			return kind.String()
		}
	}
	return k.reg.LinkConfigOf(d).Kind.String()
}

// deletable drops lo from a delete (the kernel refuses to delete it:
// loopback has no dellink) and adds the other end of every veth pair
// (veth_dellink deletes both), noting both in res.
func (k *kernel) deletable(res *ndst.Result, devs []*netdev.Device) ([]*netdev.Device, int) {
	if k.ns == nil {
		return devs, 0
	}
	skipped := 0
	out := devs[:0:0]
	for _, d := range devs {
		if k.ns.Kind(d) == netdev.KindLoopback {
			skipped++
			res.Notes = append(res.Notes, fmt.Sprintf("%s (ifindex %d) is skipped: the kernel does not delete a namespace's loopback (it goes with its namespace)", d.Name, d.Ifindex))
			continue
		}
		out = append(out, d)
	}
	with := k.ns.WithPeers(out)
	if extra := len(with) - len(out); extra > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d veth peer(s) in other namespaces go with their pairs (veth_dellink deletes both ends)", extra))
	}
	return with, skipped
}

// state is the persisted form of the kernel's namespaces after a command.
func (k *kernel) state() *statefile.State {
	host := k.reg
	if k.ns != nil {
		host = k.ns.Host()
	}
	next := &statefile.State{NextIfindex: int32(host.NextIfindex()), Devices: k.persisted(host), Lowers: lowersOf(host, "")}
	if k.ns == nil {
		return next
	}
	k.ns.Range(func(n *netdev.Netns) bool {
		next.Lowers = append(next.Lowers, lowersOf(n.Reg, n.Name)...)
		return true
	})
	index := map[*netdev.Registry]int{host: 0}
	k.ns.Range(func(n *netdev.Netns) bool {
		next.Namespaces = append(next.Namespaces, statefile.Namespace{
			Name: n.Name, NextIfindex: int32(n.Reg.NextIfindex()), Devices: k.persisted(n.Reg)})
		index[n.Reg] = len(next.Namespaces)
		return true
	})
	type keyed struct {
		ns      int
		ifindex int
		end     statefile.End
	}
	endOf := func(reg *netdev.Registry, d *netdev.Device) keyed {
		i := index[reg]
		e := statefile.End{Ifindex: int32(d.Ifindex)}
		if i > 0 {
			e.Netns = next.Namespaces[i-1].Name
		}
		return keyed{i, d.Ifindex, e}
	}
	less := func(a, b keyed) bool { return a.ns < b.ns || a.ns == b.ns && a.ifindex < b.ifindex }
	var pairs []statefile.VethPair
	visit := func(reg *netdev.Registry) {
		reg.Range(func(d *netdev.Device) bool {
			p, pn := k.ns.Peer(d)
			if p == nil {
				return true
			}
			preg := host
			if pn != nil {
				preg = pn.Reg
			}
			a, b := endOf(reg, d), endOf(preg, p)
			if less(a, b) {
				pairs = append(pairs, statefile.VethPair{A: a.end, B: b.end})
			}
			return true
		})
	}
	visit(host)
	k.ns.Range(func(n *netdev.Netns) bool { visit(n.Reg); return true })
	key := func(e statefile.End) (int, int32) {
		if e.Netns == "" {
			return 0, e.Ifindex
		}
		i, _ := slices.BinarySearchFunc(next.Namespaces, e.Netns, func(n statefile.Namespace, name string) int { return cmp.Compare(n.Name, name) })
		return i + 1, e.Ifindex
	}
	slices.SortFunc(pairs, func(x, y statefile.VethPair) int {
		xn, xi := key(x.A)
		yn, yi := key(y.A)
		if c := cmp.Compare(xn, yn); c != 0 {
			return c
		}
		return cmp.Compare(xi, yi)
	})
	next.Veths = pairs
	return next
}

// persisted lists a registry's devices with their flags.
func (k *kernel) persisted(reg *netdev.Registry) []statefile.Device {
	out := make([]statefile.Device, 0, reg.Len())
	reg.Range(func(d *netdev.Device) bool {
		var f uint32
		if k.ns != nil {
			switch k.ns.Kind(d) {
			case netdev.KindLoopback:
				f |= flagLoopback
			case netdev.KindVeth:
				f |= flagVeth
			}
			if k.ns.Up(d) {
				f |= flagUp
			}
		}
		if hasLinkConfig(f) {
			f |= linkFlags(reg.LinkConfigOf(d))
		}
		out = append(out, statefile.Device{Ifindex: int32(d.Ifindex), Name: d.Name, Flags: f})
		return true
	})
	return out
}

// netnsUsage refuses Config.Netns for the namespace commands themselves.
func (b *Backend) netnsUsage(op string) error {
	if b.r.cfg.Netns != "" {
		return ndst.Usagef("%s works on namespaces, not inside one; --netns %s does not apply", op, b.r.cfg.Netns)
	}
	return nil
}

// syscall enters the kernel for one more request of a command that makes
// several (the first is charged by run).
func syscall(t *sim.Task, sys sim.Time) {
	t.SetMode(sim.ModeKernel)
	prev := t.SetPhase(ph.Syscall)
	t.Charge(sys)
	t.SetPhase(prev)
}

// returnToUser leaves the kernel after a request: exit_to_user_mode
// schedules when a wake-up asked for it.
func returnToUser(t *sim.Task) {
	t.SetMode(sim.ModeUser)
	if t.CPU().NeedResched() {
		t.Schedule()
	}
}

// NetnsAdd implements ndst.NetnsBackend: for each namespace, one request
// creating it (copy_net_ns: the pernet lock, setup_net, lo), one per link,
// one for the veth pair and one to set lo up, each under RTNL, then its
// naming (netdev's NameNamespace). As the real backend does (its
// createAll and netnsWorkers), the namespaces are made on up to
// netnsAddWorkers tasks at once, one per CPU, in steps (netnsAddSteps);
// the veth peers take their names from the template as their pairs are
// made, so on more than one CPU a namespace's peer need not be the one
// of its number.
func (b *Backend) NetnsAdd(ctx context.Context, req ndst.NetnsAddRequest) (*ndst.Result, error) {
	if err := b.netnsUsage("netns add"); err != nil {
		return nil, err
	}
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	names, err := b.freeNetnsNames(req.Template, req.Count)
	if err != nil {
		return nil, err
	}
	if req.Veth {
		if free := req.VethTemplate.MaxNumber() + 1 - b.countMatching(req.VethTemplate); req.Count > free {
			return nil, ndst.Usagef("veth template %s has room for %d more names in the initial namespace, asked for %d", req.VethTemplate, free, req.Count)
		}
	}
	var link netdev.LinkConfig
	if !req.Addrs.IsZero() {
		// Each namespace's links are set up with their addresses
		// (netdev.SetUp in the namespace), as add does in one.
		if link, err = linkOf(ndst.AddRequest{Kind: req.Kind, Addrs: req.Addrs}); err != nil {
			return nil, err
		}
		if err := b.r.profile.CheckAddrs(link); err != nil {
			return nil, ndst.Usagef("%v", err)
		}
	}
	per := 1 + req.Links
	if req.Veth {
		per += 2
	}
	if err := checkMemory(b.stateUnits() + req.Count*(per+netnsDeviceEquivalent)); err != nil {
		return nil, err
	}
	res := b.newResult("netns-add", false)
	if !req.Addrs.IsZero() {
		res.Notes = append(res.Notes, "each link "+req.Addrs.String())
	}
	wall := time.Now()
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	ns := k.namespaces()
	lat := make([]int64, 0, req.Count)
	created := 0
	var addErr error
	// makeOne is one namespace, made by t: its create, its links, its veth
	// pair, lo up, each a request (the first namespace's create is the
	// command's first, already charged), then its naming.
	makeOne := func(t *sim.Task, sys sim.Time, i int) bool {
		name := names[i]
		s := t.Now()
		if i > 0 {
			syscall(t, sys)
		}
		n, err := ns.Create(t, name)
		if err != nil {
			addErr = err
			return false
		}
		for range req.Links {
			syscall(t, sys)
			d, err := ns.AddLink(t, n, req.LinkTemplate)
			if err == nil && !req.Addrs.IsZero() {
				err = n.Reg.SetUp(t, d, link, sys)
			}
			if err != nil {
				addErr = fmt.Errorf("namespace %s: %w", name, err)
				return false
			}
		}
		if req.Veth {
			syscall(t, sys)
			if _, _, err := ns.AddVeth(t, n, req.VethInner, req.VethTemplate); err != nil {
				addErr = fmt.Errorf("namespace %s: %w", name, err)
				return false
			}
		}
		if req.LoUp {
			syscall(t, sys)
			ns.SetLoUp(t, n)
		}
		// Its record, mount point and bind mount (netdev/netnsfiles.go).
		ns.NameNamespace(t, n)
		created++
		lat = append(lat, int64(t.Now()-s))
		returnToUser(t)
		return true
	}
	virt, runErr := k.run(ctx, func(t *sim.Task, sys sim.Time) {
		next := 0
		cpus := len(k.e.CPUs())
		for _, step := range netnsAddSteps(len(names)) {
			// One step's namespaces on its workers: the command's task
			// and up to netnsAddWorkers-1 more, one per CPU, each taking
			// the next name; the step ends when every worker is done.
			workers := min(netnsAddWorkers, cpus, step)
			stop := next + step
			take := func() (int, bool) {
				if addErr != nil || ctx.Err() != nil || next >= stop {
					return 0, false
				}
				next++
				return next - 1, true
			}
			running := workers - 1
			var done sim.WaitQueue
			for w := 1; w < workers; w++ {
				k.e.Go(fmt.Sprintf("netns-add/%d", w), w%cpus, false, func(wt *sim.Task) {
					defer func() { running--; done.WakeAll() }()
					wt.SetMode(sim.ModeUser)
					for i, ok := take(); ok && makeOne(wt, sys, i); i, ok = take() {
					}
				})
			}
			for i, ok := take(); ok && makeOne(t, sys, i); i, ok = take() {
			}
			t.SetMode(sim.ModeUser)
			done.Wait(t, func() bool { return running == 0 })
			if err := ctx.Err(); err != nil && addErr == nil {
				addErr = err
			}
			if addErr != nil {
				break
			}
		}
		t.SetMode(sim.ModeKernel)
	})
	if runErr != nil || addErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped after %v virtual: %d of %d namespaces had been created; the state file is unchanged", virt, created, req.Count))
	}
	out, err := b.finish(k, res, virt, time.Since(wall), lat, created, errors.Join(runErr, addErr))
	netnsCounters(k, out)
	return out, err
}

// netnsAddWorkers is how many threads the real backend makes namespaces
// on at once, at most (nlbackend's netnsWorkers), one per CPU.
const netnsAddWorkers = 4

// netnsAddSteps are the sizes of the steps a netns add of n namespaces
// makes them in, one after another, as the real backend does (its
// createAll): the first alone, then the rest of its memory guard's
// window of 16, then the rest.
func netnsAddSteps(n int) []int {
	var out []int
	for _, hi := range []int{1, 16, n} {
		done := 0
		for _, s := range out {
			done += s
		}
		if m := min(hi, n) - done; m > 0 {
			out = append(out, m)
		}
	}
	return out
}

// netnsDeviceEquivalent is a namespace's own memory (its registry's hash
// tables, its state entry) in devices' worth, for the memory check: a
// command on a state of 40,000 emulated namespaces of lo alone peaks at
// about 16 KiB of resident memory per namespace (636 MB for netns add
// 40000, /usr/bin/time), 32 devices' worth at bytesPerDevice.
const netnsDeviceEquivalent = 32

// freeNetnsNames picks the count lowest free numbers of tmpl, from 1.
func (b *Backend) freeNetnsNames(tmpl ndst.NetnsTemplate, count int) ([]string, error) {
	existing := make([]string, len(b.state.Namespaces))
	for i, n := range b.state.Namespaces {
		existing[i] = n.Name
	}
	return tmpl.FreeNames(existing, count)
}

// NetnsDel implements ndst.NetnsBackend: the command drops each namespace's
// last reference (its umount and close), one request each, and waits until
// the kernel's cleanup is done; with OneByOne it waits for each namespace
// before deleting the next.
func (b *Backend) NetnsDel(ctx context.Context, req ndst.NetnsDelRequest) (*ndst.Result, error) {
	if err := b.netnsUsage("netns del"); err != nil {
		return nil, err
	}
	if err := ndst.CheckRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	if req.Template.IsZero() {
		req.Template = ndst.MustNetnsTemplate(ndst.DefaultNetnsTemplate)
	}
	type target struct {
		num  int
		name string
	}
	var targets []target
	devices := 0
	for _, n := range b.state.Namespaces {
		if k := req.Template.Number(n.Name); k >= req.Start && k <= req.Stop {
			targets = append(targets, target{k, n.Name})
			devices += len(n.Devices)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: %s numbers %d..%d (%s)", ndst.ErrNoNetns, req.Template, req.Start, req.Stop, b.describeNetns())
	}
	slices.SortFunc(targets, func(a, b target) int { return cmp.Compare(a.num, b.num) })
	style := ndst.StyleAllAtOnce
	switch {
	case req.OneByOne && req.CNI:
		return nil, ndst.Usagef("--one-by-one and --cni: choose one (--cni also deletes one pod after another, waiting only for its veth)")
	case req.OneByOne:
		style = ndst.StyleOneByOne
	case req.CNI:
		style = ndst.StyleCNI
	}
	var recreate []string
	if req.Recreate < 0 || req.Recreate > maxRecreate {
		return nil, ndst.Usagef("--recreate %d: want 0..%d namespaces", req.Recreate, maxRecreate)
	}
	if req.Recreate > 0 {
		var err error
		if recreate, err = b.freeNetnsNames(req.Template, req.Recreate); err != nil {
			return nil, err
		}
	}
	res := b.newResult("netns-del", b.r.profile.Netns.DeviceExitBatch && !req.OneByOne && !req.CNI)
	wall := time.Now()
	k, err := b.boot(ctx)
	if err != nil {
		return nil, err
	}
	ns := k.namespaces()
	list := make([]*netdev.Netns, len(targets))
	for i, tg := range targets {
		list[i], _ = ns.Lookup(tg.name)
	}
	// A backstop above the registry's own bound on each device's wait
	// (GiveUp): a cleanup that takes this long without a run ending is
	// stuck. 10 ms a device or namespace is far above any per-item cost.
	bound := 600*sim.Second + sim.Time(devices+len(list))*10*sim.Millisecond
	var returned sim.Time = -1
	var cniLat []int64
	rec := &recreation{names: recreate}
	virt, runErr := k.run(ctx, func(t *sim.Task, sys sim.Time) {
		for i, n := range list {
			if ctx.Err() != nil { // a signal between two deletes
				return
			}
			if i > 0 {
				syscall(t, sys)
			}
			if req.CNI && cniDelVeth(t, ns, n, sys, &cniLat) {
				syscall(t, sys) // the runtime removes the namespace
			}
			ns.Unmount(t, n)
			ns.Put(t, n)
			ns.ReleaseMount(t)
			returnToUser(t)
			returned = t.Now()
			if req.OneByOne && !ns.WaitDone(t, list[i:i+1], bound) {
				return
			}
		}
		rec.start(k, ns, sys)
		ns.WaitDone(t, list, bound)
		rec.wait(t, bound)
		t.SetMode(sim.ModeKernel)
	})
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	times := &ndst.NetnsTimes{Namespaces: len(list), Style: style}
	rel := func(x sim.Time) int64 { return int64(x - k.start) }
	if returned >= 0 {
		times.ReturnedNS = rel(returned)
	}
	var gone, done []int64
	var lastGone, lastDone sim.Time = -1, -1
	freed := 0
	for _, n := range list {
		if n.GoneAt >= 0 {
			gone = append(gone, int64(n.GoneAt-n.QueuedAt))
			lastGone = max(lastGone, n.GoneAt)
		}
		if n.State == netdev.NetnsFreed {
			freed++
			done = append(done, int64(n.DoneAt-n.QueuedAt))
			lastDone = max(lastDone, n.DoneAt)
		}
	}
	if lastGone >= 0 && len(gone) == len(list) {
		v := rel(lastGone)
		times.GoneNS = &v
	}
	if freed == len(list) {
		v := rel(lastDone)
		times.DoneNS = &v
	}
	times.Gone, times.Done = ndst.Summarize(gone), ndst.Summarize(done)
	batches := len(ns.Batches())
	times.Batches, times.BatchSizes = &batches, ns.Batches()
	for _, d := range ns.BatchTimes() {
		times.BatchNS = append(times.BatchNS, int64(d))
	}
	for _, p := range ns.WorkerPhases() {
		if p.CPU+p.Wait > 0 {
			times.Cleanup = append(times.Cleanup, ndst.Phase{Name: p.Name, CPUNS: int64(p.CPU), WaitNS: int64(p.Wait)})
		}
	}
	if len(recreate) > 0 {
		times.Recreate = rec.result(k.e.Now())
	}
	if req.CNI {
		times.CNIDelete = ndst.Summarize(cniLat)
	}
	res.Netns = times
	if runErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped after %v virtual: %d of %d namespaces had been freed; the state file is unchanged", virt, freed, len(list)))
	}
	out, err := b.finish(k, res, virt, time.Since(wall), done, freed, runErr)
	netnsCounters(k, out)
	if out != nil {
		out.Explain = append(explainNetns(b.r, out), explainCNI(out)...)
	}
	var stuck *netdev.NetnsStuckError
	if errors.As(runErr, &stuck) {
		out.Result = ndst.ResultStuck
		err = fmt.Errorf("%w: %v", ndst.ErrStuck, runErr)
	}
	return out, err
}

// netnsCounters adds the namespace layer's counters to a result.
func netnsCounters(k *kernel, res *ndst.Result) {
	if res == nil || res.Counters == nil || k.ns == nil {
		return
	}
	st := k.ns.Stats()
	c := res.Counters
	c["namespaces_created"] = st.Created
	c["namespaces_queued"] = st.Queued
	c["namespaces_freed"] = st.Freed
	c["cleanup_batches"] = st.Batches
	c["cleanup_max_batch"] = st.MaxBatch
	c["pernet_lock_waits"] = st.PernetWaits
	c["pernet_lock_wait_ns"] = int64(st.PernetWaitNS)
	registered := k.ns.Host().Stats().Registered
	k.ns.Range(func(n *netdev.Netns) bool { registered += n.Reg.Stats().Registered; return true })
	c["devices_registered"] = registered
}

// NetnsList implements ndst.NetnsBackend from the persisted state: no
// kernel code runs.
func (b *Backend) NetnsList(ctx context.Context, _ ndst.NetnsListRequest) ([]ndst.Netns, error) {
	if err := b.netnsUsage("netns list"); err != nil {
		return nil, err
	}
	st := b.state
	peers := make(map[string][]string)
	name := func(e statefile.End, devs []statefile.Device) string {
		for _, d := range devs {
			if d.Ifindex == e.Ifindex {
				if e.Netns == "" {
					return d.Name
				}
				return e.Netns + "/" + d.Name
			}
		}
		return fmt.Sprintf("%s/#%d", e.Netns, e.Ifindex)
	}
	devsOf := func(e statefile.End) []statefile.Device {
		if e.Netns == "" {
			return st.Devices
		}
		if n := st.Netns(e.Netns); n != nil {
			return n.Devices
		}
		return nil
	}
	for _, p := range st.Veths {
		for _, pair := range [][2]statefile.End{{p.A, p.B}, {p.B, p.A}} {
			if pair[0].Netns != "" {
				peers[pair[0].Netns] = append(peers[pair[0].Netns], name(pair[1], devsOf(pair[1])))
			}
		}
	}
	out := make([]ndst.Netns, 0, len(st.Namespaces))
	for i, n := range st.Namespaces {
		if i%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		e := ndst.Netns{Name: n.Name, Devices: len(n.Devices), Peers: peers[n.Name]}
		for _, d := range n.Devices {
			if d.Flags&flagLoopback != 0 {
				e.LoUp = d.Flags&flagUp != 0
			}
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b ndst.Netns) int { return naturalCompare(a.Name, b.Name) })
	return out, nil
}

// naturalCompare orders names by their text before a trailing number, then
// by that number (ndst2 before ndst10), then bytewise.
func naturalCompare(a, b string) int {
	split := func(s string) (string, int, bool) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		if i == len(s) || len(s)-i > 9 {
			return s, 0, false
		}
		n := 0
		for _, c := range s[i:] {
			n = n*10 + int(c-'0')
		}
		return s[:i], n, true
	}
	pa, na, oka := split(a)
	pb, nb, okb := split(b)
	if oka && okb && pa == pb {
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

// explainNetns is the one or two sentences under a namespace delete: where
// the cleanup worker's time went and what would change it most, from the
// run's own phases and runs.
func explainNetns(r *resolved, res *ndst.Result) []string {
	n := res.Netns
	if res.Result != ndst.ResultOK || n == nil || n.DoneNS == nil || len(n.Cleanup) == 0 || n.Batches == nil {
		return nil
	}
	phases := slices.Clone(n.Cleanup)
	slices.SortStableFunc(phases, func(a, b ndst.Phase) int { return cmp.Compare(b.TotalNS(), a.TotalNS()) })
	var total int64
	for _, p := range phases {
		total += p.TotalNS()
	}
	top := phases[0]
	what := map[string]string{
		ph.Barrier:             "in rcu_barrier(), waiting for queued RCU callbacks (netdev_run_todo's and the final one, once each per run)",
		ph.Unregister:          "unregistering the devices under RTNL (CPU)",
		ph.WaitLoop:            "in netdev_wait_allrefs(), polling references that RCU callbacks still held",
		ph.SyncNet:             "waiting for grace periods",
		ph.SyncNetExp:          "waiting for expedited grace periods",
		netdev.PhaseExitNet:    "in the pernet exit methods (CPU)",
		ph.RTNL:                "waiting for RTNL",
		netdev.PhasePernetLock: "waiting for net_mutex",
	}[top.Name]
	if what == "" {
		what = top.Name
	}
	runs := *n.Batches
	out := []string{fmt.Sprintf("%s took %s of cleanup_net over %d namespaces; its worker spent %s (%.0f%%) %s",
		plural(runs, "run"), dur(total), n.Namespaces, dur(top.TotalNS()), 100*float64(top.TotalNS())/float64(max(total, 1)), what)}
	switch {
	case !r.profile.Netns.Batched:
		out = append(out, fmt.Sprintf("kernel %s cleans up one namespace per run; from 2.6.33 (2b035b399707) one run takes every namespace queued so far, so its waits are paid once for all of them", r.profile.Name))
	case n.Style == ndst.StyleOneByOne && runs > 1:
		out = append(out, fmt.Sprintf("each namespace waited for its own run (%s a namespace); deleted at once they would share runs, and their waits, as the kernel batches every namespace queued while a run is under way",
			dur(total/int64(runs))))
	}
	return out
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// maxRecreate bounds NetnsDelRequest.Recreate.
const maxRecreate = 100_000

// recreation creates namespaces while a cleanup runs (NetnsDelRequest.
// Recreate): one task, one creation after another, as a host restarting
// its pods does.
type recreation struct {
	names   []string
	ns      *netdev.Namespaces
	started sim.Time
	lats    []int64
	blocked int
	waited  sim.Time
	// The creation in progress: when it began, and the pernet-lock waits
	// counted before it (-1: none in progress).
	curFrom  sim.Time
	curWaits int64
	done     bool
	wq       sim.WaitQueue
}

func (rc *recreation) start(k *kernel, ns *netdev.Namespaces, sys sim.Time) {
	rc.ns, rc.curWaits = ns, -1
	if len(rc.names) == 0 {
		rc.done = true
		return
	}
	rc.started = k.e.Now()
	k.e.Go("recreate", 0, true, func(t *sim.Task) {
		for _, name := range rc.names {
			syscall(t, sys)
			rc.curFrom, rc.curWaits = t.Now(), ns.Stats().PernetWaits
			if _, err := ns.Create(t, name); err != nil {
				break
			}
			if ns.Stats().PernetWaits > rc.curWaits {
				rc.blocked++
				rc.waited = max(rc.waited, t.Now()-rc.curFrom)
			}
			rc.curWaits = -1
			rc.lats = append(rc.lats, int64(t.Now()-rc.started))
			returnToUser(t)
		}
		rc.done = true
		rc.wq.WakeAll()
	})
}

// wait waits for the creations to finish, as long as the cleanup's bound.
func (rc *recreation) wait(t *sim.Task, bound sim.Time) {
	if !rc.done {
		rc.wq.WaitTimeout(t, func() bool { return rc.done }, int64(bound/t.Engine().Period())+1)
	}
}

// result says how the creations went by now: a creation still waiting for
// the pernet lock counts as blocked, for as long as it has waited.
func (rc *recreation) result(now sim.Time) *ndst.NetnsRecreate {
	out := &ndst.NetnsRecreate{Requested: len(rc.names), Created: len(rc.lats), Blocked: rc.blocked,
		WaitedNS: int64(rc.waited), Latency: ndst.Summarize(rc.lats)}
	if rc.ns != nil && rc.curWaits >= 0 && rc.ns.Stats().PernetWaits > rc.curWaits {
		out.Blocked++
		out.WaitedNS = max(out.WaitedNS, int64(now-rc.curFrom))
	}
	return out
}
