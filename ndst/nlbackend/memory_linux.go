package nlbackend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ndst-project/ndst/ndst"

	"github.com/ndst-project/ndst/safefile"
	"github.com/ndst-project/ndst/sysmem"
)

// The memory bound of add and netns add: every link costs kernel memory that no process
// owns (the net_device and its queues, kernfs nodes, per-CPU statistics),
// so an add that does not fit would push the host into reclaim and the OOM
// killer instead of failing. The cost per link is not assumed: Add measures
// it on the running kernel, as the growth of the kernel's unreclaimable
// memory (SUnreclaim + Percpu + VmallocUsed in /proc/meminfo) over its
// first window of creates, divided by the links that window made. When the
// rest of the request would need more than is available (MemAvailable less
// a reserve for the system), Add deletes the window's links again (they are
// one interface group of their own) and refuses, saying the estimate and
// the flag that overrides it (Options.NoMemoryCheck). Requests that fit in
// one window are checked against the reserve only. What is available is
// MemAvailable, or the headroom of the memory cgroup when that is less
// (the kernel charges these allocations to the creator's cgroup,
// GFP_KERNEL_ACCOUNT and SLAB_ACCOUNT: net_alloc and alloc_netdev_mqs in
// 6.18), whose limit then stands for the RAM. After every later window
// Add stops, keeping what it made, when MemAvailable falls below the
// reserve (something else is using the memory).
//
// The measurement is of the whole machine: other processes allocating or
// freeing kernel memory during the window make it noisy (the window of 256
// links grows these counters by about 11 MB on 6.18, where a link costs
// about 43 KiB), so it is an estimate, not an accounting.

// meminfoFile is read for the figures above.
const meminfoFile = "/proc/meminfo"

// meminfo is what the memory bound reads, in bytes.
type meminfo struct {
	total, avail uint64
	// kernel is SUnreclaim + Percpu + VmallocUsed: the kernel memory that
	// creating links grows and that reclaim cannot give back.
	kernel uint64
	// cgroup, when set, names the memory cgroup (this process's or an
	// ancestor) whose limit binds tighter than MemAvailable: the kernel
	// charges devices and namespaces to it, and avail and total are its
	// headroom and limit.
	cgroup string
}

// availWhat says what avail is, for messages.
func (m meminfo) availWhat() string {
	if m.cgroup != "" {
		return "the headroom of memory cgroup " + m.cgroup
	}
	return "MemAvailable"
}

// cgroupLimits reads the memory cgroup's limit; tests replace it.
var cgroupLimits = func() (headroom, limit uint64, where string, ok bool) {
	l := sysmem.Read()
	return l.Cgroup, l.CgroupLimit, l.CgroupPath, l.CgroupOK
}

// maxMeminfo bounds how much of /proc/meminfo is read.
const maxMeminfo = 64 << 10

// readMeminfo reads meminfoFile; tests replace it.
var readMeminfo = func() (meminfo, error) {
	f, err := safefile.Open(meminfoFile, safefile.FollowLinks)
	if err != nil {
		return meminfo{}, err
	}
	defer f.Close()
	m, err := parseMeminfo(io.LimitReader(f, maxMeminfo))
	if err != nil {
		return m, err
	}
	if head, limit, where, ok := cgroupLimits(); ok && head < m.avail {
		m.avail, m.total, m.cgroup = head, limit, where
	}
	return m, nil
}

// parseMeminfo reads lines such as "MemAvailable:   24005916 kB".
func parseMeminfo(r io.Reader) (meminfo, error) {
	var m meminfo
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(k) {
		case "MemTotal":
			dst = &m.total
		case "MemAvailable":
			dst = &m.avail
		case "SUnreclaim", "Percpu", "VmallocUsed":
			dst = &m.kernel
		default:
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return meminfo{}, fmt.Errorf("%s: bad %s value %q", meminfoFile, k, f[0])
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			n *= 1024
		}
		*dst += n
		seen++
	}
	if err := sc.Err(); err != nil {
		return meminfo{}, err
	}
	if m.total == 0 || seen < 5 {
		return meminfo{}, errors.New(meminfoFile + " lacks MemTotal, MemAvailable, SUnreclaim, Percpu or VmallocUsed")
	}
	return m, nil
}

