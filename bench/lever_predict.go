package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ndst-project/ndst/ndst/emu"
)

// A boot-time lever checked in a VM: the guest is booted twice, as it is
// and with the lever on its command line, and each boot calibrates and
// measures the same deletes. The emulated kernel, loaded with the first
// boot's calibration, predicts the deletes without the lever and, with the
// lever applied to it, the deletes with it: the second boot's measurements
// are never a calibration input of the prediction they are compared with.

// LeverRow is one N and one delete mode, without and with the lever.
type LeverRow struct {
	Count int    `json:"count"`
	Batch string `json:"batch"`
	// Measured and predicted medians, without (Before) and with (After)
	// the lever.
	MeasuredBeforeNS  int64 `json:"measured_before_ns"`
	MeasuredAfterNS   int64 `json:"measured_after_ns"`
	PredictedBeforeNS int64 `json:"predicted_before_ns"`
	PredictedAfterNS  int64 `json:"predicted_after_ns"`
	// Error is the prediction with the lever against the measurement with
	// it; BeforeError without.
	Error       float64 `json:"relative_error"`
	BeforeError float64 `json:"relative_error_before"`
	// PredictedEffect and MeasuredEffect are "faster", "slower" or "none"
	// (within Threshold: EffectThreshold, or the spread of the measured
	// runs if larger); SignRight says they agree.
	Threshold       float64 `json:"effect_threshold"`
	PredictedEffect string  `json:"predicted_effect"`
	MeasuredEffect  string  `json:"measured_effect"`
	SignRight       bool    `json:"sign_right"`
}

// LeverPrediction is the outcome of PredictLever.
type LeverPrediction struct {
	// Lever is what was set, as NAME=VALUE words.
	Lever []string `json:"lever"`
	// Without and With are the two predictions in full.
	Without *Prediction `json:"without"`
	With    *Prediction `json:"with"`
	Rows    []LeverRow  `json:"rows"`
	// Cmdline is each boot's kernel command line, when its transcript has
	// it (without, with).
	Cmdline [2]string `json:"cmdline"`
	// Within counts the delete rows whose prediction with the lever is
	// within PredictThreshold of the measurement; Signs those whose effect
	// has the measured sign.
	Within int `json:"within"`
	Signs  int `json:"signs_right"`
}

// PredictLever predicts s.Recorded (measured without the lever) and with
// (measured with it), both with s.Costs, the second with apply changing the
// emulated kernel as the lever does.
func PredictLever(ctx context.Context, s *PredictSpec, with *Recorded, lever []string, apply func(*emu.Config) error) (*LeverPrediction, error) {
	if s.Recorded == nil || with == nil {
		return nil, fmt.Errorf("a lever prediction needs the measurements of both boots")
	}
	without, err := Predict(ctx, s)
	if err != nil {
		return nil, err
	}
	ws := *s
	ws.Recorded = with
	ws.Adjust = apply
	withP, err := Predict(ctx, &ws)
	if err != nil {
		return nil, err
	}
	lp := &LeverPrediction{Lever: lever, Without: without, With: withP, Cmdline: [2]string{s.Recorded.Cmdline, with.Cmdline}}
	after := map[key]PredictRow{}
	for _, r := range withP.Rows {
		after[key{r.Op, r.Count, r.Batch}] = r
	}
	for _, b := range without.Rows {
		if b.Op != "del" {
			continue
		}
		a, ok := after[key{b.Op, b.Count, b.Batch}]
		if !ok {
			continue
		}
		row := LeverRow{Count: b.Count, Batch: b.Batch,
			MeasuredBeforeNS: b.MeasuredNS, MeasuredAfterNS: a.MeasuredNS,
			PredictedBeforeNS: b.PredictedNS, PredictedAfterNS: a.PredictedNS,
			Error: a.Error, BeforeError: b.Error, Threshold: Threshold(b.MeasuredRuns, a.MeasuredRuns)}
		row.PredictedEffect = EffectWithin(b.PredictedNS, a.PredictedNS, row.Threshold)
		row.MeasuredEffect = EffectWithin(b.MeasuredNS, a.MeasuredNS, row.Threshold)
		row.SignRight = row.PredictedEffect == row.MeasuredEffect
		if row.SignRight {
			lp.Signs++
		}
		if abs64(a.Error) <= PredictThreshold {
			lp.Within++
		}
		lp.Rows = append(lp.Rows, row)
	}
	return lp, nil
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// WriteTable prints the lever's rows.
func (lp *LeverPrediction) WriteTable(w io.Writer) error {
	var b strings.Builder
	p := lp.Without
	fmt.Fprintf(&b, "lever: %s\n", strings.Join(lp.Lever, " "))
	fmt.Fprintf(&b, "predicted: emulated kernel line %s (%s RCU), HZ=%d, %d CPU(s), preempt %s, costs %s (the boot without the lever)\n",
		p.Profile, p.RCU, p.HZ, p.CPUs, p.Preempt, p.Costs)
	fmt.Fprintf(&b, "measured:  %s, booted without the lever and with it\n", p.Kernel)
	if lp.Cmdline[1] != "" {
		fmt.Fprintf(&b, "           the boot with it had the command line: %s\n", lp.Cmdline[1])
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "N\tmode\tmeasured without\twith\tpredicted without\twith\terror with\teffect measured\tpredicted\tsign\t")
	for _, r := range lp.Rows {
		sign := "right"
		if !r.SignRight {
			sign = "WRONG"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%+.1f%%\t%s %+.0f%%\t%s %+.0f%%\t%s\t\n", r.Count, r.Batch,
			FormatDuration(float64(r.MeasuredBeforeNS)), FormatDuration(float64(r.MeasuredAfterNS)),
			FormatDuration(float64(r.PredictedBeforeNS)), FormatDuration(float64(r.PredictedAfterNS)),
			100*r.Error, r.MeasuredEffect, 100*relative(r.MeasuredAfterNS, r.MeasuredBeforeNS),
			r.PredictedEffect, 100*relative(r.PredictedAfterNS, r.PredictedBeforeNS), sign)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "%d of %d deletes predicted within %.0f%% with the lever; the effect's sign right in %d of %d (an effect within %.0f%%, or within twice the standard error of the two medians' difference when larger, counts as none)\n",
		lp.Within, len(lp.Rows), 100*PredictThreshold, lp.Signs, len(lp.Rows), 100*EffectThreshold)
	_, err := io.WriteString(w, b.String())
	return err
}
