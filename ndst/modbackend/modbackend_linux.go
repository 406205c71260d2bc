package modbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/safefile"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
)

// Bounds on the writes to the module (see the package doc, "Faults"). The
// per-device allowances are far above what a device costs, even under TCG
// (tens of milliseconds at most for a one-by-one del; the 2009 kernel took
// 250 ms).
const (
	baseTimeout   = 60 * time.Second
	perDeviceAdd  = 50 * time.Millisecond
	perDeviceDel  = 300 * time.Millisecond
	holdTimeout   = 10 * time.Second
	readChunkSize = 1 << 20
	// readLimit bounds one file's text (devices: about 30 bytes a device).
	readLimit = 64 << 20
)

// The module's files, and whether the backend writes them.
var knobs = []struct {
	name  string
	write bool
}{
	{"add", true}, {"del", true}, {"del_batch", true}, {"hold", true},
	{"last", false}, {"samples", false}, {"devices", false},
}

// Backend drives the ndst kernel module in one network namespace. Its
// methods are safe for concurrent use (they run one at a time).
type Backend struct {
	o   Options
	log *zap.Logger
	nl  *nlbackend.Backend
	f   map[string]*os.File

	mu sync.Mutex
	// broken is set when a write outlived its bound or was abandoned: the
	// module may still be working on it.
	broken error
}

var _ ndst.Backend = (*Backend)(nil)

// Loaded returns nil when the ndst module is loaded in the running kernel,
// and otherwise an error that says how to load it.
func Loaded() error {
	if _, err := os.Stat("/sys/module/ndst"); err != nil {
		return errors.New("the ndst kernel module is not loaded: build kmod/ against this kernel's headers (make -C kmod) and insmod kmod/ndst.ko; scripts/vm-run.sh --module does both in the VM rig")
	}
	if _, err := os.Stat(Dir); err != nil {
		return fmt.Errorf("the ndst kernel module is loaded but %s is missing: %v", Dir, err)
	}
	return nil
}

// Open checks that the module is loaded, opens (or creates) the namespace
// and opens the module's files in it.
func Open(ctx context.Context, o Options) (*Backend, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	name := o.Netns
	if name == "" {
		name = nlbackend.DefaultNetns
	}
	if err := nlbackend.ValidateNetns(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := Loaded(); err != nil {
		return nil, err
	}
	path := filepath.Join("/run/netns", name)
	if _, err := os.Stat(path); o.NoCreate && errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("network namespace %q does not exist, so it has no devices ('ndst --backend module add N' creates it)", name)
	}
	nl, err := nlbackend.Open(ctx, nlbackend.Options{
		Netns: name, NoCreate: o.NoCreate, AllowRootNS: o.AllowRootNS, Logger: o.Logger, Notef: o.Notef,
	})
	if err != nil {
		return nil, err
	}
	files, err := openKnobs(path)
	if err != nil {
		nl.Close()
		return nil, err
	}
	return &Backend{o: o, log: o.Logger, nl: nl, f: files}, nil
}

// openKnobs opens the module's files as seen from the namespace at nsPath,
// on a locked OS thread that enters the namespace and is never unlocked: it
// ends with its goroutine, so no other goroutine ever runs in the namespace.
func openKnobs(nsPath string) (map[string]*os.File, error) {
	type result struct {
		files map[string]*os.File
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		files, err := openKnobsHere(nsPath)
		ch <- result{files, err}
	}()
	r := <-ch
	return r.files, r.err
}

func openKnobsHere(nsPath string) (map[string]*os.File, error) {
	h, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		return nil, fmt.Errorf("enter network namespace %s: %w", nsPath, err)
	}
	files := map[string]*os.File{}
	for _, k := range knobs {
		flag := os.O_RDONLY
		if k.write {
			flag = os.O_RDWR
		}
		f, err := safefile.OpenFile(filepath.Join(Dir, k.name), flag, 0, safefile.FollowLinks)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("the ndst module's %s in namespace %s: %w (an older or different module?)", k.name, nsPath, err)
		}
		files[k.name] = f
	}
	return files, nil
}

// Name implements ndst.Backend.
func (b *Backend) Name() string { return "module" }