// reserve is the memory Add leaves to the rest of the system: 5% of RAM
// (or of the binding cgroup's limit), at least 128 MiB or an eighth of it,
// whichever is less.
func (m meminfo) reserve() uint64 { return max(m.total/20, min(128<<20, m.total/8)) }

// usable is what Add may still take: MemAvailable less the reserve.
func (m meminfo) usable() uint64 {
	if m.avail <= m.reserve() {
		return 0
	}
	return m.avail - m.reserve()
}

// memEstimate is the outcome of measuring one window.
type memEstimate struct {
	perUnit float64 // bytes per unit (a link, or a veth pair); 0 if unknown
	units   int     // units the measurement covers
	need    uint64  // estimated bytes for the remaining units
	now     meminfo
}

// estimate derives the cost per unit from the kernel memory at base and
// now, after units were created, and the need of remaining more units.
func estimate(base, now meminfo, units, remaining int) memEstimate {
	e := memEstimate{units: units, now: now}
	if units > 0 && now.kernel > base.kernel {
		e.perUnit = float64(now.kernel-base.kernel) / float64(units)
		e.need = uint64(e.perUnit * float64(remaining))
	}
	return e
}

// humanBytes prints a byte count as people read it: "705.3 GiB", "43.1 KiB".
func humanBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// The bound of netns add, measured the same way: a namespace costs kernel
// memory of its own (struct net and its per-namespace tables, its sysctl
// and proc entries, lo and its queues), about 200 KiB on 6.18 with lo
// alone and 43 KiB more per link, 460 KiB with four links, lo up and a
// veth pair (this project's host; scripts/netns-memory.sh measures it).
// Before anything is created, the whole request is checked against floors
// a little under those figures, so that a request that cannot fit (a
// million namespaces) is refused at once; the first netnsMemWindow
// namespaces are then measured, as Add measures its first window, and the
// rest go ahead only if that estimate (never below the floor) fits. After
// that, every netnsStopEvery namespaces, the add stops, keeping what it
// made, once what is available falls below the reserve.
const (
	netnsMemWindow = 16
	netnsStopEvery = 32
	// netnsFloorBytes and linkFloorBytes are the floors: a namespace with
	// lo, and each link in it (a veth pair counts two).
	netnsFloorBytes = 180 << 10
	linkFloorBytes  = 40 << 10
)

// maxNetNamespacesFile is the kernel's bound on network namespaces per
// user namespace (user.max_net_namespaces, kernel/ucount.c).
var maxNetNamespacesFile = "/proc/sys/user/max_net_namespaces"

// nsMemGuard bounds one netns add.
type nsMemGuard struct {
	off   bool // --no-memory-check
	base  meminfo
	floor float64 // bytes per namespace before measuring
	perNS float64 // the estimate in use once measured (0 before)
	units int     // links per namespace (a veth pair counts two)
	count int
}

