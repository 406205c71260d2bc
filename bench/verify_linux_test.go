package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/knobset"
	"github.com/ndst-project/ndst/knobset/knobsettest"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/safefile"
)

func TestEffect(t *testing.T) {
	for _, tc := range []struct {
		before, after int64
		want          string
	}{{100, 94, "faster"}, {100, 95, "none"}, {100, 105, "none"}, {100, 106, "slower"}, {0, 5, ""}} {
		if got := Effect(tc.before, tc.after); got != tc.want {
			t.Errorf("Effect(%d, %d) = %q, want %q", tc.before, tc.after, got, tc.want)
		}
	}
}

// Verify on this machine's kernel: a knob that changes nothing measurable
// (the RCU stall warning's timeout) is set for each "with" run and read back
// as it was after every run; a knob read-only at runtime and one already at
// the lever's value are skipped with the reason, and nothing is left behind.
func TestVerifyOnHost(t *testing.T) {
	skipUnlessNetlink(t)
	const stall = "/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout"
	if err := knobset.Check(stall); err != nil {
		t.Skipf("no writable knob to test with: %v", err)
	}
	knobsettest.HoldRealKernelLock(t, 20*time.Minute)
	oldDir := knobset.Dir
	knobset.Dir = filepath.Join(t.TempDir(), "ndst")
	t.Cleanup(func() { knobset.Dir = oldDir })
	read := func(p string) string {
		b, err := safefile.ReadKernelFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	before := read(stall)
	n, _ := strconv.Atoi(before)
	var notes []string
	sess, err := knobset.Begin(knobset.Options{Command: "test", Notef: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ns := fmt.Sprintf("ndst-vtest-%d", os.Getpid())
	t.Cleanup(func() { _ = nlbackend.Reset(context.Background(), nlbackend.Options{Netns: ns}) })
	for _, w := range []Workload{{Devices: 4, OneByOne: true}, {Namespaces: 2, Veth: true, LoUp: true}} {
		notes = nil
		v, err := Verify(context.Background(), &VerifySpec{Workload: w, Runs: 2, Knobs: sess, Check: knobset.Check,
			Netlink: nlbackend.Options{Netns: ns, Kind: "ifb"},
			Levers: []Lever{
				{Name: "rcupdate.rcu_cpu_stall_timeout", Path: stall, Value: strconv.Itoa(n + 1), PredictedBeforeNS: 100, PredictedAfterNS: 100},
				{Name: "rcutree.blimit", Path: "/sys/module/rcutree/parameters/blimit", Value: "20"},
				{Name: "rcupdate.rcu_cpu_stall_timeout", Path: stall, Value: before},
			}})
		if err != nil {
			t.Fatalf("Verify(%s) = %v", w, err)
		}
		if got := read(stall); got != before {
			t.Errorf("after Verify(%s) %s reads %s, want %s", w, stall, got, before)
		}
		if want := map[bool]string{true: "veth", false: "ifb"}[w.Namespaces > 0]; v.Kind != want {
			t.Errorf("Verify(%s) kind = %q, want %q (the kind of the links the workload has)", w, v.Kind, want)
		}
		r := v.Rows
		if len(r) != 3 || r[0].Skipped != "" || r[0].IdleShare < 0 || r[0].IdleShare > 1 || len(r[0].MeasuredBeforeRuns) != 2 || len(r[0].MeasuredAfterRuns) != 2 || r[0].MeasuredAfterNS <= 0 || r[0].PredictedEffect != "none" {
			t.Errorf("Verify(%s) first row = %+v, want two runs each way", w, r[0])
		}
		if len(r) == 3 && (!strings.Contains(r[1].Skipped, "read-only at runtime") || !strings.Contains(r[2].Skipped, "already "+before)) {
			t.Errorf("Verify(%s) skipped rows = %q, %q; want read-only and already set", w, r[1].Skipped, r[2].Skipped)
		}
		if got := strings.Count(strings.Join(notes, "\n"), "restored "); got != 2 {
			t.Errorf("Verify(%s): %d restores said (%q), want one after each of the 2 runs with the lever", w, got, notes)
		}
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/run/netns/ndst-v%d-*", os.Getpid())); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
		t.Errorf("the throwaway namespace %s is left", ns)
	}
}

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		before, after []int64
		want          float64
	}{
		{nil, nil, EffectThreshold},
		{[]int64{100}, []int64{50}, EffectThreshold},
		// sd 10 over 3 runs: SE sqrt(pi/2)*10/sqrt(3); the one run adds none.
		{[]int64{90, 100, 110}, []int64{100}, 2 * math.Sqrt(math.Pi/2) * 10 / math.Sqrt(3) / 100},
		// SEs add in quadrature, relative to the median before (100).
		{[]int64{100, 101}, []int64{80, 100, 120}, 2 * math.Sqrt(math.Pi/2) * math.Hypot(math.Sqrt(0.5)/math.Sqrt(2), 20/math.Sqrt(3)) / 100},
	} {
		if got := Threshold(tc.before, tc.after); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("Threshold(%v, %v) = %v, want %v", tc.before, tc.after, got, tc.want)
		}
	}
	// Nine runs of the same spread resolve what three do not: the
	// threshold narrows as 1/sqrt(runs), where a range would widen.
	three := []int64{80, 100, 120}
	nine := []int64{80, 85, 90, 95, 100, 105, 110, 115, 120}
	if t3, t9 := Threshold(three, three), Threshold(nine, nine); t9 >= t3 {
		t.Errorf("Threshold of 9 runs = %v, want below that of 3 runs of the same range (%v)", t9, t3)
	}
	if got := EffectWithin(100, 85, 0.2); got != "none" {
		t.Errorf("EffectWithin(100, 85, 0.2) = %q, want none (within the runs' spread)", got)
	}
}

func TestCPUTimes(t *testing.T) {
	a, ok := readCPUTimes()
	if !ok || a.total == 0 || a.idle > a.total {
		t.Fatalf("readCPUTimes() = %+v, %v; want the all-CPU line of /proc/stat", a, ok)
	}
	if got := idleShare(cpuTimes{10, 100}, cpuTimes{60, 200}); got != 0.5 {
		t.Errorf("idleShare = %v, want 0.5", got)
	}
	if got := idleShare(a, a); got != -1 {
		t.Errorf("idleShare over no time = %v, want -1", got)
	}
}