// Netns returns the namespace's name.
func (b *Backend) Netns() string { return b.nl.Netns() }

// Close implements ndst.Backend. A write still inside the module (after a
// timeout) keeps its file open until it returns.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.f {
		f.Close()
	}
	b.f = nil
	if b.nl != nil {
		b.nl.Close()
		b.nl = nil
	}
	return nil
}

func (b *Backend) ready() error {
	if b.broken != nil {
		return b.broken
	}
	if b.f == nil {
		return errors.New("module backend is closed")
	}
	return nil
}

// write writes text at offset 0 of the module's file name (every write to
// the module is one whole line at offset 0), giving up after timeout or when
// ctx is done.
func (b *Backend) write(ctx context.Context, name, text string, timeout time.Duration) error {
	f := b.f[name]
	done := make(chan error, 1)
	go func() {
		_, err := f.WriteAt([]byte(text), 0)
		done <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		b.broken = fmt.Errorf("the module did not finish %q > %s within %v; it may still be working (see %s/last)", trimNL(text), name, timeout, Dir)
	case <-ctx.Done():
		b.broken = fmt.Errorf("interrupted (%v) while the module worked on %q > %s; it finishes by itself (see %s/last)", ctx.Err(), trimNL(text), name, Dir)
	}
	return b.broken
}

// read returns the whole text of the module's file name. Reads never block
// in the module; a text longer than one chunk is read in pieces that the
// module formats afresh each time.
func (b *Backend) read(name string) (string, error) {
	f := b.f[name]
	var text []byte
	chunk := make([]byte, readChunkSize)
	for off := int64(0); ; {
		n, err := f.ReadAt(chunk, off)
		text = append(text, chunk[:n]...)
		off += int64(n)
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return string(text), nil
		}
		if err != nil {
			return "", fmt.Errorf("read %s/%s: %w", Dir, name, err)
		}
		if off > readLimit {
			return "", fmt.Errorf("read %s/%s: more than %d bytes", Dir, name, readLimit)
		}
	}
}

func (b *Backend) last() (Last, error) {
	text, err := b.read("last")
	if err != nil {
		return Last{}, err
	}
	return ParseLast(text)
}

// Devices returns the module's devices in the namespace, by ifindex.
func (b *Backend) Devices() ([]ModDevice, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	return b.devices()
}

func (b *Backend) devices() ([]ModDevice, error) {
	text, err := b.read("devices")
	if err != nil {
		return nil, err
	}
	d, err := ParseDevices(text)
	if err != nil {
		return nil, err
	}
	sort.Slice(d, func(i, j int) bool { return d[i].Ifindex < d[j].Ifindex })
	return d, nil
}

// newResult fills the fields every module Result shares.
func (b *Backend) newResult(op string) *ndst.Result {
	r := &ndst.Result{Op: op, Backend: "module", Kind: Kind, Result: ndst.ResultOK}
	h := b.nl.Host()
	if h.HZ > 0 {
		hz := h.HZ
		r.HZ = &hz
	}
	if h.CPUs > 0 {
		cpus := h.CPUs
		r.CPUs = &cpus
	}
	if h.Preempt != "" {
		p := h.Preempt
		r.Preempt = &p
	}
	return r
}

func fail(r *ndst.Result, err error) (*ndst.Result, error) {
	r.Result = ndst.ResultError
	r.Error = err.Error()
	return r, err
}

func (b *Backend) notef(r *ndst.Result, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.Notes = append(r.Notes, s)
	if b.o.Notef != nil {
		b.o.Notef("%s", s)
	}
}

// account reads the module's account of the write that just ran (op, after
// the operation numbered before.Seq) into r: count, skipped, in-kernel
// duration and per-device latencies. It reports false, with a note, when
// another writer's operation came in between.
func (b *Backend) account(r *ndst.Result, op string, before Last) bool {
	after, err := b.last()
	if err == nil && after.Seq == before.Seq {
		return false // the module refused the write before doing anything
	}
	if err != nil || after.Seq != before.Seq+1 || after.Op != op {
		if err == nil {
			err = fmt.Errorf("operation %d there is %s, not this %s", after.Seq, after.Op, op)
		}
		b.notef(r, "in-kernel duration unknown: another writer used the module meanwhile (%v)", err)
		return false
	}
	r.Count, r.Skipped = after.Count, after.Skipped
	r.Counters = map[string]int64{"kernel_ns": after.Kernel.Nanoseconds()}
	text, err := b.read("samples")
	if err == nil {
		var s []int64
		if s, err = ParseSamples(text); err == nil {
			if again, err2 := b.last(); err2 == nil && again.Seq == after.Seq {
				r.Latency = ndst.Summarize(s)
			}
		}
	}
	if err != nil {
		b.notef(r, "per-device latencies unavailable: %v", err)
	}
	return true
}

