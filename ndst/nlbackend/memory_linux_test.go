package nlbackend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

func TestParseMeminfo(t *testing.T) {
	in := `MemTotal:       24576000 kB
MemFree:        17357020 kB
MemAvailable:   24005916 kB
Slab:             836016 kB
SReclaimable:     774868 kB
SUnreclaim:        61148 kB
VmallocTotal:   34359738367 kB
VmallocUsed:       14316 kB
Percpu:             1904 kB
HugePages_Total:       0
`
	m, err := parseMeminfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.total != 24576000<<10 || m.avail != 24005916<<10 || m.kernel != (61148+14316+1904)<<10 {
		t.Errorf("parseMeminfo = %+v, want total, available and SUnreclaim+VmallocUsed+Percpu in bytes", m)
	}
	if m.reserve() != m.total/20 || m.usable() != m.avail-m.total/20 {
		t.Errorf("reserve %d usable %d, want 5%% of total kept", m.reserve(), m.usable())
	}
	for _, bad := range []string{"", "MemTotal: 5 kB\n", "MemTotal: x kB\nMemAvailable: 1 kB\nSUnreclaim: 1 kB\nPercpu: 1 kB\nVmallocUsed: 1 kB\n"} {
		if _, err := parseMeminfo(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMeminfo(%q) = nil error, want one", bad)
		}
	}
	small := meminfo{total: 1 << 30, avail: 100 << 20}
	if small.reserve() != 128<<20 || small.usable() != 0 {
		t.Errorf("1 GiB machine with 100 MiB available: reserve %d usable %d, want 128 MiB and 0", small.reserve(), small.usable())
	}
}

func TestEstimate(t *testing.T) {
	base := meminfo{total: 8 << 30, avail: 4 << 30, kernel: 100 << 20}
	now := base
	now.kernel += 256 * 43 << 10
	e := estimate(base, now, 256, 1000)
	if e.perUnit != 43<<10 || e.need != 1000*43<<10 {
		t.Errorf("estimate = %+v, want 43 KiB per unit and 1000 times that", e)
	}
	if e := estimate(base, base, 256, 1000); e.perUnit != 0 || e.need != 0 {
		t.Errorf("estimate with no growth = %+v, want unknown (0)", e)
	}
}

// fakeMeminfo replaces readMeminfo with one that returns the given figures
// in turn (the last one repeated).
func fakeMeminfo(t *testing.T, seq ...meminfo) *int {
	t.Helper()
	calls := 0
	old := readMeminfo
	readMeminfo = func() (meminfo, error) {
		m := seq[min(calls, len(seq)-1)]
		calls++
		return m, nil
	}
	t.Cleanup(func() { readMeminfo = old })
	return &calls
}

// TestMemoryBound checks the memory bound of add with the kernel's memory
// figures replaced: refusal after the measured window (undoing it), the
// override flag, a stop when memory runs out later, and a refusal before
// anything when memory is already short.
func TestMemoryBound(t *testing.T) {
	const gib = 1 << 30
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()

	// 4 MiB per link measured on the first window: 600 links need 2.3 GiB,
	// 1 GiB is available.
	m0 := meminfo{total: 2 * gib, avail: gib, kernel: gib}
	m1 := m0
	m1.kernel += window * 4 << 20
	fakeMeminfo(t, m0, m0, m1)
	r, err := b.Add(ctx, ndst.AddRequest{Count: 600})
	if err == nil || r == nil || r.Count != 0 || !strings.Contains(err.Error(), "kernel memory (4.0 MiB per device, measured on the first 256") ||
		!strings.Contains(err.Error(), "--no-memory-check") || !strings.Contains(err.Error(), "nothing was created") {
		t.Fatalf("Add(600) at 4 MiB per device with 1 GiB free = %+v, %v; want a refusal with the estimate, nothing created", r, err)
	}
	if !strings.Contains(err.Error(), "would need about 2.3 GiB") {
		t.Errorf("refusal %q, want the total estimate 2.3 GiB", err)
	}
	if owned, _ := names(mustList(t, b)); len(owned) != 0 {
		t.Fatalf("after the refusal %d devices are left, want none", len(owned))
	}

	// The same with the override.
	b.o.NoMemoryCheck = true
	calls := fakeMeminfo(t, m0, m0, m1)
	if r, err := b.Add(ctx, ndst.AddRequest{Count: 600}); err != nil || r.Count != 600 {
		t.Fatalf("Add(600) with NoMemoryCheck = %+v, %v; want 600 created", r, err)
	}
	if *calls != 0 {
		t.Errorf("NoMemoryCheck read the memory figures %d times, want 0", *calls)
	}
	b.o.NoMemoryCheck = false

	// Fits at first; then something else takes the memory.
	low := m1
	low.avail = 64 << 20
	fakeMeminfo(t, m0, m0, m0, low)
	r, err = b.Add(ctx, ndst.AddRequest{Count: 800})
	if err == nil || r == nil || r.Count != 2*window || !strings.Contains(err.Error(), "stopped: only 64.0 MiB of memory is left") {
		t.Errorf("Add(800) with memory running out after two windows = %+v, %v; want a stop after %d", r, err, 2*window)
	}

	// Short before starting: nothing is tried.
	fakeMeminfo(t, low)
	before := len(mustList(t, b))
	if r, err := b.Add(ctx, ndst.AddRequest{Count: 1}); r != nil || err == nil || !strings.Contains(err.Error(), "below the 128.0 MiB kept for the system") {
		t.Errorf("Add(1) with 64 MiB available = %+v, %v; want a refusal", r, err)
	}
	if after := len(mustList(t, b)); after != before {
		t.Errorf("the refused Add(1) changed the device count from %d to %d", before, after)
	}
}

