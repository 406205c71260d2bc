package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/knobset"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

// Verifying levers on the real kernel: for each lever this kernel can change
// at runtime, the workload is timed on the real kernel (the netlink backend,
// in a throwaway namespace) with the knob as it is and with the lever's
// value, run after run alternately, and the measured times stand beside the
// emulated kernel's predictions. The knob holds the lever's value only while
// the timed teardown runs: the devices or namespaces are created before it
// is set, and it is put back as soon as the teardown is over.

// Workload is what a verification times on the real kernel: N devices
// deleted as one batch or one by one, or N namespaces (each with a veth pair
// whose outer end is in ndst's namespace, with Veth; lo up, with LoUp)
// deleted all at once or one at a time.
type Workload struct {
	Devices int `json:"devices,omitempty"`
	// OneByOne deletes the devices one by one, or the namespaces one at
	// a time, each waited for.
	OneByOne bool `json:"one_by_one,omitempty"`
	// Namespaces replaces Devices: a namespace workload.
	Namespaces int  `json:"namespaces,omitempty"`
	Veth       bool `json:"veth,omitempty"`
	LoUp       bool `json:"lo_up,omitempty"`
}

// String names the workload for a person.
func (w Workload) String() string {
	if w.Namespaces > 0 {
		s := fmt.Sprintf("%d namespaces", w.Namespaces)
		if w.Veth {
			s += " with a veth pair each"
		}
		if w.LoUp {
			s += " (lo up)"
		}
		if w.OneByOne {
			return s + ", deleted one at a time"
		}
		return s + ", deleted all at once"
	}
	if w.OneByOne {
		return fmt.Sprintf("%d devices deleted one by one", w.Devices)
	}
	return fmt.Sprintf("%d devices deleted in one batch", w.Devices)
}

// Check refuses a workload the real kernel cannot be asked to run.
func (w Workload) Check() error {
	switch {
	case w.Namespaces > 0 && w.Devices > 0:
		return ndst.Usagef("a workload is devices or namespaces, not both")
	case w.Namespaces > 10000:
		return ndst.Usagef("%d namespaces: at most 10000 are verified on the real kernel", w.Namespaces)
	case w.Namespaces == 0 && (w.Devices < 1 || w.Devices > 100000):
		return ndst.Usagef("%d devices: want 1..100000", w.Devices)
	}
	return nil
}

// Lever is one runtime lever to verify: the knob (its boot parameter's
// name and its file), the value to set, and the emulated kernel's times for
// the workload without and with it.
type Lever struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Value string `json:"value"`
	// PredictedBeforeNS and PredictedAfterNS are the emulated kernel's
	// times without and with the lever.
	PredictedBeforeNS int64 `json:"predicted_before_ns"`
	PredictedAfterNS  int64 `json:"predicted_after_ns"`
}

// Knobs changes knobs and puts them back (a *knobset.Session).
type Knobs interface {
	Set(name, path, value string) (knobset.Change, error)
	Undo() error
}

// VerifySpec is a verification.
type VerifySpec struct {
	Workload Workload
	Levers   []Lever
	// Runs is the number of real runs without and with each lever
	// (alternated: without, with, without, with, ...).
	Runs int
	// Netlink configures the real backend; its Netns is a throwaway
	// namespace that Verify creates and removes.
	Netlink nlbackend.Options
	Knobs   Knobs
	// Check says why a knob cannot be changed on this kernel (nil when it
	// can): knobset.Check.
	Check func(path string) error
	// Progress, when set, is told what runs.
	Progress func(what string)
}

// EffectThreshold is the relative change below which a lever counts as
// having no effect, measured or predicted, when the measurements spread
// less than that.
const EffectThreshold = 0.05

// Spread is how far a measurement's runs spread: (max-min)/median; 0 for
// fewer than two runs.
func Spread(xs []int64) float64 {
	if len(xs) < 2 {
		return 0
	}
	st := Summarize(xs)
	if st.Median <= 0 {
		return 0
	}
	return float64(st.Max-st.Min) / float64(st.Median)
}

// medianSE is the standard error of the median of xs, about
// sqrt(pi/2) sd/sqrt(n) for runs spread like a normal distribution; 0 for
// fewer than two runs (their spread is unknown).
func medianSE(xs []int64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return math.Sqrt(math.Pi/2) * Summarize(xs).Stddev / math.Sqrt(float64(len(xs)))
}

