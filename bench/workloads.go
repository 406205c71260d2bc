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
)

// The workloads people run, predicted: every workload cell runs on the
// real kernel (netlink backend, in a throwaway namespace) and on the
// emulated kernel of the host's line loaded with the host's calibration,
// in one command, and each figure is compared: within WorkloadGate (20%),
// or WorkloadNetnsGate (25%) for namespace times. The calibration saw
// none of these cells: only plain devices, namespaces deleted at once,
// batched deletes of devices with addresses and of children, and
// namespace creates with a veth pair (calibrate/workloads.go).

// Gates of the workload cells.
const (
	WorkloadGate      = 0.20
	WorkloadNetnsGate = 0.25
)

// WorkloadSpec is a workload prediction.
type WorkloadSpec struct {
	// Costs is the host's calibration.
	Costs *costs.Table
	// Runs real runs and SimRuns emulated ones (seeds Seed..) per cell.
	Runs, SimRuns int
	Seed          uint64
	// Netlink configures the real backend; Netns is a throwaway namespace.
	Netlink nlbackend.Options
	// Devices is the size of the device cells (addresses, children);
	// Pods that of the namespace cells (CNI delete); Unshare and Parallel
	// the unshare cell; Rate and For the churn cell.
	Devices, Pods, Unshare, Parallel int
	Rate                             float64
	For                              time.Duration
	// Only, when set, runs only the workloads named ("addrs", "children",
	// "cni", "unshare", "churn").
	Only []string
	// Progress, when set, is told what runs.
	Progress func(what string)

	// realKind is the kind of the devices the real kernel made (its
	// default: dummy, or ifb where the kernel has no dummy): the emulated
	// runs, which follow the real ones, make theirs of the same kind.
	realKind string
}

// deviceKind is the kind a cell's devices are asked for: the backend's
// default on the real kernel, the real devices' kind on the emulated one.
func (s *WorkloadSpec) deviceKind(emulated bool) string {
	if emulated && s.realKind == "ifb" {
		return "ifb"
	}
	return ""
}

// addDevices adds a cell's devices, noting the real devices' kind.
func (s *WorkloadSpec) addDevices(ctx context.Context, b ndst.Backend, emulated bool, req ndst.AddRequest) error {
	req.Kind = s.deviceKind(emulated)
	res, err := b.Add(ctx, req)
	if err == nil && !emulated && res != nil && res.Kind != "" {
		s.realKind = res.Kind
	}
	return err
}

// WorkloadNames are the workloads a WorkloadSpec can run.
var WorkloadNames = []string{"addrs", "children", "cni", "unshare", "churn"}

// WorkloadRow is one figure of one cell: measured against predicted.
type WorkloadRow struct {
	Workload string `json:"workload"`
	Cell     string `json:"cell"`
	Figure   string `json:"figure"`
	// MeasuredNS and PredictedNS are medians over the runs (for a rate,
	// its value in thousandths in RateMilli, the NS fields 0).
	MeasuredNS  int64   `json:"measured_ns"`
	PredictedNS int64   `json:"predicted_ns"`
	Error       float64 `json:"relative_error"`
	Gate        float64 `json:"gate"`
	Within      bool    `json:"within"`
	// Note says what else the two sides agree or disagree on (a churn's
	// verdict).
	Note string `json:"note,omitempty"`
}

// WorkloadPrediction is the whole comparison.
type WorkloadPrediction struct {
	Kernel  string        `json:"kernel"`
	Line    string        `json:"line"`
	HZ      int           `json:"hz"`
	CPUs    int           `json:"cpus"`
	Costs   string        `json:"costs"`
	Rows    []WorkloadRow `json:"rows"`
	Within  int           `json:"within"`
	Notes   []string      `json:"notes,omitempty"`
	LoadAvg []string      `json:"loadavg,omitempty"`
	WallNS  int64         `json:"wall_ns"`
	// DeviceKind is the kind of the device cells' devices (the real
	// kernel's default, dummy or ifb), "" when no device cell ran.
	DeviceKind string `json:"device_kind,omitempty"`
}

