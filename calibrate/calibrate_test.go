package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

func TestDistribution(t *testing.T) {
	if got := distribution(nil); got != nil {
		t.Errorf("distribution(nil) = %+v, want nil", got)
	}
	got := distribution([]int64{4, 1, 3, 2})
	want := &costs.Distribution{N: 4, MinNS: 1, P50NS: 3, MeanNS: 2, P99NS: 4, MaxNS: 4}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("distribution([4 1 3 2]) = %+v, want %+v", got, want)
	}
}

// ticked returns n end times on a grid of period plus jitter up to j.
func ticked(n int, period, j int64, rng *rand.Rand) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = (1000+int64(rng.IntN(100000)))*period + rng.Int64N(j+1)
	}
	return out
}

func TestMeasureHZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name   string
		ends   []int64
		wantHZ int
	}{
		{"HZ=250 grid", ticked(200, 4_000_000, 100_000, rng), 250},
		{"HZ=100 grid", ticked(200, 10_000_000, 200_000, rng), 100},
		{"HZ=1000 grid", ticked(200, 1_000_000, 50_000, rng), 1000},
		{"HZ=300 grid", ticked(200, 3_333_333, 50_000, rng), 300},
		{"no grid", func() []int64 {
			out := make([]int64, 200)
			for i := range out {
				out[i] = rng.Int64N(1 << 40)
			}
			return out
		}(), 0},
		{"too few", ticked(5, 4_000_000, 0, rng), 0},
	}
	for _, tt := range tests {
		if got, r := measureHZ(tt.ends); got != tt.wantHZ {
			t.Errorf("%s: measureHZ() = %d (alignment %.2f), want %d", tt.name, got, r, tt.wantHZ)
		}
	}
}

func TestConcentration(t *testing.T) {
	r, mean := concentration([]int64{4_000_100, 8_000_100, 12_000_100}, 4_000_000)
	if r < 0.999 || mean != 100 {
		t.Errorf("concentration(ends at +100ns of a 4ms grid) = %.3f, %d; want 1, 100", r, mean)
	}
	r, _ = concentration([]int64{0, 1_000_000, 2_000_000, 3_000_000}, 4_000_000)
	if r > 1e-9 {
		t.Errorf("concentration(evenly spread) = %.3f, want 0", r)
	}
}

func TestPhaseBuckets(t *testing.T) {
	period := int64(4_000_000)
	starts := []int64{100, 1_100_000, 2_100_000, 3_100_000, 4_000_200}
	lats := []int64{8, 7, 6, 5, 9}
	got := phaseBuckets(starts, lats, period, 100, 4)
	want := []PhaseBucket{{0, 25, 2, 9}, {25, 50, 1, 7}, {50, 75, 1, 6}, {75, 100, 1, 5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("phaseBuckets() = %+v, want %+v", got, want)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil || o.GPSamples != 200 || o.Small != 100 || o.Large != 300 || o.Rounds != 15 {
		t.Errorf("Options{}.withDefaults() = %+v, %v; want 200 samples, sizes 100/300, 15 rounds", o, err)
	}
	for _, bad := range []Options{{Small: 300, Large: 100}, {Large: 301}, {Small: 50, Large: 50}, {GPSamples: -1}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v.withDefaults() = nil error, want one", bad)
		}
	}
}

func sampleReport() *Report {
	r := &Report{
		Host: nlbackend.HostFacts{Kernel: "6.18.0-test", HZ: 250, HZSource: "/proc/config.gz", CPUs: 2, Preempt: "lazy", PreemptSource: "/proc/config.gz"},
		HZ:   250, HZMeasured: 250, TickAlignment: 0.97,
		GP:          &costs.Distribution{N: 200, MinNS: 4_600_000, P50NS: 7_000_000, MeanNS: 8_100_000, P99NS: 16_500_000, MaxNS: 19_300_000},
		GPTicks:     1.75,
		GPByPhase:   []PhaseBucket{{0, 25, 50, 7_900_000}, {25, 50, 50, 6_900_000}, {50, 75, 50, 5_800_000}, {75, 100, 50, 4_800_000}},
		Kind:        "ifb",
		RoundTripNS: 2_000,
		CreateNS:    122_000,
		Creates:     2000,
		Batches: []BatchPoint{
			{Devices: 100, P50NS: 23_000_000, RunsNS: []int64{23_000_000, 23_500_000, 22_900_000}, CPUP50NS: 10_500_000},
			{Devices: 300, P50NS: 43_000_000, RunsNS: []int64{43_000_000, 42_000_000, 44_000_000}, CPUP50NS: 28_500_000},
		},
		SlopeNS:        100_000,
		InterceptNS:    13_000_000,
		CPUSlopeNS:     90_000,
		CPUInterceptNS: 1_500_000,
	}
	r.buildTable(time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC))
	return r
}

