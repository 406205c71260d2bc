package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/netdev"
)

// PredictSpec is a prediction check: the same add and delete on the real
// kernel and on the emulated kernel of the host's line (the one the
// calibration chose and closed on: --profile auto) loaded with the host's
// calibration. The calibration never includes one-by-one deletes, nor
// batched deletes of more than a few hundred devices; nothing here is
// fitted to the deletes being predicted.
type PredictSpec struct {
	Counts []int
	// Runs is the number of real runs per N and mode; SimRuns the number
	// of emulated ones, at evenly spaced start phases in the tick
	// (emu.PhaseSweep, seeds Seed..), as the calibration's closure runs
	// them: a real run starts wherever in the tick it happens to.
	Runs, SimRuns int
	Seed          uint64
	// Costs is the host's calibration; its Host section gives HZ, CPUs and
	// the preemption model of the emulated kernel.
	Costs *costs.Table
	// Template names the devices.
	Template ndst.Template
	// Netlink configures the real backend; Netns is a throwaway namespace
	// that Predict creates and removes.
	Netlink nlbackend.Options
	// Progress, when set, is told what runs.
	Progress func(what string)
	// Step, when set, is told how much of the real kernel's work is done,
	// in devices added and deleted, of how much.
	Step func(done, total int)
	// Recorded, when set, replaces the local real-kernel runs with
	// measurements taken in a guest (ParseGuestLog).
	Recorded *Recorded
	// Attribute samples the real deletes' kernel stacks (DelRequest.
	// Attribute), so that each row has the real phases beside the
	// emulated ones.
	Attribute bool
	// Adjust, when set, changes the emulated kernel configured as the
	// host (a knob set otherwise than the calibration's host had it).
	Adjust func(*emu.Config) error
	// Addrs sets every device up with addresses on both kernels (the
	// emulated ones of kind ifb, as this host's fallback, when up).
	Addrs ndst.Addrs
}

// PredictRow is one N and one delete mode: measured against predicted.
type PredictRow struct {
	Op    string `json:"op"` // "del" or "add"
	Count int    `json:"count"`
	Batch string `json:"batch"`
	// MeasuredNS is the real kernel's wall times and PredictedNS the
	// emulated kernel's virtual times, each summarised by the mean of
	// their middle half (calibrate.MidMean, the statistic the calibration
	// closes with; of three runs or fewer, their mean).
	MeasuredNS    int64   `json:"measured_ns"`
	PredictedNS   int64   `json:"predicted_ns"`
	Error         float64 `json:"relative_error"`
	MeasuredRuns  []int64 `json:"measured_runs_ns"`
	PredictedRuns []int64 `json:"predicted_runs_ns"`
	// Per-device figures: the time over N.
	MeasuredPerDeviceNS  float64 `json:"measured_per_device_ns"`
	PredictedPerDeviceNS float64 `json:"predicted_per_device_ns"`
	// Counters of the first emulated run (grace periods, barriers, ...).
	SimCounters map[string]int64 `json:"sim_counters,omitempty"`
	// MeasuredPhases and PredictedPhases are where the delete's time went
	// (the mean over the runs): on the real kernel from its stack samples
	// (with Attribute), on the emulated one from its own attribution.
	MeasuredPhases  []PhaseMean `json:"measured_phases,omitempty"`
	PredictedPhases []PhaseMean `json:"predicted_phases,omitempty"`
	measured        []Sample
	predicted       []Sample
}

// Line is a straight line time = FixedNS + PerDeviceNS·N through the
// measurements of one mode (a description of the results, not an input to
// the model).
type Line struct {
	FixedNS     float64 `json:"fixed_ns"`
	PerDeviceNS float64 `json:"per_device_ns"`
}