// Check validates the spec and fills its defaults.
func (s *WorkloadSpec) Check() error {
	if s.Costs == nil || !calibrate.HasWorkloadCosts(s.Costs) || !calibrate.HasNetnsCosts(s.Costs) {
		return ndst.Usagef("the cost table has no workload or namespace calibration: run ndst calibrate -o FILE (without --no-workloads or --no-netns)")
	}
	if s.Devices == 0 {
		s.Devices = 100
	}
	if s.Pods == 0 {
		s.Pods = 100
	}
	if s.Unshare == 0 {
		s.Unshare = 1000
	}
	if s.Parallel == 0 {
		s.Parallel = 8
	}
	if s.Rate == 0 {
		s.Rate = 50
	}
	if s.For == 0 {
		s.For = 20 * time.Second
	}
	switch {
	case s.Devices < 1 || s.Devices > 4094 || s.Pods < 1 || s.Pods > 10000 || s.Unshare < 1 || s.Unshare > 100000:
		return ndst.Usagef("workload sizes out of range: devices 1..4094, pods 1..10000, unshare 1..100000")
	case s.Runs < 1 || s.Runs > 100 || s.SimRuns < 1 || s.SimRuns > 1000:
		return ndst.Usagef("--runs must be in 1..100 and --sim-runs in 1..1000")
	}
	for _, w := range s.Only {
		if !slices.Contains(WorkloadNames, w) {
			return ndst.Usagef("unknown workload %q (known: %s)", w, strings.Join(WorkloadNames, ", "))
		}
	}
	churn := ndst.PodChurnRequest{Rate: s.Rate, For: s.For}
	if err := churn.Normalize(); err != nil {
		return err
	}
	_, err := emuForHost(s.Costs, s.Seed)
	return err
}

func (s *WorkloadSpec) runs(w string) bool { return len(s.Only) == 0 || slices.Contains(s.Only, w) }

// workloadCell is one cell: how to run it on a backend, giving its
// figures by name.
type workloadCell struct {
	workload, cell string
	gates          map[string]float64
	order          []string
	run            func(ctx context.Context, b ndst.Backend, emulated bool) (map[string]int64, string, error)
}

// PredictWorkloads runs the cells on the emulated kernel, then on the real
// one, and compares them.
func PredictWorkloads(ctx context.Context, s *WorkloadSpec) (*WorkloadPrediction, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	start := time.Now()
	h := s.Costs.Host
	p := &WorkloadPrediction{Kernel: h.Kernel, Line: h.Profile, HZ: h.HZ, CPUs: h.CPUs, Costs: s.Costs.Source}
	cells := s.cells()
	nb, err := nlbackend.Open(ctx, s.Netlink)
	if err != nil {
		return nil, fmt.Errorf("netlink backend: %w", err)
	}
	defer func() {
		nb.Close()
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = nlbackend.Reset(rctx, s.Netlink)
	}()
	if !nb.Created() {
		return nil, ndst.Usagef("network namespace %s already exists; predict needs a throwaway namespace of its own", s.Netlink.Netns)
	}
	p.LoadAvg = append(p.LoadAvg, calibrate.LoadAvg())
cells:
	for _, c := range cells {
		var real, sim []map[string]int64
		var realNote, simNote string
		for range s.Runs {
			if s.Progress != nil {
				s.Progress(fmt.Sprintf("real kernel: %s, %s", c.workload, c.cell))
			}
			m, note, err := c.run(ctx, nb, false)
			if ndst.IsUsage(err) && len(real) == 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("%s (%s) not run: %v", c.workload, c.cell, err))
				continue cells
			}
			if err != nil {
				return nil, fmt.Errorf("real %s (%s): %w", c.workload, c.cell, err)
			}
			real, realNote = append(real, m), note
		}
		for i := range s.SimRuns {
			cfg, err := emuForHost(s.Costs, s.Seed+uint64(i))
			if err != nil {
				return nil, err
			}
			cfg.Ephemeral = true
			be, err := emu.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			if s.Progress != nil {
				s.Progress(fmt.Sprintf("emulated: %s, %s", c.workload, c.cell))
			}
			m, note, err := c.run(ctx, be, true)
			be.Close()
			if err != nil {
				return nil, fmt.Errorf("emulated %s (%s): %w", c.workload, c.cell, err)
			}
			sim, simNote = append(sim, m), note
		}
		for _, f := range c.order {
			r := WorkloadRow{Workload: c.workload, Cell: c.cell, Figure: f, Gate: c.gates[f],
				MeasuredNS: medianOf(real, f), PredictedNS: medianOf(sim, f)}
			if r.MeasuredNS > 0 {
				r.Error = float64(r.PredictedNS-r.MeasuredNS) / float64(r.MeasuredNS)
				r.Within = math.Abs(r.Error) <= r.Gate
			}
			if realNote != "" || simNote != "" {
				r.Note = fmt.Sprintf("real: %s; emulated: %s", realNote, simNote)
			}
			if r.Within {
				p.Within++
			}
			p.Rows = append(p.Rows, r)
		}
	}
	p.LoadAvg = append(p.LoadAvg, calibrate.LoadAvg())
	p.WallNS = int64(time.Since(start))
	p.DeviceKind = s.realKind
	return p, nil
}