func TestBuildTable(t *testing.T) {
	r := sampleReport()
	tb := r.Table
	def := costs.Default()
	// unregister and free come from the wall-time slope; unregister_batch
	// from the CPU-time intercept (the wall one is mostly rcu_barrier's wait).
	wantFree := int64(100_000) * def.Costs[costs.Free] / (def.Costs[costs.Unregister] + def.Costs[costs.Free])
	want := map[costs.Op]int64{
		costs.Syscall:         2_000,
		costs.Register:        120_000,
		costs.Free:            wantFree,
		costs.Unregister:      100_000 - wantFree,
		costs.UnregisterBatch: 1_500_000,
	}
	if !reflect.DeepEqual(tb.Costs, want) {
		t.Errorf("buildTable() costs = %v, want %v", tb.Costs, want)
	}
	if err := tb.Validate(); err != nil {
		t.Errorf("buildTable() table Validate() = %v", err)
	}
	if h := tb.Host; h == nil || h.HZ != 250 || h.CPUs != 2 || h.Preempt != "lazy" || h.GPLatency == nil || h.Kernel != "6.18.0-test" {
		t.Errorf("buildTable() host = %+v, want HZ 250, 2 CPUs, the kernel's own preemption word, GP latency, kernel", h)
	}
	if tb.Extra["batch_delete_300_ns"] != 43_000_000 || tb.Extra["tick_alignment_permille"] != 970 {
		t.Errorf("buildTable() extra = %v, want the raw figures", tb.Extra)
	}
	r.CPUInterceptNS = 20_000_000 // a CPU clock running ahead of the wall clock
	r.buildTable(time.Now())
	if got := r.Table.Costs[costs.UnregisterBatch]; got != r.InterceptNS {
		t.Errorf("unregister_batch with a CPU intercept above the wall one = %d, want the wall intercept %d", got, r.InterceptNS)
	}
	if got, _ := line(100, 10_500_000, 300, 28_500_000); got != 90_000 {
		t.Errorf("line slope = %d, want 90000", got)
	}
	if s, i := line(100, 30_000_000, 300, 20_000_000); s != 0 || i != 30_000_000 {
		t.Errorf("line through a falling pair = %d, %d; want the slope floored at 0", s, i)
	}
}

func TestWriteTextFormat(t *testing.T) {
	var buf bytes.Buffer
	r := sampleReport()
	r.Path = "/tmp/x.json"
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	want := `calibration: kernel 6.18.0-test, 2 CPU(s), preempt lazy (from /proc/config.gz)
HZ:              250 (from /proc/config.gz); grace periods end on a 250 Hz grid (alignment 0.97)
grace period:    membarrier(GLOBAL) x 200: min 4.60ms, p50 7.00ms, mean 8.10ms, p99 16.50ms, max 19.30ms (1.8 ticks at p50)
  p50 by start phase in the tick: 0-25% 7.90ms (n=50) 25-50% 6.90ms (n=50) 50-75% 5.80ms (n=50) 75-100% 4.80ms (n=50)
netlink request: 2.0µs (a request the kernel rejects at once)
create (ifb):    122.0µs per device (the median of the rounds' medians, over 2000 devices)
batched delete:  100 devices 23.00ms, 300 devices 43.00ms (medians of 3, after a warm-up round) -> 100.0µs per device + 13.00ms per batch
  of which CPU:  90.0µs per device + 1.50ms per batch (the rest is waiting, which the emulated kernel models)
cost table (ns): register 120000 unregister UNREG free FREE unregister_batch 1500000 syscall 2000
written to /tmp/x.json (load it with --costs /tmp/x.json)
`
	// The split of the slope follows the built-in table, which may change.
	want = strings.NewReplacer("UNREG", fmt.Sprint(r.Table.Costs[costs.Unregister]), "FREE", fmt.Sprint(r.Table.Costs[costs.Free])).Replace(want)
	if got != want {
		t.Errorf("WriteText() =\n%s\nwant\n%s", got, want)
	}
	// A calibration of this ndst says its figures are means of the
	// middle half, measured and emulated.
	r.Figures = FiguresMidMean
	r.Closure = []ClosurePoint{{What: "create", Devices: 300, MeasuredNS: 122_000, EmulatedNS: 122_000}}
	buf.Reset()
	r.WriteText(&buf)
	if s := buf.String(); !strings.Contains(s, "(the mean of the middle half of the rounds' medians, over 2000 devices)") ||
		!strings.Contains(s, "(means of the middle half of 3, after a warm-up round)") ||
		!strings.Contains(s, "each figure, measured and emulated, is the mean of the middle half of its runs") {
		t.Errorf("WriteText() of a mid-mean report =\n%s\nwant the figures named", s)
	}
	r.Figures, r.Closure = "", nil
	// Without a grace-period measurement, the reason is printed.
	r.GP, r.GPByPhase, r.GPError, r.Path = nil, nil, "membarrier is not available", ""
	buf.Reset()
	r.WriteText(&buf)
	if !strings.Contains(buf.String(), "grace period:    not measured: membarrier is not available") ||
		!strings.Contains(buf.String(), "not saved: pass -o FILE") {
		t.Errorf("WriteText() without GP =\n%s\nwant the reason and the -o hint", buf.String())
	}
}