// Threshold is the change a comparison of runs without and with a lever
// can resolve, relative to the median without: EffectThreshold, or twice
// the standard error of the difference of the two medians when that is
// larger. Unlike the runs' range, which widens as runs are added, it
// narrows as 1/sqrt(runs): three runs of each resolve about what their
// range did (the range of three runs is about 1.7 standard deviations,
// this about 2.0), nine runs of batched deletes that spread by 1.6x
// resolve a change of about a fifth of that spread. The runs of one set
// without a second run add nothing.
func Threshold(before, after []int64) float64 {
	m := Summarize(before).Median
	if m <= 0 {
		return EffectThreshold
	}
	b, a := medianSE(before), medianSE(after)
	return max(EffectThreshold, 2*math.Sqrt(b*b+a*a)/float64(m))
}

// VerifyRow is one lever's verification.
type VerifyRow struct {
	Lever
	// Skipped says why the lever was not measured ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// Before is the value the knob had (and has again).
	Before string `json:"before,omitempty"`
	// MeasuredBeforeNS and MeasuredAfterNS are the medians of the real
	// runs without and with the lever.
	MeasuredBeforeNS   int64   `json:"measured_before_ns,omitempty"`
	MeasuredAfterNS    int64   `json:"measured_after_ns,omitempty"`
	MeasuredBeforeRuns []int64 `json:"measured_before_runs_ns,omitempty"`
	MeasuredAfterRuns  []int64 `json:"measured_after_runs_ns,omitempty"`
	// IdleShare is the share of all CPUs' time that was idle during the
	// timed teardowns (the deleting CPU's own work included; -1: unknown).
	// An idle CPU is credited with a quiescent state only by a
	// force-quiescent-state scan, a busy one reports its own: several levers
	// act through that difference.
	IdleShare float64 `json:"idle_share"`
	// Error is the prediction with the lever against the measurement with
	// it; BeforeError the same without it.
	Error       float64 `json:"relative_error"`
	BeforeError float64 `json:"relative_error_before"`
	// PredictedEffect and MeasuredEffect are "faster", "slower" or "none"
	// (a change within Threshold: EffectThreshold, or the spread of the
	// runs if larger, for both); SignRight says they agree.
	Threshold       float64 `json:"effect_threshold"`
	PredictedEffect string  `json:"predicted_effect,omitempty"`
	MeasuredEffect  string  `json:"measured_effect,omitempty"`
	SignRight       bool    `json:"sign_right"`
}

// Verification is the outcome of Verify.
type Verification struct {
	Workload Workload    `json:"workload"`
	Kind     string      `json:"kind,omitempty"`
	Runs     int         `json:"runs"`
	LoadAvg  []string    `json:"loadavg,omitempty"`
	Rows     []VerifyRow `json:"rows"`
}

// Effect classifies a change from before to after: "faster", "slower", or
// "none" within EffectThreshold ("" without a time before).
func Effect(before, after int64) string { return EffectWithin(before, after, EffectThreshold) }

// EffectWithin is Effect with a change of up to threshold counting as none.
func EffectWithin(before, after int64, threshold float64) string {
	if before <= 0 {
		return ""
	}
	switch d := float64(after-before) / float64(before); {
	case d < -threshold:
		return "faster"
	case d > threshold:
		return "slower"
	}
	return "none"
}

// relative is pred's error against meas.
func relative(pred, meas int64) float64 {
	if meas <= 0 {
		return 0
	}
	return float64(pred-meas) / float64(meas)
}

