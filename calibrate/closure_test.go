package calibrate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

// TestClosureOfRecordedCalibrations refits real calibrations (the JSON
// reports of `ndst --json calibrate`, on this project's machines and in VM
// guests, in testdata/closure) with the current model, and checks that the
// emulated kernel of each host's line, loaded with the table the fit finds,
// reproduces every run of that calibration within ClosureLimit: the
// per-device create time and both batched deletes. A model change that breaks
// closure on a real host fails here, not in a prediction later.
//
// Each file's "expect" says whether it must close: a calibration taken while
// the machine was busy with other work is kept as a file that must not close
// silently (its report says so), because the emulated kernel models an
// otherwise idle machine.
func TestClosureOfRecordedCalibrations(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "closure", "*.json"))
	if len(files) == 0 {
		t.Fatal("no recorded calibrations in testdata/closure")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Report
				Expect string `json:"expect"` // "closes" or "misses"
				Why    string `json:"why"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			r := rec.Report
			recorded := r.Table
			if err := r.Refit(context.Background()); err != nil {
				t.Fatalf("Refit() = %v", err)
			}
			ok, worst := r.Closed()
			for _, p := range r.Closure {
				t.Logf("%s of %d: measured %.3f ms, emulated %.3f ms (%+.1f%%)", p.What, p.Devices,
					float64(p.MeasuredNS)/1e6, float64(p.EmulatedNS)/1e6, 100*p.Error)
			}
			switch rec.Expect {
			case "closes":
				if !ok {
					t.Errorf("the emulated kernel of line %s (%s RCU) misses this calibration by %.1f%% (limit %.0f%%)",
						r.Profile, r.RCU, 100*worst, 100*ClosureLimit)
				}
			case "misses":
				if ok {
					t.Errorf("recorded as missing (%s), but it closes now within %.1f%%: update its expect", rec.Why, 100*worst)
				}
			default:
				t.Fatalf("expect = %q, want closes or misses", rec.Expect)
			}
			if err := r.Table.Validate(); err != nil {
				t.Errorf("refitted table: %v", err)
			}
			for _, op := range []costs.Op{costs.Register, costs.Unregister, costs.Free} {
				if r.Table.Costs[op] <= 0 {
					t.Errorf("refitted %s = %d ns, want a positive cost", op, r.Table.Costs[op])
				}
			}
			if recorded != nil && recorded.Host != nil && recorded.Host.Profile != r.Profile {
				t.Logf("the line chosen now (%s) differs from the recorded one (%s)", r.Profile, recorded.Host.Profile)
			}
		})
	}
}

func TestRefitRefusesWhatNoCalibrationMeasured(t *testing.T) {
	// A report read from a file is checked before anything is emulated:
	// a size calibrate never uses, sizes out of order, or a machine that
	// cannot be, is an error, not an emulation of a billion devices.
	good := func() Report {
		return Report{Host: nlbackendHost(), HZ: 250, CreateNS: 100_000,
			Batches: []BatchPoint{{Devices: 100, P50NS: 24e6}, {Devices: 300, P50NS: 44e6}}}
	}
	for _, tc := range []struct {
		name string
		mut  func(*Report)
	}{
		{"a billion devices", func(r *Report) { r.Batches[1].Devices = 1e9 }},
		{"sizes reversed", func(r *Report) { r.Batches[0].Devices, r.Batches[1].Devices = 300, 100 }},
		{"no time", func(r *Report) { r.Batches[0].P50NS = 0 }},
		{"no CPUs", func(r *Report) { r.Host.CPUs = 0 }},
		{"HZ out of range", func(r *Report) { r.HZ = 1e6 }},
		{"one size", func(r *Report) { r.Batches = r.Batches[:1] }},
	} {
		r := good()
		tc.mut(&r)
		if err := r.Refit(context.Background()); err == nil {
			t.Errorf("%s: Refit() = nil, want an error", tc.name)
		}
	}
	r := good()
	if err := r.Refit(context.Background()); err != nil {
		t.Errorf("a plausible report: Refit() = %v", err)
	}
}

func nlbackendHost() nlbackend.HostFacts {
	return nlbackend.HostFacts{Kernel: "6.18.0-test", HZ: 250, CPUs: 2, Preempt: "none", PreemptRCU: true}
}
