package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The recorded boot: Debian's 6.1 PREEMPT_RT kernel, 1 CPU, under TCG
// (scripts/vm-predict.sh --cpus 1 --count 100,1000 --json -- --package
// linux-image-rt-amd64), before the emulated kernel had an rt model.
const (
	rtTranscript = "testdata/6.1.0-57-rt-amd64-1cpu-rt.transcript"
	rtPrediction = "testdata/6.1.0-57-rt-amd64-1cpu-rt.prediction.json"
	timeoutLog   = "testdata/timeout.stderr"
)

func manifestFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest.tsv")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readBoots(t *testing.T, path string) []Boot {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	boots, err := readManifest(f)
	if err != nil {
		t.Fatalf("readManifest() error = %v", err)
	}
	return boots
}

func TestBuildRecorded(t *testing.T) {
	boots := readBoots(t, manifestFile(t,
		"linux-image-rt-amd64\t6.1.0-57-rt-amd64\t1\trt\t0\t"+rtTranscript+"\t"+rtPrediction+"\t"+timeoutLog,
		"linux-image-amd64\t6.1.0-57-amd64\t2\tfull\t5\tmissing.transcript\tmissing.json\t"+timeoutLog,
	))
	m := Build(boots, 754.2)
	if len(m.Cells) != 4 {
		t.Fatalf("Build() = %d cells, want 4 (N = 100, 1000 x batched, one-by-one)", len(m.Cells))
	}
	// Every figure comes from the prediction file; the error is recomputed
	// from nothing, only carried.
	var pred struct {
		Rows []struct {
			Op, Batch             string
			Count                 int
			MeasuredNS            int64   `json:"measured_ns"`
			PredictedNS           int64   `json:"predicted_ns"`
			Error                 float64 `json:"relative_error"`
			MeasuredPerDeviceNS   float64 `json:"measured_per_device_ns"`
			PredictedPerDevicesNS float64 `json:"predicted_per_device_ns"`
		}
	}
	b, err := os.ReadFile(rtPrediction)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pred); err != nil {
		t.Fatal(err)
	}
	within := 0
	i := 0
	for _, r := range pred.Rows {
		if r.Op != "del" {
			continue
		}
		c := m.Cells[i]
		i++
		if c.Count != r.Count || c.Mode != r.Batch || c.MeasuredNS != r.MeasuredNS || c.PredictedNS != r.PredictedNS || c.Error != r.Error {
			t.Errorf("cell %d = %d %s %d/%d %v, want the prediction's row %+v", i, c.Count, c.Mode, c.MeasuredNS, c.PredictedNS, c.Error, r)
		}
		if want := math.Abs(r.Error) <= 0.20; c.WithinTarget != want {
			t.Errorf("cell %d (error %+.3f) WithinTarget = %v, want %v", i, r.Error, c.WithinTarget, want)
		}
		if c.WithinTarget {
			within++
		}
		if c.Kernel != "6.1.0-57-rt-amd64" || c.CPUs != 1 || c.Preempt != "rt" || c.GuestPreempt != "rt" ||
			!strings.Contains(c.GuestPreemptSource, "config-6.1.0-57-rt-amd64") || c.Profile != "6.1" || c.EmulatedPreempt != "full" {
			t.Errorf("cell %d = kernel %q, %d CPUs, preempt %q, guest %q from %q, line %q emulated %q; want 6.1.0-57-rt-amd64, 1, rt, rt from its config, 6.1, full",
				i, c.Kernel, c.CPUs, c.Preempt, c.GuestPreempt, c.GuestPreemptSource, c.Profile, c.EmulatedPreempt)
		}
		if c.UnregisterBatchNS != 27712306 || c.GPP50NS != 0 {
			t.Errorf("cell %d calibration = unregister_batch %d, GP p50 %d; want the transcript's 27712306 and 0 (one CPU)", i, c.UnregisterBatchNS, c.GPP50NS)
		}
		if c.BootWallMS != 66109 || c.Load1 != "3.11" || c.Load1End != "3.72" || c.Accel != "tcg" {
			t.Errorf("cell %d boot = %d ms, load %s -> %s, accel %s; want the transcript's 66109 ms, 3.11 -> 3.72, tcg", i, c.BootWallMS, c.Load1, c.Load1End, c.Accel)
		}
	}
	if m.Within != within {
		t.Errorf("Within = %d, want %d", m.Within, within)
	}
	if len(m.Failures) != 1 || m.Failures[0].Exit != 5 || !strings.Contains(m.Failures[0].Reason, "did not power off within 300s") {
		t.Errorf("Failures = %+v, want the timed-out boot with the rig's reason", m.Failures)
	}

	var tab bytes.Buffer
	if err := m.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	out := tab.String()
	for _, want := range []string{
		"| kernel | CPUs | preempt | N | mode | measured | predicted | error | emulated as |",
		"| 6.1.0-57-rt-amd64 | 1 | rt | 100 | batched | 168 ms | 107 ms | **-36.3%** | 6.1 full |",
		"| 6.1.0-57-rt-amd64 | 1 | rt | 1000 | one-by-one | 39.7 ms/device | 38.2 ms/device | -3.8% | 6.1 full |",
		"| 6.1.0-57-amd64 | 2 | full | - | - | boot failed: exit 5: vm-run: the guest did not power off within 300s (timeout; qemu stopped) |",
		"of 4 cells within 20% (errors beyond it in bold); 1 boot(s) failed; matrix wall time 12 min 34 s.",
		"the emulated kernel has no rt model: the rt cells were predicted with --preempt full",
		"calibrated unregister_batch 27.7 ms, grace period p50 not measured; tcg boot 1 min 6 s, host load 3.11 -> 3.72",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	var js bytes.Buffer
	if err := m.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Matrix
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Cells) != 4 || len(back.Failures) != 1 || back.WallSeconds != 754.2 {
		t.Errorf("JSON export = %d cells, %d failures, wall %v (%v); want 4, 1, 754.2", len(back.Cells), len(back.Failures), back.WallSeconds, err)
	}

	var cs bytes.Buffer
	if err := m.WriteCSV(&cs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(recs) != 6 {
		t.Fatalf("CSV export = %d records (%v), want a header, 4 cells and 1 failure", len(recs), err)
	}
	if recs[1][0] != "6.1.0-57-rt-amd64" || recs[1][6] != "batched" || recs[1][7] != "167665834" || recs[5][len(recs[5])-1] == "" {
		t.Errorf("CSV rows = %q ... %q, want the first cell's figures and the failure's reason", recs[1], recs[5])
	}
}

