package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
)

// recordedReport is a calibration recorded on this project's host (a
// closure recording: a report with its own expect and why fields). A FIFO and the other
// paths that are not regular files are TestNoFileHangsOrIsOverwritten's.
const recordedReport = "../../calibrate/testdata/closure/host-6.18-quiet-netns-b.json"

// refitRun runs the CLI in-process without --state, which calibrate refuses.
func refitRun(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// TestCalibrateRefit refits a recorded report: no measurement and no
// privileges, the report's closure as recorded beside the refit's, in text
// and as one JSON object, and the table written only with -o.
func TestCalibrateRefit(t *testing.T) {
	out, errOut, code := refitRun("calibrate", "--refit", recordedReport)
	if code != 0 {
		t.Fatalf("calibrate --refit = exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"refit:           " + recordedReport, "as recorded", "batched delete 100:", "% recorded,", "not saved"} {
		if !strings.Contains(out, want) {
			t.Errorf("calibrate --refit output lacks %q:\n%s", want, out)
		}
	}

	table := filepath.Join(t.TempDir(), "costs.json")
	out, errOut, code = refitRun("--json", "calibrate", "--refit", recordedReport, "-o", table)
	if code != 0 {
		t.Fatalf("--json calibrate --refit -o = exit %d, stderr %q", code, errOut)
	}
	var rep calibrate.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not one report: %v\n%s", err, out)
	}
	if rep.RefitOf != recordedReport || len(rep.RecordedClosure) == 0 || len(rep.Closure) < len(rep.RecordedClosure) || rep.Path != table {
		t.Errorf("report: refit_of %q, %d recorded and %d refitted closure runs, path %q", rep.RefitOf, len(rep.RecordedClosure), len(rep.Closure), rep.Path)
	}
	if _, err := costs.Load(table); err != nil {
		t.Errorf("the table -o wrote does not load: %v", err)
	}
	// A refit's own report refits again, to the same closure.
	again := filepath.Join(t.TempDir(), "refit.json")
	if err := os.WriteFile(again, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	out2, errOut, code := refitRun("--json", "calibrate", "--refit", again)
	if code != 0 {
		t.Fatalf("refit of a refit = exit %d, stderr %q", code, errOut)
	}
	var rep2 calibrate.Report
	if err := json.Unmarshal([]byte(out2), &rep2); err != nil {
		t.Fatal(err)
	}
	for i, p := range rep2.Closure {
		if q := rep2.RecordedClosure[i]; p != q {
			t.Errorf("refit of a refit moved %s %d: %+v -> %+v", p.What, p.Devices, q, p)
		}
	}
}

// TestCalibrateRefitBadInput: a missing, empty, corrupt or non-report file
// and measurement flags beside --refit are usage errors (exit 2, one
// line) that write nothing.
func TestCalibrateRefitBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b, err := os.ReadFile(recordedReport)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["batched_deletes"] = []map[string]any{{"devices": 300, "p50_ns": 1}, {"devices": 100, "p50_ns": 2}}
	reversed, _ := json.Marshal(rec)
	table, _ := json.Marshal(costs.Default())
	out := filepath.Join(dir, "table.json")
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--refit", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--refit", write("empty.json", "")}, "not a calibration report"},
		{[]string{"--refit", write("corrupt.json", `{"host": {"cpus": 2`)}, "not a calibration report"},
		{[]string{"--refit", write("two.json", `{"kind":"ifb"} {}`)}, "not a calibration report"},
		{[]string{"--refit", write("costs.json", string(table))}, "a cost table is not a report"},
		{[]string{"--refit", write("reversed.json", string(reversed))}, "increasing"},
		{[]string{"--refit", recordedReport, "--rounds", "3"}, "--refit"},
		{[]string{"--refit", recordedReport, "--no-netns"}, "--refit"},
	}
	for _, tc := range tests {
		args := append([]string{"calibrate", "-o", out}, tc.args...)
		_, errOut, code := refitRun(args...)
		if code != 2 || !strings.Contains(errOut, tc.msg) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("ndst %s = exit %d, stderr %q; want exit 2 and one line mentioning %q", strings.Join(args, " "), code, errOut, tc.msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("ndst %s wrote %s", strings.Join(args, " "), out)
		}
	}
}
