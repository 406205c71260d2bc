package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/netdev"
)

// A namespace prediction: for each N, without and with a veth pair, deleted
// all at once and one at a time, the three times of the delete (returned,
// devices gone, cleanup done) on the emulated kernel of the host's line,
// loaded with the host's calibration (PredictNetnsSim), and the same cells
// on this host's kernel through the netlink backend (PredictNetns). The
// calibration measured namespaces with lo up at other sizes, deleted all at
// once and without veth pairs (calibrate/netns.go): the veth cells and every
// one-at-a-time cell are predicted from mechanism and the device costs.

// NetnsPredictSpec is what to predict.
type NetnsPredictSpec struct {
	Counts []int  // namespaces per cell (10, 100, 1000)
	Veth   []bool // without and/or with a veth pair
	Links  int    // links per namespace besides lo
	LoUp   bool
	// Runs is the number of emulated runs per cell (seeds Seed..).
	Runs int
	Seed uint64
	// Costs is the host's calibration: its host section gives the line,
	// HZ, CPUs and preemption model (see Predict).
	Costs *costs.Table
	// RealRuns is the number of real runs per cell (PredictNetns).
	RealRuns int
	// Netlink configures the real backend; Netns is a throwaway namespace
	// that PredictNetns creates and removes, and holds the veth pairs'
	// outer ends.
	Netlink nlbackend.Options
	// Progress, when set, is told what runs.
	Progress func(what string)
	// Step, when set, is told how much of the real kernel's work is done,
	// in namespaces created and deleted, of how much.
	Step func(done, total int)

	warnings []string
}

func (p *NetnsPredictSpec) warn(s string) { p.warnings = append(p.warnings, s) }

// NetnsSimRow is one cell's emulated times: medians over the runs, on the
// clock of the command (virtual nanoseconds since it started).
type NetnsSimRow struct {
	Namespaces int    `json:"namespaces"`
	Links      int    `json:"links"`
	Veth       bool   `json:"veth"`
	LoUp       bool   `json:"lo_up"`
	Style      string `json:"style"`
	ReturnedNS int64  `json:"returned_ns"`
	GoneNS     int64  `json:"gone_ns"`
	DoneNS     int64  `json:"done_ns"`
	// CleanupRuns is the mean number of cleanup_net runs.
	CleanupRuns float64 `json:"cleanup_runs"`
	Runs        int     `json:"runs"`
	OK          int     `json:"ok"`
	Result      string  `json:"result"`
}