// Verify measures each lever on the real kernel. Whatever happens (an
// error, ctx cancelled), every knob it set has been put back by the time it
// returns, or the error says which could not be.
func Verify(ctx context.Context, s *VerifySpec) (v *Verification, err error) {
	if err := s.Workload.Check(); err != nil {
		return nil, err
	}
	if s.Runs < 1 || s.Runs > 100 {
		return nil, ndst.Usagef("--runs must be in 1..100")
	}
	if s.Progress == nil {
		s.Progress = func(string) {}
	}
	defer func() {
		if uerr := s.Knobs.Undo(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	v = &Verification{Workload: s.Workload, Runs: s.Runs}
	r, err := openReal(ctx, s)
	if err != nil {
		return nil, err
	}
	defer r.close()
	v.LoadAvg = append(v.LoadAvg, calibrate.LoadAvg())
	for _, l := range s.Levers {
		row := VerifyRow{Lever: l}
		if err := s.Check(l.Path); err != nil {
			if !errors.Is(err, knobset.ErrNotWritable) {
				return v, err
			}
			var nw *knobset.NotWritableError
			errors.As(err, &nw)
			row.Skipped = nw.Reason
			v.Rows = append(v.Rows, row)
			continue
		}
		var idle, ticks uint64
		for run := range s.Runs {
			s.Progress(fmt.Sprintf("real kernel: %s as it is (run %d of %d)", s.Workload, run+1, s.Runs))
			before, err := r.measure(ctx, nil)
			if err != nil {
				return v, err
			}
			idle, ticks = idle+r.idle, ticks+r.ticks
			row.MeasuredBeforeRuns = append(row.MeasuredBeforeRuns, before)
			s.Progress(fmt.Sprintf("real kernel: %s with %s=%s (run %d of %d)", s.Workload, l.Name, l.Value, run+1, s.Runs))
			var ch knobset.Change
			after, err := r.measure(ctx, func() error {
				var err error
				ch, err = s.Knobs.Set(l.Name, l.Path, l.Value)
				return err
			})
			if uerr := s.Knobs.Undo(); uerr != nil {
				return v, errors.Join(err, uerr)
			}
			var nw *knobset.NotWritableError
			if errors.As(err, &nw) {
				row.Skipped = nw.Reason
				break
			}
			if err != nil {
				return v, err
			}
			row.Before = ch.Before
			if ch.Wrote == "" {
				row.Skipped = fmt.Sprintf("already %s on this kernel", ch.Before)
				break
			}
			row.MeasuredAfterRuns = append(row.MeasuredAfterRuns, after)
			idle, ticks = idle+r.idle, ticks+r.ticks
		}
		row.IdleShare = -1
		if ticks > 0 {
			row.IdleShare = float64(idle) / float64(ticks)
		}
		if row.Skipped == "" {
			row.MeasuredBeforeNS = Summarize(row.MeasuredBeforeRuns).Median
			row.MeasuredAfterNS = Summarize(row.MeasuredAfterRuns).Median
			row.Error = relative(l.PredictedAfterNS, row.MeasuredAfterNS)
			row.BeforeError = relative(l.PredictedBeforeNS, row.MeasuredBeforeNS)
			row.Threshold = Threshold(row.MeasuredBeforeRuns, row.MeasuredAfterRuns)
			row.MeasuredEffect = EffectWithin(row.MeasuredBeforeNS, row.MeasuredAfterNS, row.Threshold)
			row.PredictedEffect = EffectWithin(l.PredictedBeforeNS, l.PredictedAfterNS, row.Threshold)
			row.SignRight = row.MeasuredEffect == row.PredictedEffect
		} else {
			row.MeasuredBeforeRuns = nil
		}
		v.Rows = append(v.Rows, row)
	}
	v.Kind = r.kind
	v.LoadAvg = append(v.LoadAvg, calibrate.LoadAvg())
	return v, nil
}

// realRun is the real kernel a verification times, through a throwaway
// namespace of ndst's.
type realRun struct {
	s    *VerifySpec
	nb   *nlbackend.Backend
	tmpl ndst.NetnsTemplate
	kind string
	// idle and ticks are the idle and all CPU time (clock ticks) of the
	// last timed teardown (zero when /proc/stat is not there).
	idle, ticks uint64
}

// timed runs f, the teardown, and notes how idle the CPUs were meanwhile.
func (r *realRun) timed(f func() error) error {
	a, ok := readCPUTimes()
	err := f()
	r.idle, r.ticks = 0, 0
	if b, ok2 := readCPUTimes(); ok && ok2 && b.total > a.total {
		r.idle, r.ticks = b.idle-a.idle, b.total-a.total
	}
	return err
}

func openReal(ctx context.Context, s *VerifySpec) (*realRun, error) {
	nb, err := nlbackend.Open(ctx, s.Netlink)
	if err != nil {
		return nil, fmt.Errorf("netlink backend: %w", err)
	}
	r := &realRun{s: s, nb: nb}
	if !nb.Created() {
		nb.Close()
		return nil, ndst.Usagef("network namespace %s already exists; verifying needs a throwaway namespace of its own", s.Netlink.Netns)
	}
	if r.tmpl, err = ndst.ParseNetnsTemplate(fmt.Sprintf("ndst-v%d-%%d", os.Getpid())); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// close removes what the runs left (an interrupted run's devices and
// namespaces) and the throwaway namespace.
func (r *realRun) close() {
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r.s.Workload.Namespaces > 0 {
		_, _ = r.nb.NetnsDel(cctx, ndst.NetnsDelRequest{Start: 1, Stop: r.tmpl.MaxNumber(), Template: r.tmpl})
	}
	r.nb.Close()
	_ = nlbackend.Reset(cctx, r.s.Netlink)
}

// measure creates the workload's devices or namespaces, runs set (when not
// nil) and times their teardown: the wall time of the delete for devices,
// the time to the last namespace's cleanup done for namespaces.
func (r *realRun) measure(ctx context.Context, set func() error) (int64, error) {
	w := r.s.Workload
	if w.Namespaces == 0 {
		tmpl, _ := ndst.ParseTemplate(ndst.DefaultTemplate)
		a, err := r.nb.Add(ctx, ndst.AddRequest{Count: w.Devices, Template: tmpl, Kind: r.s.Netlink.Kind})
		if err != nil {
			return 0, fmt.Errorf("real add %d: %w", w.Devices, err)
		}
		r.kind = a.Kind
		if set != nil {
			if err := set(); err != nil {
				_, _ = r.nb.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32})
				return 0, err
			}
		}
		var d *ndst.Result
		err = r.timed(func() (err error) {
			d, err = r.nb.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: w.OneByOne})
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("real del of %d: %w", w.Devices, err)
		}
		return d.WallNS, nil
	}
	if _, err := r.nb.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: w.Namespaces, Template: r.tmpl, Veth: w.Veth, LoUp: w.LoUp}); err != nil {
		return 0, fmt.Errorf("real netns add %d: %w", w.Namespaces, err)
	}
	// A namespace workload's only links are its veth pairs: the result's
	// kind is the one its links would have had.
	r.kind = ""
	if w.Veth {
		r.kind = "veth"
	}
	del := ndst.NetnsDelRequest{Start: 1, Stop: w.Namespaces, Template: r.tmpl, OneByOne: w.OneByOne}
	if set != nil {
		if err := set(); err != nil {
			_, _ = r.nb.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: w.Namespaces, Template: r.tmpl})
			return 0, err
		}
	}
	var d *ndst.Result
	err := r.timed(func() (err error) {
		d, err = r.nb.NetnsDel(ctx, del)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("real netns del of %d: %w", w.Namespaces, err)
	}
	if d.Netns == nil || d.Netns.DoneNS == nil {
		return 0, fmt.Errorf("real netns del of %d: the cleanup's end was not observed (%v)", w.Namespaces, d.Notes)
	}
	return *d.Netns.DoneNS, nil
}

