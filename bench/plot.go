package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotFormats are the file extensions SavePlot writes.
var PlotFormats = []string{".svg", ".png"}

// CheckPlotPath reports whether path names a format SavePlot can write.
func CheckPlotPath(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if !slices.Contains(PlotFormats, ext) {
		return fmt.Errorf("plot file %q: want a name ending in .svg or .png", path)
	}
	return nil
}

// The chart is chosen from the matrix:
//   - one N: bars, one per series, labelled with their value;
//   - several N: lines of the time per device over N;
//   - when another dimension than the strategy varies (CPUs, batch mode,
//     profile, ...), one panel per value of it ("small multiples"), all on
//     the same axes, with one legend for all of them.
//
// The series are told apart by the strategy when it varies, otherwise by
// the first varying dimension. Lines that coincide everywhere are drawn once,
// labelled with all their names, so none hides another unnoticed; each series
// has its own colour and marker.

// maxPanels is the largest grid of small multiples; beyond it the panel
// dimensions are folded into the series labels instead.
const maxPanels = 12

// seriesOrder is the order in which a dimension is chosen to tell series
// apart when the strategy does not vary.
var seriesOrder = []string{"batch", "CPUs", "preempt", "HZ", "profile", "backend"}

// chart is the plan of a plot.
type chart struct {
	bars      bool
	seriesDim []int // dims whose values name a series
	panelDim  []int // dims whose values name a panel
	series    []chartSeries
	panels    []chartPanel
	unit      timeUnit
	livelocks int  // cells without a completed run
	na        int  // cells the line cannot run (n/a): marked, not drawn
	netns     bool // namespace cells: N counts namespaces
}

type chartSeries struct {
	label string
	names []string // the series merged into this one (identical everywhere)
	key   string
}

type chartPanel struct {
	title string
	key   string
	// pts[s] are series s's points (X: N; Y: time per device in unit);
	// failed[s] the Ns where no run of series s completed, and why
	// ("livelock" or "error").
	pts     []plotter.XYs
	failed  [][]float64
	failWhy []string
}

// has reports whether series s has a cell in the panel.
func (p chartPanel) has(s int) bool { return len(p.pts[s]) > 0 || len(p.failed[s]) > 0 }

func dimIndex(name string) int {
	for i, d := range dims {
		if d.name == name {
			return i
		}
	}
	return -1
}