func TestJSONFormat(t *testing.T) {
	b, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host", "hz", "hz_measured", "tick_alignment", "gp_latency", "gp_by_tick_phase", "kind",
		"round_trip_ns", "create_per_device_ns", "batched_deletes", "batch_delete_per_device_ns", "batch_delete_fixed_ns", "table"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON report lacks %q: %s", k, b)
		}
	}
}

func TestSaveLoadsBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), "costs.json")
	r := sampleReport()
	if err := Save(r.Table, p); err != nil {
		t.Fatalf("Save() = %v", err)
	}
	got, err := costs.Load(p)
	if err != nil {
		t.Fatalf("costs.Load(saved) = %v", err)
	}
	if got.Lookup(costs.Register) != 120_000 || got.Lookup(costs.Tick) != costs.Default().Costs[costs.Tick] || got.Host.HZ != 250 {
		t.Errorf("costs.Load(saved) = %+v, want register 120000, built-in tick, HZ 250", got)
	}
	if err := Save(r.Table, filepath.Join(t.TempDir(), "missing", "x.json")); err == nil {
		t.Errorf("Save(into a missing directory) = nil, want an error")
	}
}

// TestRunOnHost calibrates with small sizes in a throwaway namespace.
func TestRunOnHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("calibration needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid %d", os.Geteuid())
	}
	ns := fmt.Sprintf("ndst-test-cal-%d", os.Getpid())
	var notes []string
	r, err := Run(context.Background(), Options{Netns: ns, GPSamples: 30, Small: 10, Large: 40, Rounds: 2, RoundTrips: 50,
		Notef: func(f string, a ...any) { notes = append(notes, f) }})
	if _, serr := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(serr) {
		t.Errorf("Run() left namespace %s behind (stat %v)", ns, serr)
		nlbackend.Reset(context.Background(), nlbackend.Options{Netns: ns})
	}
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	// Two rounds of 10 and 40, or four when the runs spread (spreadLimit).
	if r.CreateNS <= 0 || r.RoundTripNS <= 0 || len(r.Batches) != 2 || r.Batches[1].Devices != 40 || (r.Creates != 100 && r.Creates != 200) || r.Table == nil {
		t.Errorf("Run() = %+v, want create and round-trip times, two batch sizes (10, 40), 100 creates (200 when the runs spread), a table", r)
	}
	switch {
	case r.GP == nil && r.GPError == "":
		t.Errorf("Run() has neither a grace-period distribution nor a reason for its absence")
	case r.GP != nil && (r.GP.N != 30 || r.GP.MinNS <= 0):
		t.Errorf("Run() GP = %+v, want 30 samples", r.GP)
	case r.GP == nil:
		t.Logf("grace periods not measured here: %s", r.GPError)
	}
	if err := r.Table.Validate(); err != nil {
		t.Errorf("Run() table: %v", err)
	}
	if q := r.Request; q == nil || len(q.RunsNS) != 30 || q.Q1NS <= 0 || q.Q1NS > q.Q3NS || q.MidMeanNS < q.Q1NS || q.MidMeanNS > q.Q3NS {
		t.Errorf("Run() request CPU = %+v, want 30 one-device deletes' CPU times and their quartiles", q)
	}
	if g := r.Gap; g == nil || g.N != 200 || g.Q1NS <= 0 || r.Table.Costs[costs.RequestGap] != g.MidMeanNS {
		t.Errorf("Run() gaps = %+v (table request_gap %d), want 200 gaps and their figure in the table", g, r.Table.Costs[costs.RequestGap])
	}
	switch {
	case r.Stalls == nil && r.StallsError == "":
		t.Errorf("Run() has neither a stall measurement nor a reason for its absence")
	case r.Stalls != nil && (r.Table.Host.Stalls != r.Stalls || r.Stalls.SpunNS <= 0 || r.Stalls.CPUs != r.Host.CPUs):
		t.Errorf("Run() stalls %+v (table %+v), want the probe's figures for %d CPUs in the table", r.Stalls, r.Table.Host.Stalls, r.Host.CPUs)
	case r.Stalls != nil && r.Host.CPUs > 1 && (r.Wakeup == nil || r.Wakeup.N != 100*r.Host.CPUs*(r.Host.CPUs-1) || r.Stalls.OneBusy == nil):
		t.Errorf("Run() on %d CPUs: wake-ups %+v, one-busy stalls %+v; want both", r.Host.CPUs, r.Wakeup, r.Stalls.OneBusy)
	}
	switch {
	case r.TimerLateness == nil && r.TimerLatenessError == "":
		t.Errorf("Run() has neither a timer lateness nor a reason for its absence")
	case r.TimerLateness != nil && (r.Table.Host.TimerLateness != r.TimerLateness || r.TimerLateness.N != timerSamples*r.Host.CPUs || len(r.TimerLateness.GroupsNS) != latenessGroups):
		t.Errorf("Run() timer lateness %+v (table %+v), want %d samples a CPU and %d groups in the table", r.TimerLateness, r.Table.Host.TimerLateness, timerSamples, latenessGroups)
	}
	var buf bytes.Buffer
	r.WriteText(&buf)
	if ok, _ := regexp.MatchString(`(?m)^batched delete:  10 devices .*, 40 devices .* per device \+ .* per batch$`, buf.String()); !ok {
		t.Errorf("WriteText() =\n%s\nwant a batched-delete line for 10 and 40 devices", buf.String())
	}
	t.Logf("\n%s", buf.String())
}