func medianOf(ms []map[string]int64, f string) int64 {
	var xs []int64
	for _, m := range ms {
		if v, ok := m[f]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// cells are the spec's workload cells, in the order they run.
func (s *WorkloadSpec) cells() []workloadCell {
	var out []workloadCell
	g := WorkloadGate
	if s.runs("addrs") {
		for _, fwd := range []bool{false, true} {
			a := ndst.Addrs{Up: true, V6: 1, Forwarding6: fwd}
			name := "up, 1 IPv6 address"
			if fwd {
				name += ", forwarding"
			}
			out = append(out, workloadCell{workload: "addrs", cell: fmt.Sprintf("%d devices %s", s.Devices, name),
				gates: map[string]float64{"one by one, per device": g, "batched": g}, order: []string{"one by one, per device", "batched"},
				run: func(ctx context.Context, b ndst.Backend, emulated bool) (map[string]int64, string, error) {
					m := map[string]int64{}
					for _, oneByOne := range []bool{true, false} {
						if err := s.addDevices(ctx, b, emulated, ndst.AddRequest{Count: s.Devices, Addrs: a}); err != nil {
							return nil, "", err
						}
						d, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: oneByOne})
						if err != nil {
							return nil, "", err
						}
						if oneByOne {
							m["one by one, per device"] = timeOf(d) / int64(max(d.Count, 1))
						} else {
							m["batched"] = timeOf(d)
						}
					}
					return m, "", nil
				}})
		}
	}
	if s.runs("children") {
		for _, kind := range []string{ndst.KindMacvlan, ndst.KindVLAN} {
			figs := []string{"one by one, per device", "stream, per device", "batched", "lower device deleted"}
			gates := map[string]float64{}
			for _, f := range figs {
				gates[f] = g
			}
			out = append(out, workloadCell{workload: "children", cell: fmt.Sprintf("%d %ss on one device", s.Devices, kind), gates: gates, order: figs,
				run: func(ctx context.Context, b ndst.Backend, emulated bool) (map[string]int64, string, error) {
					m := map[string]int64{}
					for _, f := range figs {
						pt, _ := ndst.ParseTemplate("wlp%d")
						if err := s.addDevices(ctx, b, emulated, ndst.AddRequest{Count: 1, Template: pt}); err != nil {
							return nil, "", err
						}
						if _, err := b.Add(ctx, ndst.AddRequest{Count: s.Devices, Kind: kind, Parent: "wlp0"}); err != nil {
							return nil, "", err
						}
						list, err := b.List(ctx, ndst.ListRequest{})
						if err != nil {
							return nil, "", err
						}
						parent, lo, hi := 0, math.MaxInt32, 0
						for _, d := range list {
							switch {
							case d.Name == "wlp0":
								parent = d.Ifindex
							case d.Kind == kind:
								lo, hi = min(lo, d.Ifindex), max(hi, d.Ifindex)
							}
						}
						req := ndst.DelRequest{Start: lo, Stop: hi}
						switch f {
						case "one by one, per device":
							req.OneByOne = true
						case "stream, per device":
							req.Stream = true
						case "lower device deleted":
							req.Start, req.Stop = parent, parent
						}
						d, err := b.Del(ctx, req)
						if err != nil {
							return nil, "", err
						}
						v := timeOf(d)
						if req.OneByOne || req.Stream {
							v /= int64(max(d.Count, 1))
						}
						m[f] = v
						if _, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}); err != nil && !strings.Contains(err.Error(), "no device") {
							return nil, "", err
						}
					}
					return m, "", nil
				}})
		}
	}
	ng := WorkloadNetnsGate
	if s.runs("cni") {
		out = append(out, workloadCell{workload: "cni", cell: fmt.Sprintf("%d pods with lo up and a veth pair", s.Pods),
			gates: map[string]float64{"CNI DEL: returned": ng, "CNI DEL: done": ng, "namespace alone: done": ng},
			order: []string{"CNI DEL: returned", "CNI DEL: done", "namespace alone: done"},
			run: func(ctx context.Context, b ndst.Backend, emulated bool) (map[string]int64, string, error) {
				nb := b.(ndst.NetnsBackend)
				m := map[string]int64{}
				tmpl := ndst.MustNetnsTemplate("ndstwl%d")
				for _, cni := range []bool{true, false} {
					if _, err := nb.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: s.Pods, Template: tmpl, LoUp: true, Veth: true}); err != nil {
						return nil, "", err
					}
					d, err := nb.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: s.Pods, Template: tmpl, CNI: cni})
					if err != nil {
						return nil, "", err
					}
					if d.Netns == nil || d.Netns.DoneNS == nil {
						return nil, "", fmt.Errorf("the cleanup's end was not observed")
					}
					if cni {
						m["CNI DEL: returned"], m["CNI DEL: done"] = d.Netns.ReturnedNS, *d.Netns.DoneNS
					} else {
						m["namespace alone: done"] = *d.Netns.DoneNS
					}
				}
				return m, "", nil
			}})
	}
	if s.runs("unshare") {
		out = append(out, workloadCell{workload: "unshare", cell: fmt.Sprintf("%d namespaces by %d workers, lo up and a veth pair", s.Unshare, s.Parallel),
			gates: map[string]float64{"created": ng, "drained": ng}, order: []string{"created", "drained"},
			run: func(ctx context.Context, b ndst.Backend, emulated bool) (map[string]int64, string, error) {
				ub := b.(ndst.UnshareBackend)
				r, err := ub.Unshare(ctx, ndst.UnshareRequest{Count: s.Unshare, Parallel: s.Parallel, LoUp: true, Veth: true})
				if err != nil {
					return nil, "", err
				}
				u := r.Unshare
				m := map[string]int64{"created": u.CreatedNS}
				if u.DrainedNS != nil {
					m["drained"] = *u.DrainedNS
				}
				return m, fmt.Sprintf("%d cleanup runs, at most %d waiting", derefN(u.Batches), u.PeakWaiting), nil
			}})
	}
	if s.runs("churn") {
		out = append(out, workloadCell{workload: "churn", cell: fmt.Sprintf("%g pods a second for %v", s.Rate, s.For),
			gates: map[string]float64{"steady-state create, median": ng}, order: []string{"steady-state create, median"},
			run: func(ctx context.Context, b ndst.Backend, emulated bool) (map[string]int64, string, error) {
				cb := b.(ndst.PodChurnBackend)
				r, err := cb.PodChurn(ctx, ndst.PodChurnRequest{Rate: s.Rate, For: s.For})
				if err != nil {
					return nil, "", err
				}
				c := r.Churn
				m := map[string]int64{}
				if c.Create != nil {
					m["steady-state create, median"] = c.Create.MedianNS
				}
				verdict := "keeps up"
				if !c.Sustained() {
					verdict = "does not keep up"
				}
				return m, fmt.Sprintf("%s (slope %+.2f/s, %d waiting at most)", verdict, c.SlopePerSec, c.PeakWaiting), nil
			}})
	}
	return out
}

