// Package churn measures how many devices per second threads can create and
// destroy in an in-memory netdev registry, and what limits it: the
// "opensock -t 16 -n 10000000 -l 10" experiment of the fd-table seed, for
// network devices.
//
// Each namespace is a registry built from the same parts as the emulated
// kernel's (package netdev): a devtable.Table hashed by name and ifindex, an
// ifindex allocator (cyclic lowest-free, like dev_new_index) and a %d name
// allocator (lowest free number, like dev_alloc_name), both from package
// idalloc. Unlike netdev, which runs one virtual task at a time, this
// registry is driven by real goroutines and guarded by real locks.
//
// The locking schemes keep the kernel's semantics (names and ifindexes
// unique among listed devices, each %d name the lowest free number when it
// is taken, an unlisted device's name and index reusable at once):
//
//   - rtnl: one lock for every namespace, held across a whole create or
//     destroy including the per-device work, as RTNL is. Throughput cannot
//     grow with threads.
//   - netns: one lock per namespace, held across the whole operation (the
//     per-namespace RTNL being built upstream). Threads in different
//     namespaces run in parallel; in one namespace it is rtnl.
//   - split: one lock per namespace held only for allocation and the table;
//     the per-device work (setup before listing, teardown after unlisting)
//     runs outside it. A listed device is always fully set up.
//
// Invariants: after Run, every namespace is empty again and its table and
// allocators agree (Run reports an error otherwise); the counts add up
// (Ops = Creates + Destroys = sum of PerThread); memory stays proportional
// to the devices alive however long the run (the ifindex cursor wraps at
// IndexSpace), and a run with Config.MaxMemory is refused up front when its
// estimate is above it and stopped when the process goes above it.
package churn

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndst-project/ndst/devtable"
	"github.com/ndst-project/ndst/idalloc"
	"github.com/ndst-project/ndst/ndst"
)

// Locking schemes.
const (
	LockRTNL  = "rtnl"
	LockNetns = "netns"
	LockSplit = "split"
)

// Lockings lists the locking schemes.
var Lockings = []string{LockRTNL, LockNetns, LockSplit}

// Allocators.
const (
	AllocBitmap = "bitmap"
	AllocLinear = "linear"
)

// Limits on the configuration.
const (
	MaxThreads    = 1024
	MaxCount      = 10_000_000
	MaxNamespaces = 1024
	MaxDuration   = time.Hour
	MaxWork       = time.Second
	MaxListers    = 64
)

// Config is one churn run.
type Config struct {
	Threads    int           // goroutines creating and destroying devices
	Count      int           // devices kept alive per namespace in steady state (>= Threads)
	Duration   time.Duration // how long to churn
	Locking    string        // LockRTNL, LockNetns or LockSplit
	Namespaces int           // threads are spread over this many namespaces
	Alloc      string        // AllocBitmap or AllocLinear, for ifindexes and names
	// Work is the CPU time spent per create and per destroy beside the
	// registry's own bookkeeping (device setup, notifiers, sysfs):
	// busy-waited, under the lock with rtnl and netns, outside with split.
	Work time.Duration
	// Listers are goroutines that list their namespace in pages of 28
	// (a 4 KB read of /proc/net/dev) throughout, each page under the
	// namespace's lock.
	Listers  int
	Template ndst.Template
	// MaxMemory bounds the run's memory in bytes (0: no bound): Run
	// refuses a Config whose Memory estimate is above it and stops a run
	// whose process grows above it, with an *OverMemoryError either way.
	MaxMemory uint64
}

// Validate checks c and returns a *ndst.UsageError naming the bad field.
func (c Config) Validate() error {
	switch {
	case c.Threads < 1 || c.Threads > MaxThreads:
		return ndst.Usagef("threads must be in [1, %d], got %d", MaxThreads, c.Threads)
	case c.Count < 1 || c.Count > MaxCount:
		return ndst.Usagef("count must be in [1, %d], got %d", MaxCount, c.Count)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return ndst.Usagef("duration must be in (0, %v], got %v", MaxDuration, c.Duration)
	case c.Namespaces < 1 || c.Namespaces > MaxNamespaces:
		return ndst.Usagef("namespaces must be in [1, %d], got %d", MaxNamespaces, c.Namespaces)
	case c.Work < 0 || c.Work > MaxWork:
		return ndst.Usagef("work must be in [0, %v], got %v", MaxWork, c.Work)
	case c.Listers < 0 || c.Listers > MaxListers:
		return ndst.Usagef("listers must be in [0, %d], got %d", MaxListers, c.Listers)
	}
	switch c.Locking {
	case LockRTNL, LockNetns, LockSplit:
	default:
		return ndst.Usagef("unknown locking %q (want %s, %s or %s)", c.Locking, LockRTNL, LockNetns, LockSplit)
	}
	switch c.Alloc {
	case AllocBitmap, AllocLinear:
	default:
		return ndst.Usagef("unknown allocator %q (want %s or %s)", c.Alloc, AllocBitmap, AllocLinear)
	}
	if c.Namespaces > c.Threads {
		return ndst.Usagef("namespaces %d is more than threads %d: a namespace holds devices only while a thread of its own churns in it, so %d would stay empty; use at least as many threads as namespaces",
			c.Namespaces, c.Threads, c.Namespaces-c.Threads)
	}
	if c.Count < c.Threads {
		return ndst.Usagef("count %d is below threads %d: each thread keeps at least one device", c.Count, c.Threads)
	}
	if c.Template.MaxNumber() < c.Count-1 {
		return ndst.Usagef("name template %s has %d names, fewer than count %d", c.Template, c.Template.MaxNumber()+1, c.Count)
	}
	return nil
}