// WriteTable prints the verification: per lever, the predicted and measured
// times without and with it, the error with it and the effect's sign.
func (v *Verification) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "verified on this kernel: %s", v.Workload)
	if v.Kind != "" {
		fmt.Fprintf(&b, " (%s)", v.Kind)
	}
	fmt.Fprintf(&b, ", %d run(s) without and with each lever, alternately", v.Runs)
	if len(v.LoadAvg) == 2 {
		fmt.Fprintf(&b, "; load average %s / %s", v.LoadAvg[0], v.LoadAvg[1])
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "lever\twas\tpredicted\tmeasured\terror with\teffect predicted / measured\tCPUs idle\t")
	for _, r := range v.Rows {
		lever := r.Name + "=" + r.Value
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t\t%s -> %s\tskipped: %s\t\t\t\n", lever,
				FormatDuration(float64(r.PredictedBeforeNS)), FormatDuration(float64(r.PredictedAfterNS)), r.Skipped)
			continue
		}
		sign := "right"
		if !r.SignRight {
			sign = "WRONG"
		}
		idle := "-"
		if r.IdleShare >= 0 {
			idle = fmt.Sprintf("%.0f%%", 100*r.IdleShare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s -> %s\t%s -> %s\t%+.1f%%\t%s %+.0f%% / %s %+.0f%% (±%.0f%%): %s\t%s\t\n", lever, r.Before,
			FormatDuration(float64(r.PredictedBeforeNS)), FormatDuration(float64(r.PredictedAfterNS)),
			FormatDuration(float64(r.MeasuredBeforeNS)), FormatDuration(float64(r.MeasuredAfterNS)),
			100*r.Error, r.PredictedEffect, 100*relative(r.PredictedAfterNS, r.PredictedBeforeNS),
			r.MeasuredEffect, 100*relative(r.MeasuredAfterNS, r.MeasuredBeforeNS), 100*r.Threshold, sign, idle)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "an effect within %.0f%%, or within twice the standard error of the two medians' difference when larger, counts as none; each knob was put back after every run with its lever\n", 100*EffectThreshold)
	_, err := io.WriteString(w, b.String())
	return err
}