// netnsMemGuard checks req against the kernel's namespace limit and the
// memory floors, before anything is created.
func (b *Backend) netnsMemGuard(req ndst.NetnsAddRequest) (*nsMemGuard, error) {
	if raw, err := safefile.ReadKernelFile(maxNetNamespacesFile); err == nil {
		if limit, err := strconv.Atoi(string(bytes.TrimSpace(raw))); err == nil && req.Count > limit {
			return nil, ndst.Usagef("netns add %d: the kernel allows at most %d network namespaces per user namespace (user.max_net_namespaces, %s)",
				req.Count, limit, maxNetNamespacesFile)
		}
	}
	g := &nsMemGuard{off: b.o.NoMemoryCheck, units: req.Links, count: req.Count}
	if req.Veth {
		g.units += 2
	}
	g.floor = float64(netnsFloorBytes + g.units*linkFloorBytes)
	if g.off {
		return g, nil
	}
	mem, err := readMeminfo()
	if err != nil {
		return nil, fmt.Errorf("netns add: cannot bound its memory: %w (--no-memory-check skips the bound)", err)
	}
	g.base = mem
	if need := g.floor * float64(req.Count); mem.usable() == 0 || need > float64(mem.usable()) {
		return nil, ndst.Usagef("netns add %d: %s would need at least %s of kernel memory (%s per namespace, the least measured on this project's host); "+
			"%s is available (%s %s less %s kept for the system); nothing was created; --no-memory-check overrides",
			req.Count, plural(req.Count, "namespace")+withLinks(g.units), humanBytes(need), humanBytes(g.floor),
			humanBytes(float64(mem.usable())), mem.availWhat(), humanBytes(float64(mem.avail)), humanBytes(float64(mem.reserve())))
	}
	return g, nil
}

func withLinks(units int) string {
	if units == 0 {
		return ""
	}
	return " with " + plural(units, "link")
}

// netnsMemError is measure's refusal.
type netnsMemError struct {
	measured int // namespaces the estimate was measured on
	perNS    float64
	g        *nsMemGuard
	now      meminfo
}

func (e *netnsMemError) Error() string {
	return fmt.Sprintf("netns add %d: %s would need about %s of kernel memory (%s per namespace, measured on the first %d created); "+
		"%s is available (%s %s less %s kept for the system)",
		e.g.count, plural(e.g.count, "namespace")+withLinks(e.g.units), humanBytes(e.perNS*float64(e.g.count)), humanBytes(e.perNS), e.measured,
		humanBytes(float64(e.now.usable())), e.now.availWhat(), humanBytes(float64(e.now.avail)), humanBytes(float64(e.now.reserve())))
}

// measure estimates the cost per namespace from the made namespaces of the
// window and refuses when remaining more would not fit.
func (g *nsMemGuard) measure(made, remaining int) error {
	if g.off || made == 0 {
		return nil
	}
	now, err := readMeminfo()
	if err != nil {
		return fmt.Errorf("cannot bound the memory of netns add: %w (--no-memory-check skips the bound)", err)
	}
	g.perNS = g.floor
	if now.kernel > g.base.kernel {
		g.perNS = max(g.floor, float64(now.kernel-g.base.kernel)/float64(made))
	}
	if g.perNS*float64(remaining) > float64(now.usable()) {
		return &netnsMemError{measured: made, perNS: g.perNS, g: g, now: now}
	}
	return nil
}

// stop ends an add once what is available falls below the reserve.
func (g *nsMemGuard) stop() error {
	if g.off {
		return nil
	}
	now, err := readMeminfo()
	if err != nil {
		return fmt.Errorf("cannot bound the memory of netns add: %w (--no-memory-check skips the bound)", err)
	}
	if now.usable() == 0 {
		return fmt.Errorf("stopped: only %s of memory is left (%s), below the %s kept for the system (--no-memory-check overrides)",
			humanBytes(float64(now.avail)), now.availWhat(), humanBytes(float64(now.reserve())))
	}
	return nil
}

// refuseNetnsMemory undoes a netns add whose window showed that the rest
// would not fit: it deletes the namespaces made to measure and fails with
// the estimate.
func (b *Backend) refuseNetnsMemory(res *ndst.Result, made []string, e *netnsMemError) (*ndst.Result, error) {
	var errs []error
	for _, name := range made {
		if err := removeNetns(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		res.Count = len(made)
		return fail(res, fmt.Errorf("%v; refused, but deleting the %d namespaces made to measure failed: %w (ndst netns del or reset removes them)", e, len(made), err))
	}
	res.Count, res.Latency = 0, nil
	return fail(res, fmt.Errorf("%v; refused: nothing was created (the %d namespaces made to measure were deleted again); --no-memory-check overrides", e, len(made)))
}