// Result is what a run measured.
type Result struct {
	Config  Config
	Elapsed time.Duration
	// Interrupted is set when the context ended the run before its
	// duration (Run then returns an error too).
	Interrupted bool
	Ops         int64 // creates + destroys
	Creates     int64
	Destroys    int64
	// PerThread is each thread's operations.
	PerThread []int64
	// OpsPerSec is Ops / Elapsed.
	OpsPerSec float64
	// LockWait is the time threads spent waiting for registry locks,
	// summed over threads; LockHeld the time the locks were held, summed
	// over locks. LockHeldFrac is LockHeld / (Elapsed * locks): near 1,
	// the lock is the bottleneck.
	LockWait     time.Duration
	LockHeld     time.Duration
	LockHeldFrac float64
	Locks        int
	// HoldPerOp is the lock time one operation costs (LockHeld / Ops),
	// and Ceiling the throughput the locks allow at that cost
	// (Locks / HoldPerOp): however many threads and CPUs there are, the
	// run cannot exceed it.
	HoldPerOp time.Duration
	Ceiling   float64
	// Listings counts complete listings by the listers.
	Listings int64
	// MaxDevices is the most devices alive in one namespace at the end of
	// the churn (before the cleanup).
	MaxDevices int
	// GOMAXPROCS is the parallelism the run had.
	GOMAXPROCS int
}

// device is what a registry entry points to: the device's own state.
type device struct {
	name    string
	ifindex int
	number  int      // its %d
	_       [64]byte // stands for the private area set up by the driver (its size, never read)
}

// lock is a mutex that accounts the time it is waited for and held.
type lock struct {
	mu     sync.Mutex
	taken  time.Time
	heldNS atomic.Int64
}

func (l *lock) acquire(waitNS *int64) {
	t0 := time.Now()
	l.mu.Lock()
	l.taken = time.Now()
	*waitNS += int64(l.taken.Sub(t0))
}

func (l *lock) release() {
	l.heldNS.Add(int64(time.Since(l.taken)))
	l.mu.Unlock()
}

// namespace is one registry.
type namespace struct {
	lk      *lock // the lock guarding it (shared by all with rtnl)
	table   *devtable.Table[*device]
	ifindex idalloc.Allocator
	names   idalloc.Allocator
	next    int // cyclic ifindex cursor: the last ifindex handed out
	wrap    int // the cursor wraps to 1 after this ifindex (IndexSpace)
	tmpl    ndst.Template
}

// IndexSpace is the ifindex range [1, IndexSpace(count)] over which a
// namespace keeping count devices alive hands out ifindexes cyclically.
//
// The kernel's cursor wraps at 2^31-1, and its ifindexes live in an xarray
// whose memory follows the devices alive. The allocators here are dense
// bitmaps over [1, highest index ever used]: with a cursor wrapping at
// 2^31-1, churn's steady create-destroy cycle would take a new, higher
// ifindex on every create and grow each namespace's bitmap by one bit per
// create, without bound until 256 MiB, over a long run (-l 3600 at 3 million
// operations a second). Wrapping at four times the devices alive (at least
// 65536) keeps the bitmap proportional to them while the allocation stays
// cyclic: an ifindex freed is handed out again only after a full lap, by
// which time the devices alive have all moved on.
func IndexSpace(count int) int { return min(max(4*count, 1<<16), devtable.MaxIndex) }

func newNamespace(c Config, lk *lock) *namespace {
	wrap := IndexSpace(c.Count)
	return &namespace{
		lk:      lk,
		table:   newTable(),
		ifindex: newAllocator(c.Alloc, 1, wrap),
		names:   newAllocator(c.Alloc, 0, c.Template.MaxNumber()),
		wrap:    wrap,
		tmpl:    c.Template,
	}
}

func newAllocator(kind string, min, max int) idalloc.Allocator {
	if kind == AllocLinear {
		return idalloc.NewLinear(min, max)
	}
	return idalloc.NewBitmap(min, max)
}

