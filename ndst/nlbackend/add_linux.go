package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// unit is what one create request makes: one link, or a veth pair.
type unit struct{ name, peer string }

// nameSource hands out the lowest-numbered names of a template that no
// listed link uses, a window at a time, so that a large add holds only one
// window of names (16M names would be a gigabyte).
type nameSource struct {
	t    ndst.Template
	used map[int]bool
	next int
	veth bool // units are pairs
}

// newNameSource checks that t has room for count more names besides those
// of links (names and alternative names).
func newNameSource(t ndst.Template, links []link, count int, veth bool) (*nameSource, error) {
	used := make(map[int]bool, len(links))
	for _, l := range links {
		if n := t.Number(l.Name); n >= 0 {
			used[n] = true
		}
		for _, a := range l.AltNames {
			if n := t.Number(a); n >= 0 {
				used[n] = true
			}
		}
	}
	max := t.MaxNumber()
	taken := 0
	for n := range used {
		if n <= max {
			taken++
		}
	}
	if free := max + 1 - taken; free < count {
		return nil, ndst.Usagef("name template %q has room for only %d more names (numbers up to %d fit in 15 bytes); cannot add %d",
			t.String(), free, max, count)
	}
	return &nameSource{t: t, used: used, veth: veth}, nil
}

// name returns the next free name.
func (s *nameSource) name() string {
	for s.used[s.next] {
		s.next++
	}
	s.next++
	return s.t.Name(s.next - 1)
}

// units returns the next n create requests' names.
func (s *nameSource) units(n int) []unit {
	out := make([]unit, n)
	for i := range out {
		if s.veth {
			// The kernel registers the peer first: giving it the lower
			// number keeps names and ifindexes in the same order.
			out[i].peer = s.name()
		}
		out[i].name = s.name()
	}
	return out
}

// allocate returns the first count names of newNameSource (for tests).
func allocate(t ndst.Template, links []link, count int) ([]string, error) {
	s, err := newNameSource(t, links, count, false)
	if err != nil {
		return nil, err
	}
	names := make([]string, count)
	for i := range names {
		names[i] = s.name()
	}
	return names, nil
}

// defaultTemplate is the template of a request that names none.
var defaultTemplate, _ = ndst.ParseTemplate(ndst.DefaultTemplate)

// template is the name template for a request of kind: the request's, or,
// when that is the default and the user chose none, one named after the
// kind (ifb%d for ifb links rather than dummy%d).
func (b *Backend) template(t ndst.Template, kind string) ndst.Template {
	if t == (ndst.Template{}) {
		t = defaultTemplate
	}
	if t == defaultTemplate && !b.o.NameExplicit {
		if kt, err := ndst.ParseTemplate(kind + "%d"); err == nil {
			return kt
		}
	}
	return t
}

// plan checks the names for count devices of kind and returns their source.
func (b *Backend) plan(t ndst.Template, kind string, links []link, count int) (*nameSource, error) {
	return newNameSource(b.template(t, kind), links, count, kind == "veth")
}