// timeOf is a result's time: virtual on the emulated kernel, else wall.
func timeOf(r *ndst.Result) int64 {
	if r.VirtualNS != nil {
		return *r.VirtualNS
	}
	return r.WallNS
}

func derefN(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// WriteTable prints the comparison.
func (p *WorkloadPrediction) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "workloads on kernel %s (line %s, HZ=%d, %d CPUs), emulated with %s\n", p.Kernel, p.Line, p.HZ, p.CPUs, p.Costs)
	if p.DeviceKind != "" {
		fmt.Fprintf(w, "devices: %s (the real kernel's default kind; the emulated devices are of the same kind)\n", p.DeviceKind)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tcell\tfigure\tmeasured\tpredicted\terror\tgate")
	for _, r := range p.Rows {
		mark := ""
		if !r.Within {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.1f%%%s\t%.0f%%\n", r.Workload, r.Cell, r.Figure,
			FormatDuration(float64(r.MeasuredNS)), FormatDuration(float64(r.PredictedNS)), 100*r.Error, mark, 100*r.Gate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range p.Rows {
		if k := r.Workload + r.Cell; r.Note != "" && !seen[k] {
			seen[k] = true
			fmt.Fprintf(w, "%s (%s): %s\n", r.Workload, r.Cell, r.Note)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "%d of %d figures within their gate (* beyond it); wall %s", p.Within, len(p.Rows), FormatDuration(float64(p.WallNS)))
	if len(p.LoadAvg) == 2 {
		fmt.Fprintf(w, "; load average %s before, %s after", p.LoadAvg[0], p.LoadAvg[1])
	}
	fmt.Fprintln(w)
	return nil
}