// PredictNetnsSim runs the emulated cells of a namespace prediction.
func PredictNetnsSim(ctx context.Context, p NetnsPredictSpec) ([]NetnsSimRow, error) {
	if p.Costs == nil {
		return nil, ndst.Usagef("a namespace prediction needs the host's calibration (ndst calibrate -o FILE)")
	}
	cfg, err := emuForHost(p.Costs, p.Seed)
	if err != nil {
		return nil, err
	}
	if p.Runs < 1 {
		p.Runs = 1
	}
	veth := p.Veth
	if len(veth) == 0 {
		veth = []bool{false, true}
	}
	links := []int{p.Links}
	s := &Spec{
		Backends: []string{"sim"}, Profiles: []string{cfg.Profile}, Strategies: []string{cfg.Strategy},
		HZ: []int{cfg.HZ}, CPUs: []int{cfg.CPUs}, Preempts: []string{cfg.Preempt},
		Batches: []string{"batched", "one-by-one"}, Counts: []int{1},
		NetnsCounts: p.Counts, NetnsLinks: links, NetnsVeth: veth, NetnsLoUp: p.LoUp,
		Runs: p.Runs, Seed: p.Seed, RCU: cfg.RCU, Costs: p.Costs,
	}
	if cfg.Strategy == "" {
		prof, err := netdev.LookupProfile(cfg.Profile)
		if err != nil {
			return nil, fmt.Errorf("cost table %q: %w", p.Costs.Source, err)
		}
		s.Strategies = []string{prof.DefaultStrategy}
	}
	if cfg.Preempt == "" {
		s.Preempts = []string{"none"}
	}
	rep, err := Run(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	out := make([]NetnsSimRow, 0, len(rep.Results))
	for _, r := range rep.Results {
		row := NetnsSimRow{Namespaces: r.Namespaces, Links: r.Links, Veth: r.Veth, LoUp: r.LoUp, Style: r.netnsStyle(),
			Runs: r.Runs, OK: r.OK, Result: resultText(r)}
		var ret, gone []int64
		for _, x := range r.Samples {
			if x.Result == ndst.ResultOK {
				ret = append(ret, x.Counters["netns_returned_ns"])
				gone = append(gone, x.Counters["netns_gone_ns"])
			}
		}
		if r.OK > 0 {
			row.ReturnedNS, row.GoneNS, row.DoneNS = Summarize(ret).Median, Summarize(gone).Median, r.MedianNS
			row.CleanupRuns = r.Counters["cleanup_batches"]
		}
		out = append(out, row)
	}
	return out, nil
}

// NetnsPredictRow is one cell: the real kernel's times against the emulated
// kernel's. Error is on the cleanup done (the time a pod's teardown is over),
// GoneError on the devices gone.
type NetnsPredictRow struct {
	Namespaces int    `json:"namespaces"`
	Links      int    `json:"links"`
	Veth       bool   `json:"veth"`
	LoUp       bool   `json:"lo_up"`
	Style      string `json:"style"`
	// Medians over the real runs.
	MeasuredReturnedNS int64   `json:"measured_returned_ns"`
	MeasuredGoneNS     int64   `json:"measured_gone_ns"`
	MeasuredDoneNS     int64   `json:"measured_done_ns"`
	MeasuredRuns       []int64 `json:"measured_done_runs_ns"`
	MeasuredCleanups   float64 `json:"measured_cleanup_runs"`
	// The emulated cell.
	Predicted NetnsSimRow `json:"predicted"`
	Error     float64     `json:"relative_error"`
	GoneError float64     `json:"gone_relative_error"`
}

// NetnsPrediction is the outcome of PredictNetns.
type NetnsPrediction struct {
	Kernel  string            `json:"kernel"`
	Profile string            `json:"profile"`
	RCU     string            `json:"rcu"`
	HZ      int               `json:"hz"`
	CPUs    int               `json:"cpus"`
	Preempt string            `json:"preempt"`
	Costs   string            `json:"costs"`
	Kind    string            `json:"kind,omitempty"`
	Rows    []NetnsPredictRow `json:"rows"`
	Within  int               `json:"within"`
	// Compared is how many cells had a measured cleanup end to compare
	// (Within counts among them; the others show n/a).
	Compared int      `json:"compared"`
	Limit    float64  `json:"limit"`
	LoadAvg  []string `json:"loadavg,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// NetnsPredictLimit is the relative error every cell should stay within.
const NetnsPredictLimit = 0.25

// PredictNetns runs the emulated cells, then the same cells on the real
// kernel, one run at a time, and compares them.
func PredictNetns(ctx context.Context, p NetnsPredictSpec) (*NetnsPrediction, error) {
	if !calibrate.HasNetnsCosts(p.Costs) {
		return nil, ndst.Usagef("the cost table has no namespace calibration (netns_setup_ns, netns_put_ns, netns_exit_ns): run ndst calibrate -o FILE without --no-netns")
	}
	if len(p.Veth) == 0 {
		p.Veth = []bool{false, true}
	}
	if p.RealRuns < 1 {
		p.RealRuns = 1
	}
	if p.Progress == nil {
		p.Progress = func(string) {}
	}
	cfg, err := emuForHost(p.Costs, p.Seed)
	if err != nil {
		return nil, err
	}
	pr := &NetnsPrediction{Kernel: p.Costs.Host.Kernel, Profile: cfg.Profile, RCU: cfg.RCU, HZ: cfg.HZ, CPUs: cfg.CPUs,
		Preempt: cfg.Preempt, Costs: p.Costs.Source, Limit: NetnsPredictLimit}
	p.Progress("the emulated kernel")
	sim, err := PredictNetnsSim(ctx, p)
	if err != nil {
		return nil, err
	}
	pr.LoadAvg = append(pr.LoadAvg, calibrate.LoadAvg())
	real, kind, err := p.measureNetns(ctx)
	if err != nil {
		return nil, err
	}
	pr.Kind = kind
	pr.Warnings = append(pr.Warnings, p.warnings...)
	pr.LoadAvg = append(pr.LoadAvg, calibrate.LoadAvg())
	for _, s := range sim {
		k := netnsKey{s.Namespaces, s.Veth, s.Style}
		runs := real[k]
		row := NetnsPredictRow{Namespaces: s.Namespaces, Links: s.Links, Veth: s.Veth, LoUp: s.LoUp, Style: s.Style, Predicted: s}
		var ret, gone, done []int64
		var cleanups, counted int
		for _, t := range runs {
			ret = append(ret, t.ReturnedNS)
			if t.GoneNS != nil {
				gone = append(gone, *t.GoneNS)
			}
			if t.DoneNS != nil {
				done = append(done, *t.DoneNS)
			}
			if t.Batches != nil {
				cleanups += *t.Batches
				counted++
			}
		}
		row.MeasuredRuns = done
		row.MeasuredReturnedNS, row.MeasuredGoneNS, row.MeasuredDoneNS = Summarize(ret).Median, Summarize(gone).Median, Summarize(done).Median
		row.MeasuredCleanups = float64(cleanups) / float64(max(1, counted))
		rel := func(e, m int64) float64 {
			if m <= 0 {
				return 0
			}
			return float64(e-m) / float64(m)
		}
		row.Error, row.GoneError = rel(s.DoneNS, row.MeasuredDoneNS), rel(s.GoneNS, row.MeasuredGoneNS)
		if row.MeasuredDoneNS > 0 {
			pr.Compared++
		}
		if s.OK > 0 && row.MeasuredDoneNS > 0 && math.Abs(row.Error) <= NetnsPredictLimit {
			pr.Within++
		} else if row.MeasuredDoneNS == 0 {
			pr.Warnings = append(pr.Warnings, fmt.Sprintf("N=%d %s %s: the real cleanup's end was observed in no run: not compared", s.Namespaces, vethWord(s.Veth), s.Style))
		} else {
			pr.Warnings = append(pr.Warnings, fmt.Sprintf("N=%d %s %s: the cleanup-done prediction is off by %+.0f%% (more than %.0f%%)",
				s.Namespaces, vethWord(s.Veth), s.Style, 100*row.Error, 100*NetnsPredictLimit))
		}
		pr.Rows = append(pr.Rows, row)
	}
	return pr, nil
}

type netnsKey struct {
	n     int
	veth  bool
	style string
}

func vethWord(v bool) string {
	if v {
		return "with veth"
	}
	return "no veth"
}

// measureNetns runs every cell on the real kernel: the namespaces are named
// ndst-pPID-%d, their veth pairs' outer ends live in the throwaway
// namespace, and whatever a failed run left is deleted before returning.
func (p *NetnsPredictSpec) measureNetns(ctx context.Context) (map[netnsKey][]ndst.NetnsTimes, string, error) {
	nb, err := nlbackend.Open(ctx, p.Netlink)
	if err != nil {
		return nil, "", fmt.Errorf("netlink backend: %w", err)
	}
	tmpl, err := ndst.ParseNetnsTemplate(fmt.Sprintf("ndst-p%d-%%d", os.Getpid()))
	if err != nil {
		nb.Close()
		return nil, "", err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// Namespaces a failed or interrupted run left behind: ndst's own,
		// by its template, deleted without waiting for their cleanup.
		_, _ = nb.DropNamespaces(tmpl)
		nb.Close()
		_ = nlbackend.Reset(cctx, p.Netlink)
	}()
	if !nb.Created() {
		return nil, "", ndst.Usagef("network namespace %s already exists; predict needs a throwaway namespace of its own", p.Netlink.Netns)
	}
	out := map[netnsKey][]ndst.NetnsTimes{}
	kind := ""
	total, done := 0, 0
	for _, n := range p.Counts {
		total += n * len(p.Veth) * 2 * p.RealRuns
	}
	for _, n := range p.Counts {
		for _, veth := range p.Veth {
			for _, style := range []string{ndst.StyleAllAtOnce, ndst.StyleOneByOne} {
				for run := range p.RealRuns {
					p.Progress(fmt.Sprintf("real kernel: %d namespaces, %s, deleted %s (run %d of %d)", n, vethWord(veth), style, run+1, p.RealRuns))
					if p.Step != nil {
						p.Step(done, total)
					}
					done += n
					a, err := nb.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, Template: tmpl, Links: p.Links, Veth: veth, LoUp: p.LoUp})
					if err != nil {
						return nil, "", fmt.Errorf("real netns add %d: %w", n, err)
					}
					kind = a.Kind
					d, err := nb.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: n, Template: tmpl, OneByOne: style == ndst.StyleOneByOne})
					if err != nil {
						return nil, "", fmt.Errorf("real netns del of %d (%s): %w", n, style, err)
					}
					if d.Netns == nil {
						return nil, "", fmt.Errorf("real netns del of %d (%s): no times reported", n, style)
					}
					if d.Netns.DoneNS == nil || d.Netns.GoneNS == nil {
						// Kept: the times it has still count; the row says
						// what this run could not observe, and why.
						why := strings.Join(d.Notes, "; ")
						p.warn(fmt.Sprintf("N=%d %s %s, run %d: the devices' end or the cleanup's end was not observed (%s)", n, vethWord(veth), style, run+1, why))
					}
					out[netnsKey{n, veth, style}] = append(out[netnsKey{n, veth, style}], *d.Netns)
				}
			}
		}
	}
	return out, kind, nil
}

// WriteTable prints the comparison.
func (pr *NetnsPrediction) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "predict --netns: kernel %s against the emulated line %s (%s RCU, HZ=%d, %d CPUs, preempt %s), cost table %s\n",
		pr.Kernel, pr.Profile, pr.RCU, pr.HZ, pr.CPUs, pr.Preempt, pr.Costs)
	if len(pr.Rows) > 0 {
		r0 := pr.Rows[0]
		what := "lo"
		if r0.LoUp {
			what = "lo up"
		}
		if r0.Links > 0 {
			what += fmt.Sprintf(", %d %s links", r0.Links, pr.Kind)
		}
		fmt.Fprintf(&b, "each namespace: %s, and with veth one pair whose outer end is in ndst's namespace; real: median of %d run(s), emulated: median of %d seed(s)\n",
			what, len(r0.MeasuredRuns), r0.Predicted.Runs)
	}
	// One unit for each time, real and emulated alike.
	var ret, gone, done []float64
	for _, r := range pr.Rows {
		ret = append(ret, float64(r.MeasuredReturnedNS), float64(r.Predicted.ReturnedNS))
		gone = append(gone, float64(r.MeasuredGoneNS), float64(r.Predicted.GoneNS))
		done = append(done, float64(r.MeasuredDoneNS), float64(r.Predicted.DoneNS))
	}
	uR, uG, uD := columnUnit(ret), columnUnit(gone), columnUnit(done)
	tw := tabwriter.NewWriter(&b, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "N\tveth\tstyle\treturned (%s) real\temulated\tgone (%s) real\temulated\terror\tdone (%s) real\temulated\terror\tcleanup runs real\temulated\t\n", uR.name, uG.name, uD.name)
	for _, r := range pr.Rows {
		v := "no"
		if r.Veth {
			v = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", r.Namespaces, v, r.Style,
			uR.format(float64(r.MeasuredReturnedNS)), uR.format(float64(r.Predicted.ReturnedNS)),
			measured(uG, r.MeasuredGoneNS), uG.format(float64(r.Predicted.GoneNS)), errText(r.MeasuredGoneNS, r.GoneError),
			measured(uD, r.MeasuredDoneNS), uD.format(float64(r.Predicted.DoneNS)), errText(r.MeasuredDoneNS, r.Error),
			r.MeasuredCleanups, r.Predicted.CleanupRuns)
	}
	tw.Flush()
	fmt.Fprintf(&b, "within %.0f%% (cleanup done): %d of %d cells", 100*pr.Limit, pr.Within, pr.Compared)
	if nm := len(pr.Rows) - pr.Compared; nm > 0 {
		fmt.Fprintf(&b, " (%d not measured, n/a: not compared)", nm)
	}
	b.WriteString("\n")
	if len(pr.LoadAvg) == 2 {
		fmt.Fprintf(&b, "load average: %s before the real runs, %s after\n", pr.LoadAvg[0], pr.LoadAvg[1])
	}
	for _, wn := range pr.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// measured prints a real time in its column's unit, n/a where no run
// observed it.
func measured(u unit, ns int64) string {
	if ns <= 0 {
		return "n/a"
	}
	return u.format(float64(ns))
}

// errText prints a relative error, n/a where the real time is unknown.
func errText(m int64, e float64) string {
	if m <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*e)
}