func TestMissesNameTheMechanism(t *testing.T) {
	r := &Report{Closure: []ClosurePoint{
		{What: "create", Devices: 300, Error: 0.01},
		{What: "batched delete", Devices: 100, Error: -0.10},
		{What: "batched delete", Devices: 300, Error: -0.002},
		{What: NetnsReturned, Devices: 40, Error: -0.3},
		{What: "netns cleanup done", Devices: 40, Error: -0.2},
	}}
	m := r.Misses()
	if len(m) != 2 || !strings.Contains(m[0], "batched delete 100 (-10.0%): only this batch size misses") ||
		!strings.Contains(m[1], "netns cleanup done 40 (-20.0%): the cleanup_net runs") {
		t.Errorf("Misses() = %q, want the batched delete of 100 (alone) and the cleanup runs named, the ungated deletes and the closed runs left out", m)
	}
	r.Closure[2].Error = -0.08
	if m := r.Misses(); len(m) != 3 || !strings.Contains(m[0], "both batch sizes miss the same way") || !strings.Contains(m[0], "unmeasured") {
		t.Errorf("Misses() = %q, want both batch sizes named as the fixed, tick-bound part", m)
	}
	// The cleanup runs' lines, when the closure has them, give the fixed
	// part measured and emulated, and the deletes' own miss.
	r.Closure[4].Devices = 40
	r.NetnsCleanupLines = &CleanupLines{MeasuredFixedNS: 36_000_000, MeasuredPerNS: 300_000, EmulatedFixedNS: 31_000_000, EmulatedPerNS: 300_000}
	if m := r.Misses(); len(m) != 3 || !strings.Contains(m[2], "is 36.00ms here and 31.00ms in the model") ||
		!strings.Contains(m[2], "the last step left it 5.00ms off") || !strings.Contains(m[2], "return -30% off") {
		t.Errorf("Misses() = %q, want the cleanup runs' fixed parts and the deletes' miss named", m)
	}
	// A model whose waits alone outlast the host's fixed part: the run's
	// own cost is at its floor.
	r.NetnsCleanupLines.EmulatedFixedNS = 40_000_000
	if m := r.Misses(); len(m) != 3 || !strings.Contains(m[2], "at its floor of 0, and they take 4.00ms longer than the host's whole fixed part") {
		t.Errorf("Misses() = %q, want the model's waits named as longer than the host's fixed part", m)
	}
	// A namespace create that misses names the filesystem of the
	// namespaces' files when calibrate found it to be the drifting cost.
	r = &Report{Closure: []ClosurePoint{{What: "netns add", Devices: 40, Error: 0.08}}}
	if m := r.Misses(); len(m) != 1 || strings.Contains(m[0], "ext4") {
		t.Errorf("Misses() = %q, want the setup cost named and no filesystem", m)
	}
	r.NetnsFiles = "/run/netns is on ext4 without a journal (vda), ..."
	if m := r.Misses(); len(m) != 1 || !strings.Contains(m[0], "netns_setup_ns") || !strings.Contains(m[0], "ext4 without a journal") {
		t.Errorf("Misses() = %q, want the setup cost and the filesystem named", m)
	}
	// A workload's address part whose own costs stopped at their floor
	// names what is left of it: its requests' round trips.
	r = &Report{Table: &costs.Table{Costs: map[costs.Op]int64{costs.Syscall: 1_100}}, Closure: []ClosurePoint{{What: WorkAddr6Add, Devices: 100, Error: 0.12}},
		workloadAtFloor: map[string]float64{WorkAddr6Add: 0.12}}
	if m := r.Misses(); len(m) != 1 || !strings.Contains(m[0], "stop at their floor") || !strings.Contains(m[0], "syscall 1.1µs each") {
		t.Errorf("Misses() = %q, want the floor and the requests' round trips named", m)
	}
	// An IPv4 run measured faster than the IPv6 run it adds to names both,
	// with their rounds.
	r = &Report{Closure: []ClosurePoint{{What: WorkAddrDel, Devices: 100, Error: 0.096}},
		Workloads: []WorkloadPoint{{What: WorkAddr6Del, MeasuredNS: 38_000_000, RunsNS: []int64{30_000_000, 47_000_000}},
			{What: WorkAddrDel, MeasuredNS: 32_000_000, RunsNS: []int64{23_000_000, 50_000_000}}},
		workloadAtFloor: map[string]float64{WorkAddrDel: 0.1}}
	if m := r.Misses(); len(m) != 1 || !strings.Contains(m[0], "it measured faster (32.00ms) than the run it adds to") || !strings.Contains(m[0], "23.00ms-50.00ms") {
		t.Errorf("Misses() = %q, want the faster run, its base run and their rounds named", m)
	}
}

