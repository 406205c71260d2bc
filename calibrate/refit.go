package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ReadReport reads a calibration report as `ndst --json calibrate` writes
// it (a closure recording in testdata/closure is one too, with fields of its
// own that are ignored). It checks the shape only; Refit checks that the
// measurements are a calibration's.
func ReadReport(b []byte) (*Report, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("not a calibration report: a report is the JSON object `ndst --json calibrate` prints")
	}
	var r Report
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a calibration report: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("not a calibration report: more than one JSON value")
	}
	if len(r.Batches) == 0 || r.CreateNS == 0 {
		return nil, fmt.Errorf("not a calibration report: it has no create or batched-delete measurements (a cost table is not a report: refit the report `ndst --json calibrate` printed)")
	}
	return &r, nil
}

// RefitRecorded refits a report read back from a file (ReadReport) with
// this build's model, and keeps the closure the report was recorded with,
// so that the two can be compared run by run (WriteText prints both): the
// same measurements judge a model change.
func (r *Report) RefitRecorded(ctx context.Context, from string) error {
	recorded := r.Closure
	if err := r.Refit(ctx); err != nil {
		return err
	}
	r.RefitOf, r.RecordedClosure, r.Path = from, recorded, ""
	return nil
}

// refitSummary compares the closure of a refitted report with the one it
// was recorded with, run by run.
func (r *Report) refitSummary() string {
	if r.RefitOf == "" {
		return ""
	}
	var b strings.Builder
	was := map[string]ClosurePoint{}
	worstWas := 0.0
	for _, p := range r.RecordedClosure {
		was[slugOf(p)] = p
		if gated(p) {
			worstWas = max(worstWas, math.Abs(p.Error))
		}
	}
	_, worst := r.Closed()
	fmt.Fprintf(&b, "refit:           %s, the same measurements fitted again by this ndst's model", r.RefitOf)
	if len(r.RecordedClosure) > 0 {
		fmt.Fprintf(&b, "; worst gated run %.1f%% as recorded, %.1f%% now\n", 100*worstWas, 100*worst)
	} else {
		fmt.Fprintf(&b, "; the report recorded no closure; worst gated run %.1f%% now\n", 100*worst)
	}
	name := func(p ClosurePoint) string { return fmt.Sprintf("%s %d:", p.What, p.Devices) }
	width := 0
	for _, p := range append(slices.Clone(r.Closure), r.RecordedClosure...) {
		width = max(width, len(name(p)))
	}
	for _, p := range r.Closure {
		fmt.Fprintf(&b, "  %-*s", width, name(p))
		if q, ok := was[slugOf(p)]; ok {
			fmt.Fprintf(&b, " %+6.1f%% recorded, %+6.1f%% now", 100*q.Error, 100*p.Error)
			delete(was, slugOf(p))
		} else {
			fmt.Fprintf(&b, " not recorded,     %+6.1f%% now", 100*p.Error)
		}
		if !gated(p) {
			b.WriteString(" (not gated)")
		}
		b.WriteString("\n")
	}
	for _, q := range r.RecordedClosure {
		if _, ok := was[slugOf(q)]; ok {
			fmt.Fprintf(&b, "  %-*s %+6.1f%% recorded, not a run this model fits\n", width, name(q), 100*q.Error)
		}
	}
	return b.String()
}