// TestBuildBadFiles: a boot whose files are missing or corrupt is a failure
// row with the reason, never a silent gap.
func TestBuildBadFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	boots := []Boot{
		{Kernel: "k", CPUs: 1, Preempt: "none", Transcript: filepath.Join(dir, "none"), Prediction: rtPrediction},
		{Kernel: "k", CPUs: 1, Preempt: "none", Transcript: rtTranscript, Prediction: garbage},
		{Kernel: "k", CPUs: 1, Preempt: "none", Transcript: garbage, Prediction: rtPrediction},
		{Kernel: "k", CPUs: 1, Preempt: "none", Exit: 4, Stderr: filepath.Join(dir, "nolog")},
	}
	m := Build(boots, 0)
	if len(m.Cells) != 0 || len(m.Failures) != 4 {
		t.Fatalf("Build() = %d cells, %d failures; want 0 and 4", len(m.Cells), len(m.Failures))
	}
	for i, want := range []string{"transcript", "not ndst's JSON report", "first command is not its calibration", "exit 4: no log"} {
		if !strings.Contains(m.Failures[i].Reason, want) {
			t.Errorf("failure %d = %q, want it to contain %q", i, m.Failures[i].Reason, want)
		}
	}
}

func TestReadManifestBad(t *testing.T) {
	for _, text := range []string{"", "a\tb\n", "k\tr\tzero\tnone\t0\tt\tp\ts\n", "k\tr\t0\tnone\t0\tt\tp\ts\n", "k\tr\t1\tnone\tx\tt\tp\ts\n",
		"k\t1\tnone\t0\tt\tp\ts\n"} {
		if _, err := readManifest(strings.NewReader(text)); err == nil {
			t.Errorf("readManifest(%q) error = nil, want one", text)
		}
	}
}