// TestNetnsFilesNote: on ext4 the note names ext4 without a journal only
// when the filesystem has none; elsewhere it is empty.
func TestNetnsFilesNote(t *testing.T) {
	note := netnsFilesNote()
	t.Logf("netnsFilesNote() = %q", note)
	if note != "" && !strings.Contains(note, "ext4 without a journal") {
		t.Errorf("netnsFilesNote() = %q, want empty or ext4 without a journal named", note)
	}
}

// MidMean drops a quarter of the runs at each end and averages the rest,
// so that one run moving across a tick moves the figure by its share.
func TestMidMean(t *testing.T) {
	for _, tc := range []struct {
		ns   []int64
		want int64
	}{
		{nil, 0},
		{[]int64{7}, 7},
		{[]int64{1, 2, 9}, 4},      // under four runs: the mean
		{[]int64{100, 1, 2, 3}, 3}, // 2 and 3
		{[]int64{10, 10, 10, 14, 14, 14, 99}, 12}, // 10 10 14 14 14 10 of 7 drop one each end
	} {
		if got := MidMean(tc.ns); got != tc.want {
			t.Errorf("MidMean(%v) = %d, want %d", tc.ns, got, tc.want)
		}
	}
	// Sixteen runs in two groups a jiffy (4 ms) apart: the median jumps by
	// the jiffy when the ninth run changes group, the mid-mean moves by an
	// eighth of it with each run that does.
	runs := func(upper int) []int64 {
		var s []int64
		for i := range 16 {
			v := int64(30_000_000 + i*10_000)
			if i >= 16-upper {
				v += 4_000_000
			}
			s = append(s, v)
		}
		return s
	}
	for upper := 1; upper < 16; upper++ {
		if d := MidMean(runs(upper)) - MidMean(runs(upper-1)); d < 0 || d > 4_000_000/8+1 {
			t.Errorf("one more run a jiffy later (%d of 16) moves the mid-mean by %d ns; want at most an eighth of the jiffy", upper, d)
		}
	}
}