// writeError turns the module's answer to a write into the error ndst
// reports.
func writeError(name, text string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("%s/%s: %w", Dir, name, err)
	}
	switch errno {
	case syscall.EINVAL:
		return ndst.Usagef("the ndst module rejected %q > %s/%s as malformed", trimNL(text), Dir, name)
	case syscall.EPERM, syscall.EACCES:
		return fmt.Errorf("writing %s/%s needs CAP_NET_ADMIN in the namespace: run as root (%w)", Dir, name, errno)
	}
	return fmt.Errorf("the ndst module: %q > %s/%s: %w", trimNL(text), Dir, name, errno)
}

// Add implements ndst.Backend.
func (b *Backend) Add(ctx context.Context, req ndst.AddRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	if err := b.nl.CheckChange("add"); err != nil {
		return nil, err
	}
	if req.Count < 1 || req.Count > MaxAdd {
		return nil, ndst.Usagef("the module backend creates 1..%d devices per add (the kernel's %%d names), got %d", MaxAdd, req.Count)
	}
	switch req.Kind {
	case "", "dummy", Kind:
	default:
		return nil, ndst.Usagef("the module backend makes devices of its own dummy-like kind %q; kind %q is for the netlink backend", Kind, req.Kind)
	}
	tmpl := req.Template
	if tmpl == (ndst.Template{}) {
		tmpl, _ = ndst.ParseTemplate(ndst.DefaultTemplate)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	before, err := b.last()
	if err != nil {
		return nil, err
	}
	res := b.newResult("add")
	if b.nl.Created() {
		res.Notes = append(res.Notes, fmt.Sprintf("created network namespace %s", b.nl.Netns()))
	}
	text := fmt.Sprintf("%d %s\n", req.Count, tmpl.String())
	t0 := time.Now()
	werr := b.write(ctx, "add", text, baseTimeout+time.Duration(req.Count)*perDeviceAdd)
	res.WallNS = time.Since(t0).Nanoseconds()
	if b.broken != nil {
		return fail(res, b.broken)
	}
	if !b.account(res, "add", before) && werr == nil {
		res.Count = req.Count // the module creates all or fails
	}
	if werr != nil {
		return fail(res, fmt.Errorf("%w (created %d of %d)", writeError("add", text, werr), res.Count, req.Count))
	}
	b.log.Debug("add", zap.Int("count", res.Count), zap.Duration("wall", time.Duration(res.WallNS)))
	return res, nil
}

// Del implements ndst.Backend.
func (b *Backend) Del(ctx context.Context, req ndst.DelRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	if err := b.nl.CheckChange("del"); err != nil {
		return nil, err
	}
	if req.Match != "" {
		return nil, ndst.Usagef("--match: the ndst module deletes ifindex ranges (echo START STOP > del); use --backend netlink or sim to choose devices by name")
	}
	if err := ndst.CheckRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	devs, err := b.devices()
	if err != nil {
		return nil, err
	}
	sel := 0
	for _, d := range devs {
		if d.Ifindex >= req.Start && d.Ifindex <= req.Stop {
			sel++
		}
	}
	res := b.newResult("del")
	res.Batched = !req.OneByOne
	if sel == 0 {
		return fail(res, fmt.Errorf("del %d %d: %w created by the ndst module in namespace %s (it has %d)",
			req.Start, req.Stop, ndst.ErrNoDevices, b.nl.Netns(), len(devs)))
	}
	timeout := baseTimeout + time.Duration(sel)*perDeviceDel
	holds, err := b.holds()
	if err != nil {
		return nil, err
	}
	for _, h := range holds {
		timeout += h.Left
	}
	before, err := b.last()
	if err != nil {
		return nil, err
	}
	knob, op := "del_batch", "del_batch"
	if req.OneByOne {
		knob, op = "del", "del"
	}
	text := fmt.Sprintf("%d %d\n", req.Start, req.Stop)
	t0 := time.Now()
	werr := b.write(ctx, knob, text, timeout)
	res.WallNS = time.Since(t0).Nanoseconds()
	if b.broken != nil {
		return fail(res, b.broken)
	}
	if !b.account(res, op, before) && werr == nil {
		res.Count = sel // on success every selected device is gone
	}
	if res.Skipped > 0 {
		noun := "devices"
		if res.Skipped == 1 {
			noun = "device"
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%d %s in the range not created by the module (such as lo) left alone", res.Skipped, noun))
	}
	if werr != nil {
		return fail(res, fmt.Errorf("%w (deleted %d of %d devices; a rerun continues)", writeError(knob, text, werr), res.Count, sel))
	}
	b.log.Debug("del", zap.Int("count", res.Count), zap.Bool("batched", res.Batched), zap.Duration("wall", time.Duration(res.WallNS)))
	return res, nil
}

// List implements ndst.Backend: every link of the namespace, ordered by
// ifindex; those that are not the module's are Foreign.
func (b *Backend) List(ctx context.Context, req ndst.ListRequest) ([]ndst.Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	mod, err := b.devices()
	if err != nil {
		return nil, err
	}
	own := make(map[int]ModDevice, len(mod))
	for _, d := range mod {
		own[d.Ifindex] = d
	}
	devs, err := b.nl.List(ctx, req)
	if err != nil {
		return nil, err
	}
	for i := range devs {
		d, ok := own[devs[i].Ifindex]
		devs[i].Foreign = !ok
		if ok {
			devs[i].Kind = Kind
			devs[i].Refcount = ndst.Known(d.Refcount)
		}
	}
	return devs, nil
}

func (b *Backend) holds() ([]HoldInfo, error) {
	text, err := b.read("hold")
	if err != nil {
		return nil, err
	}
	return ParseHolds(text)
}

// Holds lists the module's holds in the namespace.
func (b *Backend) Holds() ([]HoldInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	return b.holds()
}

// Hold makes the module keep one extra reference on the device ifindex (one
// of its own) for d, rounded up to whole milliseconds (1 ms .. MaxHold).
func (b *Backend) Hold(ctx context.Context, ifindex int, d time.Duration) error {
	if ifindex < 1 {
		return ndst.Usagef("hold: bad ifindex %d", ifindex)
	}
	if d <= 0 || d > MaxHold {
		return ndst.Usagef("hold: duration %v out of range (1ms..%v)", d, MaxHold)
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return b.holdWrite(ctx, fmt.Sprintf("%d %d\n", ifindex, ms), ifindex)
}

// Release drops the module's hold on the device ifindex now.
func (b *Backend) Release(ctx context.Context, ifindex int) error {
	if ifindex < 1 {
		return ndst.Usagef("release: bad ifindex %d", ifindex)
	}
	return b.holdWrite(ctx, fmt.Sprintf("%d 0\n", ifindex), ifindex)
}

func (b *Backend) holdWrite(ctx context.Context, text string, ifindex int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return err
	}
	err := b.write(ctx, "hold", text, holdTimeout)
	var errno syscall.Errno
	switch {
	case err == nil:
		return nil
	case b.broken != nil:
		return err
	case errors.As(err, &errno) && errno == syscall.ENODEV:
		return fmt.Errorf("hold: device %d in namespace %s is not one of the module's (it holds only devices it created): %w", ifindex, b.nl.Netns(), errno)
	case errors.As(err, &errno) && errno == syscall.EBUSY:
		return fmt.Errorf("hold: device %d is held already (release it first): %w", ifindex, errno)
	case errors.As(err, &errno) && errno == syscall.ENOENT:
		return fmt.Errorf("release: device %d is not held: %w", ifindex, errno)
	}
	return writeError("hold", text, err)
}

func trimNL(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\n' {
		return s[:n-1]
	}
	return s
}
