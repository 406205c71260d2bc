package bench

import (
	"context"
	"fmt"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
)

// The emulated side of a namespace prediction: for each N, without and with
// a veth pair, deleted all at once and one at a time, the three times of the
// delete (returned, devices gone, cleanup done) on the emulated kernel of
// the host's line, loaded with the host's calibration. The real side (the
// same cells on this host's kernel) is the netlink backend's.

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
}

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