// Add implements ndst.Backend: it creates req.Count links, all in one
// interface group of their own (see the package doc for veth, the dummy
// fallback and the memory bound).
func (b *Backend) Add(ctx context.Context, req ndst.AddRequest) (*ndst.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	b.probeHost()
	if req.Count < 1 || req.Count > ndst.MaxCount {
		return nil, ndst.Usagef("count must be in 1..%d, got %d", ndst.MaxCount, req.Count)
	}
	kind, explicit := b.o.Kind, b.o.KindExplicit
	if req.Kind != "" && req.Kind != kind {
		if err := ValidateKind(req.Kind); err != nil {
			return nil, err
		}
		kind, explicit = req.Kind, true
	}
	if err := req.Addrs.Normalize(); err != nil {
		return nil, err
	}
	if ndst.IsChildKind(req.Kind) || req.Parent != "" {
		return b.addChildren(ctx, req)
	}
	if err := b.checkAddrs(req.Addrs); err != nil {
		return nil, err
	}
	if kind == "veth" && req.Count%2 != 0 {
		return nil, ndst.Usagef("veth devices come in pairs: add %d with kind veth needs an even count (N devices = N/2 pairs)", req.Count)
	}
	if kind == "dummy" && b.noDummy {
		if explicit {
			return nil, errNoDummy()
		}
		kind = "ifb"
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := b.beginChange(ctx, "add")
	if err != nil {
		return nil, err
	}
	defer unlock()
	links, err := b.dump()
	if err != nil {
		return nil, fmt.Errorf("add: list devices in namespace %s: %w", b.o.Netns, err)
	}
	src, err := b.plan(req.Template, kind, links, req.Count)
	if err != nil {
		return nil, err
	}
	total := req.Count // create requests: links, or veth pairs
	if kind == "veth" {
		total /= 2
	}
	var mem meminfo
	if !b.o.NoMemoryCheck {
		if mem, err = readMeminfo(); err != nil {
			return nil, fmt.Errorf("add: cannot bound its memory: %w (--no-memory-check skips the bound)", err)
		}
		if mem.usable() == 0 {
			return nil, fmt.Errorf("add: only %s of memory is available (%s), below the %s kept for the system; nothing was created (--no-memory-check overrides)",
				humanBytes(float64(mem.avail)), mem.availWhat(), humanBytes(float64(mem.reserve())))
		}
	}
	// The group is unique to this add: a batched delete of exactly these
	// links can then delete the group without moving them first, and no
	// other add's links are in it.
	group := freeGroup(links)
	hook("add-names", 0)
	res := b.newResult("add")
	defer b.hostFacts(res)
	if b.created {
		res.Notes = append(res.Notes, fmt.Sprintf("created network namespace %s", b.o.Netns))
	}
	res.Kind = kind

	perUnit := func() int {
		if kind == "veth" {
			return 2
		}
		return 1
	}
	if kind == "veth" {
		res.Notes = append(res.Notes, fmt.Sprintf("%d veth pairs (%d devices)", total, req.Count))
	}
	var lat []int64 // per unit, with OneByOne
	if req.OneByOne {
		lat = make([]int64, total)
	}
	ok := make([]bool, total)
	var firstErr error
	requests, batches := 0, 0
	var inKernel time.Duration         // time spent in the windows' sends and barriers
	measureFrom, measured := -1, false // the memory measurement's first unit; done
	var m msg
	start := time.Now()
	probe := kind == "dummy" // the first request finds out whether dummy exists
	for i := 0; i < total && firstErr == nil; {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		end := min(i+window, total)
		if probe {
			end = i + 1
		} else if measureFrom < 0 && !b.o.NoMemoryCheck {
			if mem, err = readMeminfo(); err != nil {
				firstErr = fmt.Errorf("cannot bound the memory of add: %w (--no-memory-check skips the bound)", err)
				break
			}
			measureFrom = i
		}
		// The window runs under a timeout: a create waits for the RTNL
		// lock inside the kernel. Its goroutine writes only w, which is
		// merged once it has finished.
		w := addWindow{lat: make([]int64, end-i), ok: make([]bool, end-i), errAt: -1}
		units := src.units(end - i)
		t0 := time.Now()
		err := b.bounded(ackTimeout+time.Second, "create links", func() error {
			return b.createWindow(&w, &m, kind, units, group, req.OneByOne, ackTimeout)
		})
		inKernel += time.Since(t0)
		batches++
		if err != nil {
			requests += end - i
			firstErr = fmt.Errorf("add: %w (the outcome of the last %d requests is unknown)", err, end-i)
			break
		}
		requests += w.sent
		if lat != nil {
			copy(lat[i:end], w.lat)
		}
		copy(ok[i:end], w.ok)
		firstErr = w.err
		if w.sent < end-i && w.err == nil {
			end = i + w.sent
		}
		hook("add-window", countOK(ok)*perUnit())
		if probe {
			probe = false
			if firstErr != nil && errors.Is(firstErr, unix.EOPNOTSUPP) {
				b.noDummy = true
				if explicit {
					firstErr = errNoDummy()
					break
				}
				kind = "ifb"
				res.Kind = kind
				b.notef(res, "this kernel has no dummy link type; using ifb (choose with --kind)")
				firstErr = nil
				// Nothing was created: name the devices anew for ifb.
				if src, err = b.plan(req.Template, kind, links, req.Count); err != nil {
					return nil, err
				}
				continue
			}
			i = end
			continue
		}
		i = end
		if firstErr != nil || measureFrom < 0 || i >= total {
			continue
		}
		now, err := readMeminfo()
		if err != nil {
			firstErr = fmt.Errorf("cannot bound the memory of add: %w (--no-memory-check skips the bound)", err)
			break
		}
		if !measured {
			measured = true
			e := estimate(mem, now, countOK(ok[measureFrom:i]), total-i)
			if e.perUnit > 0 {
				res.Counters = map[string]int64{"kernel_bytes_per_device": int64(e.perUnit) / int64(perUnit())}
			}
			if e.need > now.usable() {
				return b.refuseMemory(res, start, req.Count, kind, group, e, perUnit(), countOK(ok))
			}
			continue
		}
		if now.usable() == 0 {
			firstErr = fmt.Errorf("stopped: only %s of memory is left, below the %s kept for the system (--no-memory-check overrides)",
				humanBytes(float64(now.avail)), humanBytes(float64(now.reserve())))
		}
	}
	res.WallNS = int64(time.Since(start))
	var okLat []int64
	for j := range total {
		if ok[j] {
			res.Count += perUnit()
			if lat != nil {
				okLat = append(okLat, lat[j])
			}
		}
	}
	if lat != nil {
		res.Latency = ndst.Summarize(okLat)
	}
	if res.Count > 0 {
		b.made = true
	}
	if res.Counters == nil {
		res.Counters = map[string]int64{}
	}
	res.Counters["netlink_requests"] = int64(requests)
	if !req.OneByOne {
		res.Counters["batches"] = int64(batches)
	}
	if res.Count > 0 {
		res.Counters["per_device_ns"] = int64(inKernel) / int64(res.Count)
	}
	if firstErr == nil && !req.Addrs.IsZero() {
		firstErr = b.setUpAdded(ctx, res, group, req.Addrs)
		// The add's time is the whole add, the devices set up with their
		// addresses too, as the emulated kernel's is (addr_ns is that part).
		res.WallNS = int64(time.Since(start))
	}
	if firstErr == nil && b.vanished() {
		firstErr = b.errVanished("add")
	}
	if firstErr != nil {
		if errors.Is(firstErr, context.Canceled) || errors.Is(firstErr, context.DeadlineExceeded) {
			firstErr = fmt.Errorf("add interrupted: %w", firstErr)
		}
		return fail(res, fmt.Errorf("%w (%s)", firstErr, restHint(firstErr, "add", "devices", res.Count, req.Count)))
	}
	b.log.Debug("add", zap.Int("count", res.Count), zap.String("kind", kind), zap.Duration("wall", time.Duration(res.WallNS)))
	return res, nil
}

// refuseMemory undoes an add whose first window showed that the rest would
// not fit: it deletes the window's links (the add's own group) and fails
// with the estimate.
func (b *Backend) refuseMemory(res *ndst.Result, start time.Time, count int, kind string, group uint32, e memEstimate, perUnit, madeUnits int) (*ndst.Result, error) {
	made := madeUnits * perUnit
	total := e.perUnit * float64(count/perUnit)
	res.WallNS = int64(time.Since(start))
	why := fmt.Sprintf("add %d %s devices would need about %s of kernel memory (%s per device, measured on the first %d created); %s is available (%s %s less %s kept for the system)",
		count, kind, humanBytes(total), humanBytes(e.perUnit/float64(perUnit)), e.units*perUnit,
		humanBytes(float64(e.now.usable())), e.now.availWhat(), humanBytes(float64(e.now.avail)), humanBytes(float64(e.now.reserve())))
	var m msg
	seq := b.c.nextSeq()
	appendDelLink(&m, seq, 0, group)
	timeout := requestTimeout + time.Duration(made)*perDevice
	err := b.bounded(timeout+time.Second, "delete group", func() error { return b.c.request(&m, seq, timeout) })
	if err != nil {
		res.Count = made
		b.made = true
		return fail(res, fmt.Errorf("%s; refused, but deleting the %d devices made to measure failed: %w (ndst del or reset removes them)", why, made, err))
	}
	res.Count = 0
	res.Latency = nil
	return fail(res, fmt.Errorf("%s; refused: nothing was created (the %d devices made to measure were deleted again); --no-memory-check overrides", why, made))
}

// addWindow is the outcome of one window of creates.
type addWindow struct {
	lat   []int64
	ok    []bool
	sent  int
	err   error // the first failure, at index errAt of the window
	errAt int
}

// createWindow creates one window of units and collects the failures (see
// barrier). By default the window's RTM_NEWLINKs go as one datagram: the
// kernel creates the links one after the other inside that one send, and
// the window is timed as a whole. With oneByOne each goes in a send of its
// own, timed (the kernel creates the link inside it): that gives per-device
// latency, at the cost of a system call per link (measured: about 15% more
// CPU for 1000 ifb creates on 6.18, most of it in the kernel's create path
// itself, which runs colder when user space runs between creates).
func (b *Backend) createWindow(w *addWindow, m *msg, kind string, units []unit, group uint32, oneByOne bool, timeout time.Duration) error {
	sent := make(map[uint32]int, len(units))
	if oneByOne {
		for j, u := range units {
			m.b = m.b[:0]
			seq := b.c.nextSeq()
			appendNewLink(m, seq, kind, u.name, u.peer, group)
			t0 := time.Now()
			err := b.c.send(m.b)
			w.lat[j] = int64(time.Since(t0))
			if err != nil {
				w.err, w.errAt = fmt.Errorf("send RTM_NEWLINK for %s: %w", u.name, err), j
				break
			}
			w.sent++
			sent[seq] = j
			w.ok[j] = true // unless the kernel reports a failure
		}
	} else {
		m.b = m.b[:0]
		for j, u := range units {
			seq := b.c.nextSeq()
			appendNewLink(m, seq, kind, u.name, u.peer, group)
			sent[seq] = j
		}
		if err := b.c.send(m.b); err != nil {
			w.err, w.errAt = fmt.Errorf("send %d RTM_NEWLINKs: %w", len(units), err), 0
			return nil
		}
		w.sent = len(units)
		for j := range units {
			w.ok[j] = true // unless the kernel reports a failure
		}
	}
	return b.c.barrier(sent, time.Now().Add(timeout), func(j int, err error) {
		w.ok[j] = false
		if w.err == nil || j < w.errAt {
			w.err, w.errAt = b.createError(units[j], kind, err), j
		}
	})
}

func countOK(ok []bool) int {
	n := 0
	for _, v := range ok {
		if v {
			n++
		}
	}
	return n
}

func errNoDummy() error {
	return errors.New("this kernel has no dummy link type (EOPNOTSUPP) and --kind dummy was given; use --kind ifb or veth")
}

// createError explains a failed RTM_NEWLINK.
func (b *Backend) createError(u unit, kind string, err error) error {
	name := u.name
	if u.peer != "" {
		name += "/" + u.peer
	}
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("create %s: a device with that name already exists in namespace %s: %w", name, b.o.Netns, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("create %s: not permitted (CAP_NET_ADMIN in namespace %s): %w", name, b.o.Netns, err)
	}
	return fmt.Errorf("create %s (%s): %w", name, kind, err)
}