// distinct returns the values dim d takes among rs, in order of appearance.
func distinct(rs []Record, d int) []string {
	var vs []string
	for _, r := range rs {
		if v := dims[d].get(r.Cell); !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return vs
}

// label names a cell's values of dims ds, each with its dimension when
// more than the strategy is shown ("tick", "2 CPUs, one-by-one").
func label(c Cell, ds []int) string {
	var parts []string
	for _, d := range ds {
		v := dims[d].get(c)
		switch dims[d].name {
		case "strategy":
			if v == "-" { // a real-kernel cell has no strategy of ndst's
				v = "real kernel"
			}
			parts = append(parts, v)
		case "batch", "backend":
			parts = append(parts, v)
		case "CPUs":
			if v == "1" {
				parts = append(parts, "1 CPU")
			} else {
				parts = append(parts, v+" CPUs")
			}
		case "HZ":
			parts = append(parts, "HZ="+v)
		case "preempt":
			parts = append(parts, "preempt "+v)
		case "profile":
			parts = append(parts, "profile "+v)
		default:
			parts = append(parts, dims[d].name+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// planChart chooses the chart for rs.
func planChart(rs []Record) chart {
	var ch chart
	nDim, stDim := dimIndex("N"), dimIndex("strategy")
	ch.bars = len(distinct(rs, nDim)) == 1
	var vary []int
	for i := range dims {
		if i != nDim && len(distinct(rs, i)) > 1 {
			vary = append(vary, i)
		}
	}
	prDim := dimIndex("profile")
	var simRs []Record
	for _, r := range rs {
		if r.Backend == "sim" {
			simRs = append(simRs, r)
		}
	}
	switch {
	case len(distinct(simRs, prDim)) > 1:
		// Kernels are compared on one axis: the profile always names a
		// series, with the strategy when both fit in the palette.
		ch.seriesDim = []int{prDim}
		if slices.Contains(vary, stDim) && len(distinct(rs, prDim))*len(distinct(rs, stDim)) <= len(palette) {
			ch.seriesDim = []int{stDim, prDim}
		}
	case slices.Contains(vary, stDim):
		ch.seriesDim = []int{stDim}
	default:
		for _, name := range seriesOrder {
			if d := dimIndex(name); slices.Contains(vary, d) {
				ch.seriesDim = []int{d}
				break
			}
		}
	}
	for _, d := range vary {
		if !slices.Contains(ch.seriesDim, d) {
			ch.panelDim = append(ch.panelDim, d)
		}
	}
	if countKeys(rs, ch.panelDim) > maxPanels {
		ch.seriesDim = append(ch.seriesDim, ch.panelDim...)
		ch.panelDim = nil
	}

	// Series and panels in order of first appearance.
	sIdx, pIdx := map[string]int{}, map[string]int{}
	for _, r := range rs {
		sk, pk := keyOf(r.Cell, ch.seriesDim), keyOf(r.Cell, ch.panelDim)
		if _, ok := sIdx[sk]; !ok {
			sIdx[sk] = len(ch.series)
			l := label(r.Cell, ch.seriesDim)
			if l == "" {
				l = r.Batch
			}
			if ranUnbatched(r) && slices.Contains(ch.seriesDim, prDim) && slices.Contains(ch.seriesDim, dimIndex("batch")) {
				l += " (one by one: no batched unregister)"
			}
			ch.series = append(ch.series, chartSeries{label: l, names: []string{l}, key: sk})
		}
		if _, ok := pIdx[pk]; !ok {
			pIdx[pk] = len(ch.panels)
			ch.panels = append(ch.panels, chartPanel{title: label(r.Cell, ch.panelDim), key: pk})
		}
	}
	// A "batched" panel holding lines that delete one by one says which.
	if slices.Contains(ch.panelDim, dimIndex("batch")) {
		unb := map[string][]string{}
		for _, r := range rs {
			if pk := keyOf(r.Cell, ch.panelDim); ranUnbatched(r) && !slices.Contains(unb[pk], r.Profile) {
				unb[pk] = append(unb[pk], r.Profile)
			}
		}
		for i, pn := range ch.panels {
			if ps := unb[pn.key]; len(ps) > 0 {
				ch.panels[i].title += fmt.Sprintf(" (one by one on %s: no batched unregister)", strings.Join(ps, ", "))
			}
		}
	}
	var ys []float64
	for i := range ch.panels {
		ch.panels[i].pts = make([]plotter.XYs, len(ch.series))
		ch.panels[i].failed = make([][]float64, len(ch.series))
		ch.panels[i].failWhy = make([]string, len(ch.series))
	}
	for _, r := range rs {
		p, s := &ch.panels[pIdx[keyOf(r.Cell, ch.panelDim)]], sIdx[keyOf(r.Cell, ch.seriesDim)]
		if r.NotApplicable != "" {
			// The line lacks what the cell needs: marked, not drawn.
			p.failed[s] = append(p.failed[s], float64(r.Count))
			p.failWhy[s] = "n/a"
			ch.na++
			continue
		}
		if r.OK == 0 {
			p.failed[s] = append(p.failed[s], float64(r.Count))
			p.failWhy[s] = "error"
			if r.Livelocks > 0 {
				p.failWhy[s] = "livelock"
			}
			ch.livelocks++
			continue
		}
		p.pts[s] = append(p.pts[s], plotter.XY{X: float64(r.Count), Y: r.PerDeviceNS})
		ys = append(ys, r.PerDeviceNS)
	}
	for i := range ch.panels {
		for s := range ch.series {
			slices.SortFunc(ch.panels[i].pts[s], func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		}
	}
	ch.unit = unitFor(ys)
	for i := range ch.panels {
		for s := range ch.series {
			for j := range ch.panels[i].pts[s] {
				ch.panels[i].pts[s][j].Y /= ch.unit.ns
			}
		}
	}
	if !ch.bars { // bars never hide each other
		ch.mergeIdentical()
	}
	return ch
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func keyOf(c Cell, ds []int) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(dims[d].get(c))
		b.WriteByte(0)
	}
	return b.String()
}

func countKeys(rs []Record, ds []int) int {
	m := map[string]bool{}
	for _, r := range rs {
		m[keyOf(r.Cell, ds)] = true
	}
	return len(m)
}

// coincide is how close two series must be everywhere (relative) to be
// drawn as one: closer than a marker's width on any axis this draws.
const coincide = 2e-3

// mergeIdentical draws series that coincide in every panel once: they fail
// at the same Ns and their points are equal (or within coincide, then the
// label says "≈").
func (ch *chart) mergeIdentical() {
	// same reports 0 for different, 1 for equal, 2 for within coincide.
	same := func(a, b int) int {
		res := 1
		for _, p := range ch.panels {
			if !slices.Equal(p.failed[a], p.failed[b]) || len(p.pts[a]) != len(p.pts[b]) {
				return 0
			}
			for i := range p.pts[a] {
				x, y := p.pts[a][i], p.pts[b][i]
				d := math.Abs(x.Y-y.Y) / math.Max(math.Abs(x.Y), math.Abs(y.Y))
				switch {
				case x.X != y.X || d > coincide:
					return 0
				case d > 1e-9:
					res = 2
				}
			}
		}
		return res
	}
	var keep []int
	approx := map[int]bool{}
	for s := range ch.series {
		merged := false
		for _, k := range keep {
			if m := same(k, s); m > 0 {
				ch.series[k].names = append(ch.series[k].names, ch.series[s].label)
				approx[k] = approx[k] || m == 2
				merged = true
				break
			}
		}
		if !merged {
			keep = append(keep, s)
		}
	}
	if len(keep) == len(ch.series) {
		return
	}
	series := make([]chartSeries, len(keep))
	for i, k := range keep {
		series[i] = ch.series[k]
		if n := series[i].names; len(n) > 1 {
			sep, what := " = ", "are identical"
			if approx[k] {
				sep, what = " ≈ ", fmt.Sprintf("differ by < %.1f%%", 100*coincide)
			}
			series[i].label = strings.Join(n, sep)
			if len(n) > 3 {
				series[i].label = fmt.Sprintf("%s (these %d %s)", strings.Join(n, ", "), len(n), what)
			}
		}
	}
	for pi := range ch.panels {
		p := &ch.panels[pi]
		pts, failed, why := make([]plotter.XYs, len(keep)), make([][]float64, len(keep)), make([]string, len(keep))
		for i, k := range keep {
			pts[i], failed[i], why[i] = p.pts[k], p.failed[k], p.failWhy[k]
		}
		p.pts, p.failed, p.failWhy = pts, failed, why
	}
	ch.series = series
}

// timeUnit is the unit the y axis is drawn in.
type timeUnit struct {
	name string
	ns   float64
}

func unitFor(ys []float64) timeUnit {
	hi := 0.0
	for _, y := range ys {
		hi = math.Max(hi, y)
	}
	switch {
	case hi >= 1e9:
		return timeUnit{"s", 1e9}
	case hi >= 1e6:
		return timeUnit{"ms", 1e6}
	case hi >= 1e3:
		return timeUnit{"µs", 1e3}
	}
	return timeUnit{"ns", 1}
}

// palette is ten colours told apart easily (Tableau 10), then dashed lines.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff}, {0x79, 0x70, 0x6e, 0xff},
}

// glyphs are outlined where they can be, so that markers drawn on top of
// each other stay visible.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
	draw.PyramidGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{},
}

func seriesColor(i int) color.RGBA { return palette[i%len(palette)] }

func seriesStyle(i int) (draw.LineStyle, draw.GlyphStyle) {
	ls := draw.LineStyle{Color: seriesColor(i), Width: vg.Points(1.6)}
	if i >= len(palette) {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return ls, draw.GlyphStyle{Color: seriesColor(i), Radius: vg.Points(3.5), Shape: glyphs[i%len(glyphs)]}
}

// SavePlot draws the report (see the chart rules above) and writes it to
// path, as SVG or PNG. Axes are logarithmic when their values span a factor
// of ten or more. Cells without a completed run are marked, never drawn as
// a value.
func (rep *Report) SavePlot(path string) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	ch := planChart(rep.Results)
	ch.netns = rep.unitName() == "namespace"
	if ch.livelocks+ch.na == len(rep.Results) {
		return fmt.Errorf("plot %s: no cell completed a run; nothing to draw", path)
	}
	title := rep.plotTitle(ch)
	cols := min(len(ch.panels), 3)
	if len(ch.panels) == 4 {
		cols = 2
	}
	rows := (len(ch.panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
	}
	ylo, yhi := ch.yRange()
	for i := range ch.panels {
		p, err := ch.panelPlot(i, ylo, yhi)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		plots[i/cols][i%cols] = p
	}

	panelW, panelH := 4.3*vg.Inch, 3.3*vg.Inch
	if len(ch.panels) == 1 {
		panelW, panelH = 7.5*vg.Inch, 4.6*vg.Inch
	}
	leg, legW := ch.legend()
	titleH := vg.Length(len(title))*15 + 14
	w := vg.Length(cols)*panelW + legW
	h := vg.Length(rows)*panelH + titleH + 10
	const yLabelW = 22
	w += yLabelW
	yLabel := fmt.Sprintf("time per %s (%s, %s)", rep.unitName(), ch.unit.name, rep.clock())
	if logScale(ylo, yhi) {
		yLabel += ", log scale"
	}
	return writeCanvas(path, w, h, func(dc draw.Canvas) {
		drawTitle(dc, title)
		grid := draw.Crop(dc, yLabelW+4, -legW, 4, -titleH)
		sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(12)),
			Rotation: math.Pi / 2, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
		dc.FillText(sty, vg.Point{X: dc.Min.X + 4, Y: (grid.Min.Y + grid.Max.Y) / 2}, yLabel)
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 14, PadY: 14, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 4}
		canvases := plot.Align(plots, tiles, grid)
		for r := range plots {
			for c := range plots[r] {
				if plots[r][c] != nil {
					plots[r][c].Draw(canvases[r][c])
				}
			}
		}
		if leg != nil {
			lc := draw.Crop(dc, w-legW+8, 0, 0, -titleH-12)
			leg.Draw(lc)
		}
	})
}

// unitName is what N counts: devices, or namespaces for namespace cells.
func (rep *Report) unitName() string {
	if len(rep.Results) > 0 && rep.Results[0].NetnsCell() {
		return "namespace"
	}
	return "device"
}

func (rep *Report) clock() string {
	var sim, real bool
	for _, r := range rep.Results {
		if r.Backend == "netlink" {
			real = true
		} else {
			sim = true
		}
	}
	switch {
	case sim && real:
		return "virtual (sim) / wall (netlink)"
	case real:
		return "wall clock"
	}
	return "virtual"
}

// plotTitle is what the chart shows and what it holds fixed.
func (rep *Report) plotTitle(ch chart) []string {
	n := distinct(rep.Results, dimIndex("N"))
	lines := []string{"ndst bench: time per device to delete N devices just added"}
	if ch.bars {
		lines[0] = fmt.Sprintf("ndst bench: time per device to delete N=%s devices just added", n[0])
	}
	if rep.unitName() == "namespace" {
		lines[0] = "ndst bench: time per namespace until the cleanup of N namespaces is done"
		if ch.bars {
			lines[0] = fmt.Sprintf("ndst bench: time per namespace until the cleanup of N=%s namespaces is done", n[0])
		}
	}
	_, fixed := varying(rep.Results)
	var unbatched []string
	for _, r := range rep.Results {
		if ranUnbatched(r) && !slices.Contains(unbatched, r.Profile) {
			unbatched = append(unbatched, r.Profile)
		}
	}
	var keep []string
	for _, f := range fixed {
		switch {
		case strings.HasPrefix(f, "N="):
		case f == "batched" && len(unbatched) > 0:
			keep = append(keep, fmt.Sprintf("batched (one by one on %s, which has no batched unregister)", strings.Join(unbatched, ", ")))
		default:
			keep = append(keep, f)
		}
	}
	sub := strings.Join(keep, ", ")
	if rep.Matrix.CostsFrom != "" {
		sub += "; cost table " + rep.Matrix.CostsFrom
	}
	if rep.Matrix.Runs > 1 {
		sub += fmt.Sprintf("; mean of %d runs", rep.Matrix.Runs)
	}
	lines = append(lines, strings.TrimPrefix(sub, "; "))
	if ch.livelocks > 0 {
		lines = append(lines, fmt.Sprintf("%d cell(s) without a completed run (livelock or error) are marked ×, not drawn", ch.livelocks))
	}
	if ch.na > 0 {
		lines = append(lines, fmt.Sprintf("%d cell(s) their kernel line cannot run (n/a: %s) are marked ×, not drawn", ch.na, naWhat(rep.Results)))
	}
	return lines
}

// ranUnbatched reports a cell asked to delete as one batch on a line that
// deletes one by one (no unregister_netdevice_many before 2.6.33).
func ranUnbatched(r Record) bool {
	return r.Backend == "sim" && r.Batch == "batched" && !r.Batched && r.Runs > 0 && r.NotApplicable == ""
}

// naWhat names the n/a cells compactly: "expedited on 2.6.31".
func naWhat(rs []Record) string {
	var out []string
	for _, r := range rs {
		if r.NotApplicable == "" {
			continue
		}
		w := r.Strategy + " on " + r.Profile
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}

// yRange is the range of every panel's y axis, so that panels compare.
func (ch *chart) yRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range ch.panels {
		for _, pts := range p.pts {
			for _, pt := range pts {
				lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
			}
		}
	}
	return lo, hi
}

// logScale reports whether values from lo to hi are drawn on a log axis.
func logScale(lo, hi float64) bool { return lo > 0 && hi/lo >= 10 }

// panelPlot draws panel i. Its y axis has no label of its own: one label
// at the left of the figure serves every panel (a label on a logarithmic
// axis would also be misplaced by the plot library).
func (ch *chart) panelPlot(i int, ylo, yhi float64) (*plot.Plot, error) {
	pn := ch.panels[i]
	p := plot.New()
	p.Title.Text = pn.title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	setAxis(&p.Y, ylo, yhi, ch.bars)
	if ch.bars {
		return p, ch.addBars(p, pn)
	}
	p.X.Label.Text = "N (devices deleted)"
	if ch.netns {
		p.X.Label.Text = "N (namespaces deleted)"
	}
	var xs []float64
	for _, pts := range pn.pts {
		for _, pt := range pts {
			xs = append(xs, pt.X)
		}
	}
	for _, f := range pn.failed {
		xs = append(xs, f...)
	}
	setAxis(&p.X, slices.Min(xs), slices.Max(xs), false)
	if logScale(p.X.Min, p.X.Max) { // keep the first and last markers off the frame
		p.X.Min, p.X.Max = slices.Min(xs)/1.5, slices.Max(xs)*1.5
	}
	p.Add(plotter.NewGrid())
	for s, pts := range pn.pts {
		ls, gs := seriesStyle(s)
		if len(pts) > 0 {
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			l.LineStyle, sc.GlyphStyle = ls, gs
			p.Add(l, sc)
		}
		if len(pn.failed[s]) > 0 {
			p.Add(&failMarks{xs: pn.failed[s], color: seriesColor(s)})
		}
	}
	return p, nil
}

// addBars draws one bar per series, its value above it.
func (ch *chart) addBars(p *plot.Plot, pn chartPanel) error {
	var names []string
	b := &barSet{}
	for s := range ch.series {
		if !pn.has(s) { // a bar only for the cells this panel has
			continue
		}
		names = append(names, ch.series[s].label)
		v, txt := math.NaN(), pn.failWhy[s]
		if len(pn.pts[s]) > 0 {
			v, txt = pn.pts[s][0].Y, FormatDuration(pn.pts[s][0].Y*ch.unit.ns)
		}
		b.vals = append(b.vals, v)
		b.colors = append(b.colors, seriesColor(s))
		b.texts = append(b.texts, txt)
	}
	p.Add(plotter.NewGrid())
	p.Add(b)
	for i := range names {
		names[i] = wrap(names[i], 16)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.X.Tick.Label.Font.Size = vg.Points(9)
	return nil
}

// legend is shared by all panels; bars need none (their names are on the
// axis). It returns the legend and the width it needs.
func (ch *chart) legend() (*plot.Legend, vg.Length) {
	if ch.bars || len(ch.series) < 2 && len(ch.series[0].names) < 2 {
		return nil, 0
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(10)
	leg.ThumbnailWidth = vg.Points(24)
	leg.Padding = vg.Points(5)
	var head []string
	for _, d := range ch.seriesDim {
		head = append(head, dims[d].name)
	}
	header := strings.Join(head, ", ") + ":"
	leg.Add(header)
	width := leg.TextStyle.Width(header)
	for s, se := range ch.series {
		ls, gs := seriesStyle(s)
		l := wrap(se.label, 32)
		leg.Add(l, lineThumb{ls}, glyphThumb{gs})
		width = max(width, leg.TextStyle.Width(l))
	}
	return &leg, width + leg.ThumbnailWidth + 28
}

// setAxis sets an axis from lo to hi: logarithmic over more than a decade
// (every power of ten labelled), otherwise linear from 0 (always for bars,
// which are read by their length) with a little headroom.
func setAxis(a *plot.Axis, lo, hi float64, fromZero bool) {
	if logScale(lo, hi) {
		a.Scale = plot.LogScale{}
		a.Tick.Marker = logTicks{}
		a.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		a.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
		if fromZero && a.Max/hi < 1.5 {
			a.Max *= 2 // room for the bars' labels
		}
		return
	}
	if lo == hi {
		pad := math.Max(math.Abs(lo)*0.5, 1)
		a.Min, a.Max = math.Max(0, lo-pad), hi+pad
		return
	}
	if fromZero || lo >= 0 {
		lo = 0
	}
	a.Min, a.Max = lo, hi+(hi-lo)*0.12
}

// logTicks labels every power of ten of a logarithmic axis, and 2 and 5
// times it when the axis spans at most two decades. (plot.LogTicks drops
// the labels below 1.)
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	first := int(math.Floor(math.Log10(lo)))
	last := int(math.Ceil(math.Log10(hi)))
	dense := last-first <= 2
	var ts []plot.Tick
	for e := first; e <= last; e++ {
		p := math.Pow10(e)
		for i := 1; i < 10; i++ {
			v := p * float64(i)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || dense && (i == 2 || i == 5) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// barSet draws bars from the bottom of the y axis (which may be
// logarithmic) to each value, with the value written above; a missing value
// (NaN) is written in place of its bar.
type barSet struct {
	vals   []float64
	colors []color.RGBA
	texts  []string
}

func (b *barSet) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(9)),
		XAlign: draw.XCenter, Handler: plot.DefaultTextHandler}
	for i, v := range b.vals {
		x0, x1 := trX(float64(i)-0.36), trX(float64(i)+0.36)
		base := trY(p.Y.Min)
		top := base
		if !math.IsNaN(v) {
			top = trY(v)
			c.FillPolygon(b.colors[i], []vg.Point{{X: x0, Y: base}, {X: x1, Y: base}, {X: x1, Y: top}, {X: x0, Y: top}})
		}
		c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: top + 3}, b.texts[i])
	}
}

func (b *barSet) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, v := range b.vals {
		if !math.IsNaN(v) {
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	return -0.5, float64(len(b.vals)) - 0.5, ymin, ymax
}

// failMarks marks the Ns at which a series has no completed run: a cross at
// the bottom of the panel, in the series' colour.
type failMarks struct {
	xs    []float64
	color color.RGBA
}

func (f *failMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.GlyphStyle{Color: f.color, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
	for _, x := range f.xs {
		c.DrawGlyph(sty, vg.Point{X: trX(x), Y: trY(p.Y.Min) + 6})
	}
}

type lineThumb struct{ ls draw.LineStyle }

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.ls, c.Min.X, y, c.Max.X, y)
}

type glyphThumb struct{ gs draw.GlyphStyle }

func (t glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyphNoClip(t.gs, c.Center()) }

// drawTitle writes the title lines centred at the top of dc, the first
// larger.
func drawTitle(dc draw.Canvas, lines []string) {
	y := dc.Max.Y - 16
	for i, l := range lines {
		size := vg.Points(10)
		if i == 0 {
			size = vg.Points(13)
		}
		sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, size), XAlign: draw.XCenter,
			Handler: plot.DefaultTextHandler}
		dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: y}, l)
		y -= 15
	}
}

// writeCanvas draws on a w×h canvas and writes it to path as SVG or PNG.
func writeCanvas(path string, w, h vg.Length, drawFn func(draw.Canvas)) error {
	var (
		cv    vg.CanvasSizer
		write func(io.Writer) error
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c := vgsvg.New(w, h)
		cv, write = c, func(f io.Writer) error { _, err := c.WriteTo(f); return err }
	default:
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))
		cv, write = c, func(f io.Writer) error { _, err := vgimg.PngCanvas{Canvas: c}.WriteTo(f); return err }
	}
	drawFn(draw.New(cv))
	return WriteFile(path, write)
}

// wrap breaks a label into lines of about width bytes at spaces.
func wrap(s string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