// Prediction is the outcome of Predict.
type Prediction struct {
	Profile  string `json:"profile"`
	RCU      string `json:"rcu,omitempty"`
	Strategy string `json:"strategy"`
	HZ       int    `json:"hz"`
	CPUs     int    `json:"cpus"`
	Preempt  string `json:"preempt"`
	Costs    string `json:"costs"`
	Kernel   string `json:"kernel,omitempty"`
	Kind     string `json:"kind"`

	// LoadAvg is /proc/loadavg before and after the real runs: other work
	// on the host lengthens every wait for a CPU (wake-ups, ksoftirqd).
	LoadAvg []string `json:"loadavg,omitempty"`

	Rows []PredictRow `json:"rows"`
	// Measured and Predicted are least-squares lines through the delete
	// rows of each mode, when there are two or more N.
	Measured  map[string]Line `json:"measured_lines,omitempty"`
	Predicted map[string]Line `json:"predicted_lines,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
}

// PredictThreshold is the relative error the emulated kernel should stay
// within.
const PredictThreshold = 0.20

// emuForHost is the emulated kernel configured as the host of t: the line,
// RCU, HZ, CPUs and preemption model its calibration recorded. A table from
// before lines were recorded gets the line of its kernel release.
func emuForHost(t *costs.Table, seed uint64) (emu.Config, error) {
	h := t.Host
	if h == nil || h.HZ == 0 || h.CPUs == 0 {
		return emu.Config{}, ndst.Usagef("cost table %q has no host section with HZ and CPUs; write one with 'ndst calibrate -o FILE'", t.Source)
	}
	if h.Profile == "" {
		line, _, err := netdev.ProfileForRelease(h.Kernel)
		if err != nil {
			return emu.Config{}, ndst.Usagef("cost table %q: %v", t.Source, err)
		}
		hc := *h
		hc.Profile = line
		t = &costs.Table{Source: t.Source, Notes: t.Notes, Costs: t.Costs, Host: &hc, Extra: t.Extra}
	}
	c, err := calibrate.HostModel(t)
	if err != nil {
		return c, ndst.Usagef("cost table %q: %v", t.Source, err)
	}
	c.Seed = seed
	return c, nil
}

// EmuConfig is the emulated kernel configured as the calibrated host,
// changed by adjust (when set), and checked as emu.Open checks it (a knob
// the line lacks, a value the machine refuses), running nothing.
func (s *PredictSpec) EmuConfig(adjust func(*emu.Config) error) (emu.Config, error) {
	c, err := emuForHost(s.Costs, s.Seed)
	if err != nil {
		return c, err
	}
	if adjust != nil {
		if err := adjust(&c); err != nil {
			return c, err
		}
	}
	c.Ephemeral = true
	be, err := emu.Open(context.Background(), c)
	if err != nil {
		return c, err
	}
	return c, be.Close()
}

// Check validates the spec without running anything.
func (s *PredictSpec) Check() error {
	if len(s.Counts) == 0 {
		return ndst.Usagef("--count: empty list; give at least one value")
	}
	for _, n := range s.Counts {
		if n < 1 || n > 100_000 {
			return ndst.Usagef("--count: %d is out of range; want 1..100000", n)
		}
		if s.Netlink.Kind == "veth" && n%2 != 0 {
			return ndst.Usagef("--count: %d is odd; veth devices come in pairs", n)
		}
	}
	if dup := firstDupInt(s.Counts); dup != 0 {
		return ndst.Usagef("--count: %d is listed twice", dup)
	}
	if s.Runs < 1 || s.Runs > 100 || s.SimRuns < 1 || s.SimRuns > 1000 {
		return ndst.Usagef("--runs must be in 1..100 and --sim-runs in 1..1000")
	}
	if s.Costs == nil {
		return ndst.Usagef("no cost table; give --costs FILE from 'ndst calibrate -o FILE'")
	}
	_, err := emuForHost(s.Costs, s.Seed)
	return err
}

// Predict runs the emulated kernel first (cheap), then the real one, one run
// at a time, and compares them.
func Predict(ctx context.Context, s *PredictSpec) (*Prediction, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if s.Template == (ndst.Template{}) {
		s.Template, _ = ndst.ParseTemplate(ndst.DefaultTemplate)
	}
	base, _ := emuForHost(s.Costs, s.Seed)
	if s.Adjust != nil {
		if err := s.Adjust(&base); err != nil {
			return nil, err
		}
	}
	p := &Prediction{Profile: base.Profile, RCU: base.RCU, HZ: base.HZ, CPUs: base.CPUs, Preempt: base.Preempt,
		Costs: s.Costs.Source, Kernel: s.Costs.Host.Kernel}
	rows := map[key]*PredictRow{}
	var order []key
	for _, n := range s.Counts {
		for _, b := range BatchNames {
			k := key{"del", n, b}
			order = append(order, k)
			rows[k] = &PredictRow{Op: "del", Count: n, Batch: b}
		}
	}
	for _, n := range s.Counts {
		k := key{"add", n, "-"}
		order = append(order, k)
		rows[k] = &PredictRow{Op: "add", Count: n, Batch: "-"}
	}
	// The emulated kernel.
	for _, n := range s.Counts {
		for _, b := range BatchNames {
			for _, c := range emu.PhaseSweep(base, s.SimRuns) {
				be, err := emu.Open(ctx, c)
				if err != nil {
					return nil, err
				}
				p.Strategy = be.Strategy()
				add, err := be.Add(ctx, ndst.AddRequest{Count: n, Template: s.Template, Kind: s.emuKind(), Addrs: s.Addrs})
				if err != nil {
					return nil, fmt.Errorf("emulated add %d: %w", n, err)
				}
				del, err := be.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: b == "one-by-one"})
				be.Close()
				if err != nil {
					return nil, fmt.Errorf("emulated del of %d (%s): %w", n, b, err)
				}
				r := rows[key{"del", n, b}]
				r.PredictedRuns = append(r.PredictedRuns, deref(del.VirtualNS))
				r.predicted = append(r.predicted, Sample{Phases: del.Phases})
				if r.SimCounters == nil {
					r.SimCounters = del.Counters
				}
				if b == "batched" {
					ra := rows[key{"add", n, "-"}]
					ra.PredictedRuns = append(ra.PredictedRuns, deref(add.VirtualNS))
				}
			}
		}
	}
	if s.Recorded != nil { // measured in a guest
		p.Kind, p.Kernel = s.Recorded.Kind, s.Recorded.Source
		for _, n := range s.Counts {
			for _, b := range BatchNames {
				rows[key{"del", n, b}].MeasuredRuns = s.Recorded.Del[n][b]
			}
			rows[key{"add", n, "-"}].MeasuredRuns = s.Recorded.Add[n]
		}
	} else if err := s.measureLocally(ctx, p, func(k key) *PredictRow { return rows[k] }); err != nil {
		return nil, err
	}
	for _, k := range order {
		r := rows[k]
		if len(r.MeasuredRuns) == 0 {
			continue // a guest transcript need not cover every row
		}
		r.MeasuredNS = calibrate.MidMean(r.MeasuredRuns)
		r.PredictedNS = calibrate.MidMean(r.PredictedRuns)
		r.MeasuredPhases, r.PredictedPhases = meanPhases(r.measured), meanPhases(r.predicted)
		if r.MeasuredNS > 0 {
			r.Error = float64(r.PredictedNS-r.MeasuredNS) / float64(r.MeasuredNS)
		}
		r.MeasuredPerDeviceNS = float64(r.MeasuredNS) / float64(r.Count)
		r.PredictedPerDeviceNS = float64(r.PredictedNS) / float64(r.Count)
		p.Rows = append(p.Rows, *r)
		if r.Op == "del" && math.Abs(r.Error) > PredictThreshold {
			p.Warnings = append(p.Warnings, fmt.Sprintf("N=%d %s: the prediction is off by %+.0f%% (more than %.0f%%)",
				r.Count, r.Batch, 100*r.Error, 100*PredictThreshold))
		}
	}
	if len(s.Counts) >= 2 {
		p.Measured, p.Predicted = map[string]Line{}, map[string]Line{}
		for _, b := range BatchNames {
			var xs, ms, ps []float64
			for _, r := range p.Rows {
				if r.Op == "del" && r.Batch == b {
					xs = append(xs, float64(r.Count))
					ms = append(ms, float64(r.MeasuredNS))
					ps = append(ps, float64(r.PredictedNS))
				}
			}
			p.Measured[b], p.Predicted[b] = fitLine(xs, ms), fitLine(xs, ps)
		}
	}
	return p, nil
}

// key names one row of a prediction.
type key struct {
	op    string
	n     int
	batch string
}

// measureLocally runs the real adds and deletes on this host's kernel, in a
// throwaway namespace.
func (s *PredictSpec) measureLocally(ctx context.Context, p *Prediction, rows func(key) *PredictRow) error {
	nb, err := nlbackend.Open(ctx, s.Netlink)
	if err != nil {
		return fmt.Errorf("netlink backend: %w", err)
	}
	defer func() {
		nb.Close()
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = nlbackend.Reset(rctx, s.Netlink)
	}()
	if !nb.Created() {
		return ndst.Usagef("network namespace %s already exists; predict needs a throwaway namespace of its own", s.Netlink.Netns)
	}
	p.LoadAvg = append(p.LoadAvg, calibrate.LoadAvg())
	total, done := 0, 0
	for _, n := range s.Counts {
		total += n * len(BatchNames) * s.Runs
	}
	for _, n := range s.Counts {
		for _, b := range BatchNames {
			for range s.Runs {
				if s.Progress != nil {
					s.Progress(fmt.Sprintf("real kernel: add %d, delete %s", n, b))
				}
				if s.Step != nil {
					s.Step(done, total)
				}
				done += n
				add, err := nb.Add(ctx, ndst.AddRequest{Count: n, Template: s.Template, Kind: s.Netlink.Kind, Addrs: s.Addrs})
				if err != nil {
					return fmt.Errorf("real add %d: %w", n, err)
				}
				p.Kind = add.Kind
				del, err := nb.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: b == "one-by-one", Attribute: s.Attribute})
				if err != nil {
					return fmt.Errorf("real del of %d (%s): %w", n, b, err)
				}
				r := rows(key{"del", n, b})
				r.MeasuredRuns = append(r.MeasuredRuns, del.WallNS)
				if len(del.Phases) > 0 {
					r.measured = append(r.measured, Sample{Phases: del.Phases})
				}
				for _, note := range del.Notes {
					if strings.Contains(note, "attribut") && !slices.Contains(p.Warnings, note) {
						p.Warnings = append(p.Warnings, note)
					}
				}
				ra := rows(key{"add", n, "-"})
				ra.MeasuredRuns = append(ra.MeasuredRuns, add.WallNS)
			}
		}
	}
	p.LoadAvg = append(p.LoadAvg, calibrate.LoadAvg())
	return nil
}

// fitLine is the least-squares line through (xs, ys).
func fitLine(xs, ys []float64) Line {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return Line{FixedNS: sy / n}
	}
	b := (n*sxy - sx*sy) / d
	return Line{FixedNS: (sy - b*sx) / n, PerDeviceNS: b}
}

// WriteTable prints the comparison.
func (p *Prediction) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "predicted: emulated kernel line %s (%s RCU), strategy %s, HZ=%d, %d CPU(s), preempt %s, costs %s\n",
		p.Profile, p.RCU, p.Strategy, p.HZ, p.CPUs, p.Preempt, p.Costs)
	kernel := p.Kernel
	if kernel == "" {
		kernel = "this host's kernel"
	}
	fmt.Fprintf(&b, "measured:  %s through netlink (kind %s), wall time around the kernel work\n", kernel, p.Kind)
	if len(p.LoadAvg) == 2 {
		fmt.Fprintf(&b, "load average before/after the real runs: %s / %s\n", p.LoadAvg[0], p.LoadAvg[1])
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tN\tmode\tmeasured\tpredicted\terror\tmeasured/dev\tpredicted/dev\t")
	for _, r := range p.Rows {
		mode := r.Batch
		if r.Op == "add" {
			mode = "(calibrated)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%+.1f%%\t%s\t%s\t\n", r.Op, r.Count, mode,
			FormatDuration(float64(r.MeasuredNS)), FormatDuration(float64(r.PredictedNS)), 100*r.Error,
			FormatDuration(r.MeasuredPerDeviceNS), FormatDuration(r.PredictedPerDeviceNS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range BatchNames {
		ml, ok1 := p.Measured[m]
		pl, ok2 := p.Predicted[m]
		if ok1 && ok2 {
			fmt.Fprintf(&b, "%-10s measured %s + %s per device; predicted %s + %s per device\n", m+":",
				FormatDuration(ml.FixedNS), FormatDuration(ml.PerDeviceNS), FormatDuration(pl.FixedNS), FormatDuration(pl.PerDeviceNS))
		}
	}
	b.WriteString("add rows: create costs are a calibration input, shown for reference; the delete rows are the test\n")
	p.writePhases(&b)
	for _, wn := range p.Warnings {
		b.WriteString("warning: " + wn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePhases prints, for every delete row with real stack samples, where
// its time went on the real kernel and on the emulated one, phase by phase,
// per device for one-by-one rows.
func (p *Prediction) writePhases(b *strings.Builder) {
	started := false
	for _, r := range p.Rows {
		if r.Op != "del" || len(r.MeasuredPhases) == 0 {
			continue
		}
		if !started {
			b.WriteString("where the time went (real: the deleting thread's kernel stack sampled at 1 kHz; emulated: its own attribution):\n")
			started = true
		}
		div, unit := 1.0, ""
		if r.Batch == "one-by-one" {
			div, unit = float64(r.Count), " per device"
		}
		fmt.Fprintf(b, "  N=%d %s%s:\n", r.Count, r.Batch, unit)
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "    phase\treal\t\temulated\t")
		total := func(ps []PhaseMean) float64 {
			t := 0.0
			for _, x := range ps {
				t += x.CPUNS + x.WaitNS
			}
			return t
		}
		tm, tp := total(r.MeasuredPhases), total(r.PredictedPhases)
		cell := func(ps []PhaseMean, name string, tot float64) (string, string) {
			for _, x := range ps {
				if x.Name == name && tot > 0 {
					v := x.CPUNS + x.WaitNS
					return FormatDuration(v / div), fmt.Sprintf("%.0f%%", 100*v/tot)
				}
			}
			return "-", ""
		}
		var names []string
		for _, ps := range [][]PhaseMean{r.MeasuredPhases, r.PredictedPhases} {
			for _, x := range ps {
				if !slices.Contains(names, x.Name) {
					names = append(names, x.Name)
				}
			}
		}
		for _, name := range names {
			mv, ms := cell(r.MeasuredPhases, name, tm)
			pv, ps := cell(r.PredictedPhases, name, tp)
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", name, mv, ms, pv, ps)
		}
		tw.Flush()
	}
}

// emuKind is the emulated devices' kind: ifb when they are up (its
// queueing qdisc makes closing them wait on 6.18) and the real ones are
// ifb (asked for, or the kernel's default where it has no dummy, as the
// calibration's devices were), else the emulated kernel's dummy.
func (s *PredictSpec) emuKind() string {
	if !s.Addrs.Up {
		return ""
	}
	switch {
	case s.Netlink.Kind == "ifb":
		return "ifb"
	case s.Netlink.KindExplicit:
		return ""
	case s.Costs != nil && s.Costs.Host != nil && s.Costs.Host.DeviceKind != "":
		if s.Costs.Host.DeviceKind == "ifb" {
			return "ifb"
		}
		return ""
	}
	// A table without the kind: the real kernel's default is dummy,
	// unless it has none (this project's host).
	return "ifb"
}
