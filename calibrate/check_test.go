package calibrate

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckIsShownNotGated: a recorded calibration that closes, given a
// check far from what its line and its emulated kernel give (a 1000-device
// batch measured at half of the line's figure), still closes; the check is
// in the closure with its own error, and the report says that the host's
// deletes are off their line, not the model.
func TestCheckIsShownNotGated(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "closure", "host-6.18-quiet-a.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.batchLine()
	line := r.InterceptNS + 1000*r.SlopeNS
	half := line / 2
	r.Check = &BatchPoint{Devices: 1000, P50NS: half, RunsNS: []int64{half, half, half}}
	if err := r.Refit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok, worst := r.Closed(); !ok {
		t.Fatalf("Closed() = false, %.1f%%: the check must not be gated", 100*worst)
	}
	var check *ClosurePoint
	for i := range r.Closure {
		if r.Closure[i].What == CheckWhat {
			check = &r.Closure[i]
		}
	}
	if check == nil {
		t.Fatalf("no %q in the closure %+v", CheckWhat, r.Closure)
	}
	// The emulated kernel follows the fitted line: near twice the measured.
	if check.Devices != 1000 || check.MeasuredNS != half || check.Error < 0.6 || check.Error > 1.4 {
		t.Errorf("check %+v: want 1000 devices, measured %d, emulated about twice that", *check, half)
	}
	for _, m := range r.Misses() {
		if strings.Contains(m, CheckWhat) {
			t.Errorf("Misses() names the check: %q", m)
		}
	}
	at, off, ok := r.checkLine()
	if !ok || at != line || math.Abs(off+0.5) > 0.01 {
		t.Errorf("checkLine() = %d, %.3f, %v; want %d, -0.5", at, off, ok, line)
	}
	note := r.checkNote()
	for _, want := range []string{"1000 devices, not fitted (shown, not gated)", "the line through 100 and 300 devices", "-50.0% off it", "do not grow linearly past the fitted sizes"} {
		if !strings.Contains(note, want) {
			t.Errorf("checkNote() = %q, want %q in it", note, want)
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "check:           a batched delete of 1000 devices") {
		t.Errorf("the report does not print the check:\n%s", text.String())
	}
	// Without a check, nothing is added.
	r.Check = nil
	if err := r.Refit(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Closure {
		if p.What == CheckWhat {
			t.Errorf("a report without a check has %+v in its closure", p)
		}
	}
	if n := r.checkNote(); n != "" {
		t.Errorf("checkNote() without a check = %q", n)
	}
}

// TestCheckOption: the check's size must be beyond the fitted sizes and
// bounded; 0 takes the default, negative measures none.
func TestCheckOption(t *testing.T) {
	for _, tc := range []struct {
		check, want int
		ok          bool
	}{{0, 1000, true}, {-1, -1, true}, {301, 301, true}, {MaxCheck, MaxCheck, true}, {300, 0, false}, {MaxCheck + 1, 0, false}} {
		o, err := Options{Check: tc.check}.withDefaults()
		if (err == nil) != tc.ok || tc.ok && o.Check != tc.want {
			t.Errorf("withDefaults(Check %d) = %d, %v; want %d, ok %v", tc.check, o.Check, err, tc.want, tc.ok)
		}
	}
}

// TestClosureKeysAreDistinct: every closure point has its own key in the
// table's extra figures (closure_KEY_permille); a workload run of 100
// devices once took the 100-device batched delete's key, so the table
// recorded the last workload's error as that delete's.
func TestClosureKeysAreDistinct(t *testing.T) {
	points := []ClosurePoint{{What: "create", Devices: 300}, {What: "batched delete", Devices: 100}, {What: "batched delete", Devices: 300},
		{What: RequestCPUWhat, Devices: 1}, {What: CheckWhat, Devices: 1000}, {What: NetnsUnshare, Devices: 200}}
	for _, n := range []int{40, 200} {
		for _, w := range []string{"netns add", NetnsReturned, "netns cleanup done"} {
			points = append(points, ClosurePoint{What: w, Devices: n})
		}
	}
	for _, w := range []string{WorkAddr6Add, WorkAddr6Del, WorkAddrAdd, WorkAddrDel, WorkVethNetns, "add macvlans on a device", "batched delete of macvlans", "add vlans on a device", "batched delete of vlans"} {
		points = append(points, ClosurePoint{What: w, Devices: workloadCount})
	}
	seen := map[string]ClosurePoint{}
	for _, p := range points {
		k := slugOf(p)
		if q, ok := seen[k]; ok {
			t.Errorf("%s %d and %s %d share the key %q", p.What, p.Devices, q.What, q.Devices, k)
		}
		seen[k] = p
	}
	if k := slugOf(ClosurePoint{What: "batched delete", Devices: 100}); k != "del100" {
		t.Errorf("the 100-device batched delete's key is %q, want del100 (as recorded tables have it)", k)
	}
}