// TestMemoryMeasured runs the real measurement: the figure is logged (the
// machine is shared, so it is not asserted beyond being sane when known).
func TestMemoryMeasured(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	r := mustAdd(t, b, ndst.AddRequest{Count: window + 10})
	per, ok := r.Counters["kernel_bytes_per_device"]
	t.Logf("kernel memory per ifb device, measured on %d: %d bytes (known: %v)", window, per, ok)
	if ok && (per <= 0 || per > 64<<20) {
		t.Errorf("kernel_bytes_per_device = %d, want a positive figure below 64 MiB", per)
	}
}

// TestNetnsMemoryBound: the bound of netns add, with the kernel's memory
// figures replaced: a million namespaces refused before anything is made;
// a window that measures more than the floor, whose rest would not fit,
// undone; the override; the kernel's own namespace limit.
func TestNetnsMemoryBound(t *testing.T) {
	const gib = 1 << 30
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	m0 := meminfo{total: 24 * gib, avail: 20 * gib, kernel: gib}

	// The kernel's limit on namespaces (user.max_net_namespaces) is
	// checked first: a million is refused by it on most hosts.
	limit := filepath.Join(t.TempDir(), "max_net_namespaces")
	os.WriteFile(limit, []byte("2000000\n"), 0o644)
	old := maxNetNamespacesFile
	maxNetNamespacesFile = limit
	t.Cleanup(func() { maxNetNamespacesFile = old })

	// A million at the floor (180 KiB + 4 links): 326 GiB.
	calls := fakeMeminfo(t, m0)
	r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1000000, Template: tmpl, Links: 4})
	if !ndst.IsUsage(err) || r != nil || !strings.Contains(err.Error(), "would need at least 324.2 GiB") || !strings.Contains(err.Error(), "nothing was created") {
		t.Fatalf("NetnsAdd(1000000) with 20 GiB = %+v, %v; want a refusal before anything", r, err)
	}
	t.Logf("%v (meminfo read %d times)", err, *calls)
	if ents, _ := os.ReadDir(netnsDir); len(ents) != 1 { // ndst's own namespace
		t.Errorf("%d entries under %s after the refusal, want only ndst's namespace", len(ents), netnsDir)
	}

	// 64 MiB per namespace measured on the window: 1000 need 62.5 GiB.
	m1 := m0
	m1.kernel += netnsMemWindow * 64 << 20
	fakeMeminfo(t, m0, m1)
	r, err = b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1000, Template: tmpl})
	if err == nil || r == nil || r.Count != 0 || !strings.Contains(err.Error(), "64.0 MiB per namespace, measured on the first 16") ||
		!strings.Contains(err.Error(), "the 16 namespaces made to measure were deleted again") {
		t.Fatalf("NetnsAdd(1000) at 64 MiB each = %+v, %v; want a refusal after the window, undone", r, err)
	}
	if list, _ := b.NetnsList(ctx, ndst.NetnsListRequest{}); len(list) != 0 {
		t.Errorf("after the refusal: %d namespaces listed, want none", len(list))
	}

	// The override goes ahead (a small count, for real).
	b.o.NoMemoryCheck = true
	calls = fakeMeminfo(t, m0, m1)
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 20, Template: tmpl}); err != nil || r.Count != 20 || *calls != 0 {
		t.Errorf("NetnsAdd(20) with NoMemoryCheck = %+v, %v (meminfo read %d times); want 20, unread", r, err, *calls)
	}
	b.o.NoMemoryCheck = false
	if _, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 100, Template: tmpl}); err != nil {
		t.Fatal(err)
	}

	// The kernel's limit on namespaces.
	os.WriteFile(limit, []byte("100\n"), 0o644)
	if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 101, Template: tmpl}); !ndst.IsUsage(err) || !strings.Contains(err.Error(), "user.max_net_namespaces") {
		t.Errorf("NetnsAdd(101) with a limit of 100 = %v; want a usage error naming user.max_net_namespaces", err)
	}
}

// TestMemoryBoundUnderACgroup: a memory cgroup whose headroom is less than
// MemAvailable is what the bound uses, named in its messages, with the
// reserve taken from the cgroup's limit.
func TestMemoryBoundUnderACgroup(t *testing.T) {
	old := cgroupLimits
	t.Cleanup(func() { cgroupLimits = old })
	cgroupLimits = func() (uint64, uint64, string, bool) { return 600 << 20, 1 << 30, "/sys/fs/cgroup/memory/box", true }
	m, err := readMeminfo()
	if err != nil {
		t.Fatal(err)
	}
	if m.avail != 600<<20 || m.total != 1<<30 || m.reserve() != 128<<20 || !strings.Contains(m.availWhat(), "/sys/fs/cgroup/memory/box") {
		t.Errorf("under a 1 GiB cgroup with 600 MiB free: %+v, reserve %d, %q", m, m.reserve(), m.availWhat())
	}
	cgroupLimits = func() (uint64, uint64, string, bool) { return 64 << 20, 100 << 20, "/box", true }
	if m, _ := readMeminfo(); m.reserve() != 100<<20/8 || m.usable() != 64<<20-100<<20/8 {
		t.Errorf("a 100 MiB cgroup: reserve %d usable %d, want an eighth of it kept", m.reserve(), m.usable())
	}
}