// ErrInconsistent reports a registry whose table and allocators disagree.
var ErrInconsistent = errors.New("churn: registry inconsistent")

// create registers one device; the caller holds ns.lk. It returns the
// device, or an error when no name or index is left.
func (ns *namespace) create(d *device) error {
	num, err := ns.names.Alloc()
	if err != nil {
		return fmt.Errorf("name: %w", err)
	}
	start := ns.next + 1
	if start > ns.wrap {
		start = 1
	}
	idx, err := ns.ifindex.AllocFrom(start)
	if err != nil {
		_ = ns.names.Free(num)
		return fmt.Errorf("ifindex: %w", err)
	}
	ns.next = idx
	d.name, d.ifindex, d.number = ns.tmpl.Name(num), idx, num
	if err := ns.table.Insert(d.name, idx, d); err != nil {
		_ = ns.names.Free(num)
		_ = ns.ifindex.Free(idx)
		return fmt.Errorf("%w: %v", ErrInconsistent, err)
	}
	return nil
}

// destroy unlists d; the caller holds ns.lk.
func (ns *namespace) destroy(d *device) error {
	if got, ok := ns.table.Remove(d.ifindex); !ok || got != d {
		return fmt.Errorf("%w: %s (ifindex %d) not listed", ErrInconsistent, d.name, d.ifindex)
	}
	if err := ns.ifindex.Free(d.ifindex); err != nil {
		return fmt.Errorf("%w: %v", ErrInconsistent, err)
	}
	if err := ns.names.Free(d.number); err != nil {
		return fmt.Errorf("%w: %v", ErrInconsistent, err)
	}
	return nil
}

// check verifies that the table and the allocators agree; the caller holds
// ns.lk.
func (ns *namespace) check() error {
	n := ns.table.Len()
	if ns.ifindex.Len() != n || ns.names.Len() != n {
		return fmt.Errorf("%w: %d devices listed, %d ifindexes and %d names in use",
			ErrInconsistent, n, ns.ifindex.Len(), ns.names.Len())
	}
	var err error
	ns.table.Range(func(ifindex int, name string, d *device) bool {
		if d.ifindex != ifindex || d.name != name || !ns.ifindex.InUse(ifindex) || !ns.names.InUse(d.number) {
			err = fmt.Errorf("%w: entry %d %q does not match device %d %q", ErrInconsistent, ifindex, name, d.ifindex, d.name)
			return false
		}
		return true
	})
	return err
}

// spin busy-waits for d: CPU work that a lock holder cannot yield.
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// listPage is the page size of the listers: a 4 KB read of 150-byte lines.
const listPage = 28

// Run churns for c.Duration (or until ctx ends) and reports. It validates c
// first and changes nothing on a usage error, and refuses a run whose memory
// estimate is above c.MaxMemory (see memory.go).
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkMemory(c); err != nil {
		return nil, err
	}
	locks := make([]*lock, c.Namespaces)
	nss := make([]*namespace, c.Namespaces)
	for i := range nss {
		switch {
		case c.Locking == LockRTNL && i > 0:
			locks[i] = locks[0]
		default:
			locks[i] = &lock{}
		}
		nss[i] = newNamespace(c, locks[i])
	}
	nlocks := c.Namespaces
	if c.Locking == LockRTNL {
		nlocks = 1
	}

	// Threads of namespace i: i, i+N, i+2N, ...; each keeps its share of
	// the namespace's Count devices.
	perNS := make([]int, c.Namespaces)
	for t := 0; t < c.Threads; t++ {
		perNS[t%c.Namespaces]++
	}

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	var stop atomic.Bool
	go func() { <-ctx.Done(); stop.Store(true) }()

	res := &Result{Config: c, PerThread: make([]int64, c.Threads), Locks: nlocks, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	waits := make([]int64, c.Threads)
	creates := make([]int64, c.Threads)
	owned := make([][]*device, c.Threads)
	errs := make(chan error, c.Threads+c.Listers)
	var wg sync.WaitGroup

	start := time.Now()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	memErr := watchMemory(watchCtx, c, start, &stop)
	for t := 0; t < c.Threads; t++ {
		ns := nss[t%c.Namespaces]
		quota := c.Count / perNS[t%c.Namespaces]
		if t/c.Namespaces < c.Count%perNS[t%c.Namespaces] {
			quota++ // spread the remainder
		}
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			var mine []*device // FIFO: destroy the oldest
			var ops, made int64
			var wait int64
			for !stop.Load() {
				if len(mine) < quota {
					d := &device{}
					if c.Locking == LockSplit {
						spin(c.Work) // set the device up before listing it
					}
					ns.lk.acquire(&wait)
					if c.Locking != LockSplit {
						spin(c.Work)
					}
					err := ns.create(d)
					ns.lk.release()
					if err != nil {
						errs <- fmt.Errorf("thread %d: create: %w", t, err)
						break
					}
					mine = append(mine, d)
					made++
				} else {
					d := mine[0]
					mine[0] = nil
					mine = mine[1:]
					ns.lk.acquire(&wait)
					err := ns.destroy(d)
					if c.Locking != LockSplit {
						spin(c.Work)
					}
					ns.lk.release()
					if err != nil {
						errs <- fmt.Errorf("thread %d: destroy: %w", t, err)
						break
					}
					if c.Locking == LockSplit {
						spin(c.Work) // tear down after unlisting
					}
				}
				ops++
			}
			res.PerThread[t], creates[t], waits[t], owned[t] = ops, made, wait, mine
		}(t)
	}
	var listings atomic.Int64
	for l := 0; l < c.Listers; l++ {
		ns := nss[l%c.Namespaces]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var wait int64
			cur := devtable.Cursor{}
			for !stop.Load() {
				ns.lk.acquire(&wait)
				cur = ns.table.List(cur, listPage, func(int, string, *device) {})
				ns.lk.release()
				if cur.Done() {
					listings.Add(1)
					cur = devtable.Cursor{}
				}
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	stopWatch()
	close(errs)
	runErr := memErr()
	if err := parent.Err(); err != nil {
		// A signal, not the duration, ended it: the figures are of a
		// shorter run than asked, and the command fails saying so.
		res.Interrupted = true
		runErr = errors.Join(runErr, fmt.Errorf("churn interrupted after %v of %v: %w", res.Elapsed.Round(time.Millisecond), c.Duration, err))
	}
	for err := range errs {
		runErr = errors.Join(runErr, err)
	}

	for t := range res.PerThread {
		res.Ops += res.PerThread[t]
		res.Creates += creates[t]
		res.LockWait += time.Duration(waits[t])
	}
	res.Destroys = res.Ops - res.Creates
	for i, l := range locks {
		if c.Locking != LockRTNL || i == 0 {
			res.LockHeld += time.Duration(l.heldNS.Load())
		}
	}
	if res.Elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Elapsed.Seconds()
		res.LockHeldFrac = float64(res.LockHeld) / (float64(res.Elapsed) * float64(nlocks))
	}
	res.Listings = listings.Load()
	if res.Ops > 0 && res.LockHeld > 0 {
		res.HoldPerOp = res.LockHeld / time.Duration(res.Ops)
		res.Ceiling = float64(nlocks) * float64(res.Ops) / res.LockHeld.Seconds()
	}

	// Check and empty every namespace.
	for _, ns := range nss {
		res.MaxDevices = max(res.MaxDevices, ns.table.Len())
		if err := ns.check(); err != nil {
			return res, errors.Join(runErr, err)
		}
	}
	for t, mine := range owned {
		ns := nss[t%c.Namespaces]
		for _, d := range mine {
			if err := ns.destroy(d); err != nil {
				return res, errors.Join(runErr, err)
			}
		}
	}
	for i, ns := range nss {
		if ns.table.Len() != 0 {
			return res, errors.Join(runErr, fmt.Errorf("%w: namespace %d keeps %d devices after the cleanup", ErrInconsistent, i, ns.table.Len()))
		}
		if err := ns.check(); err != nil {
			return res, errors.Join(runErr, err)
		}
	}
	return res, runErr
}

// Limit says, in one sentence, what bounded the run's throughput.
func (r *Result) Limit() string {
	c := r.Config
	switch {
	case r.LockHeldFrac >= 0.8 && c.Locking == LockRTNL:
		return fmt.Sprintf("the single rtnl lock: held %.0f%% of the time, %v per operation, so creates and destroys run one at a time, at most %.0f ops/s whatever the thread count; try --locking netns with --namespaces > 1, or --locking split", 100*r.LockHeldFrac, r.HoldPerOp, r.Ceiling)
	case r.LockHeldFrac >= 0.8:
		return fmt.Sprintf("the per-namespace locks: held %.0f%% of the time, %v per operation (at most %.0f ops/s); more namespaces or less work under the lock (--locking split) would help", 100*r.LockHeldFrac, r.HoldPerOp, r.Ceiling)
	case c.Threads > r.GOMAXPROCS:
		return fmt.Sprintf("the CPUs: %d threads share %d CPUs and the locks are held only %.0f%% of the time (they would allow %.0f ops/s)", c.Threads, r.GOMAXPROCS, 100*r.LockHeldFrac, r.Ceiling)
	default:
		return fmt.Sprintf("the work per device: the locks are held %.0f%% of the time (they would allow %.0f ops/s)", 100*r.LockHeldFrac, r.Ceiling)
	}
}

func newTable() *devtable.Table[*device] { return devtable.New[*device](256) }
