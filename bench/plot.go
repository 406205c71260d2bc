package bench

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
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

// series is one line of the plot: the cells that differ only in N.
type series struct {
	label string
	pts   plotter.XYs
}

// plotSeries groups the completed records by everything but N, in the
// order of first appearance, each line's points ordered by N.
func plotSeries(rs []Record) []series {
	idx, _ := varying(rs)
	var out []series
	pos := map[Cell]int{}
	for _, r := range rs {
		if r.OK == 0 {
			continue
		}
		k := r.Cell
		k.Count = 0
		i, ok := pos[k]
		if !ok {
			var parts []string
			for _, d := range idx {
				if dims[d].name != "N" {
					parts = append(parts, dims[d].get(r.Cell))
				}
			}
			label := strings.Join(parts, " ")
			if label == "" {
				label = r.Batch
			}
			i = len(out)
			pos[k] = i
			out = append(out, series{label: label})
		}
		out[i].pts = append(out[i].pts, plotter.XY{X: float64(r.Count), Y: r.PerDeviceNS / 1e6})
	}
	for i := range out {
		slices.SortFunc(out[i].pts, func(a, b plotter.XY) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
	}
	return out
}

// SavePlot draws the teardown time per device against N, one line per
// combination of the other dimensions, and writes it to path (.svg or
// .png). Axes are logarithmic when their values span more than a factor of
// ten. Cells without a completed run are left out (and named in the title).
func (rep *Report) SavePlot(path string) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	ss := plotSeries(rep.Results)
	if len(ss) == 0 {
		return fmt.Errorf("plot %s: no cell completed a run; nothing to draw", path)
	}
	p := plot.New()
	clock := "virtual"
	for _, r := range rep.Results {
		if r.Backend == "netlink" {
			clock = "wall"
			if slices.Contains(rep.Matrix.Backends, "sim") {
				clock = "virtual (sim) / wall (netlink)"
			}
			break
		}
	}
	_, fixed := varying(rep.Results)
	p.Title.Text = "ndst bench: teardown time per device"
	if len(fixed) > 0 {
		p.Title.Text += "\n" + strings.Join(fixed, ", ")
	}
	if rep.Matrix.CostsFrom != "" {
		p.Title.Text += "\ncosts " + rep.Matrix.CostsFrom
	}
	if n := rep.livelocked(); n > 0 {
		p.Title.Text += fmt.Sprintf("\n(%d livelocked cell(s) not drawn)", n)
	}
	p.X.Label.Text = "N (devices deleted)"
	p.Y.Label.Text = "time per device, ms (" + clock + ")"
	var xs, ys []float64
	for _, s := range ss {
		for _, pt := range s.pts {
			xs, ys = append(xs, pt.X), append(ys, pt.Y)
		}
	}
	setAxis(&p.X, xs, 0)
	// Room for the legend: about one line per series in a 5-inch plot.
	setAxis(&p.Y, ys, 0)
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	for i, s := range ss {
		l, sc, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		c := plotutil.Color(i)
		l.Color = c
		l.Dashes = plotutil.Dashes(i / 7)
		sc.Color = c
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		leg.Add(s.label, legendThumb{l, sc})
	}
	leg.Left = true
	leg.Top = true
	return saveWithLegend(p, &leg, 9*vg.Inch, 5*vg.Inch, path)
}

// saveWithLegend draws p with the legend to its right, outside the data
// area, and writes it to path as SVG or PNG.
func saveWithLegend(p *plot.Plot, leg *plot.Legend, w, h vg.Length, path string) error {
	var (
		cv interface {
			vg.CanvasSizer
		}
		write func(io.Writer) error
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c := vgsvg.New(w, h)
		cv, write = c, func(f io.Writer) error { _, err := c.WriteTo(f); return err }
	default:
		c := vgimg.New(w, h)
		cv, write = c, func(f io.Writer) error { _, err := vgimg.PngCanvas{Canvas: c}.WriteTo(f); return err }
	}
	dc := draw.New(cv)
	lw := leg.Rectangle(dc).Size().X + 12
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	lc := draw.Crop(dc, w-lw+6, 0, 0, -vg.Length(40))
	leg.Draw(lc)
	return WriteFile(path, write)
}

func (rep *Report) livelocked() int {
	n := 0
	for _, r := range rep.Results {
		if r.OK == 0 {
			n++
		}
	}
	return n
}

// setAxis picks a log scale when vs spans more than a decade (and is
// positive), and pads an axis with a single value. headroom is the fraction
// of the axis kept free above the data (for the legend).
func setAxis(a *plot.Axis, vs []float64, headroom float64) {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo > 0 && hi/lo > 10 {
		a.Scale = plot.LogScale{}
		a.Tick.Marker = logTicks{}
		a.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		a.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
		if headroom > 0 {
			// Keep the top fraction of the (logarithmic) axis free.
			need := math.Pow(hi/a.Min, 1/(1-headroom)) * a.Min
			a.Max = math.Max(a.Max, need)
		}
		return
	}
	if lo == hi {
		pad := math.Max(math.Abs(lo)*0.5, 1)
		if lo > 0 && lo-pad <= 0 {
			pad = lo / 2
		}
		lo, hi = lo-pad, hi+pad
	} else {
		lo = math.Min(0, lo)
	}
	a.Min, a.Max = lo, hi+(hi-lo)*headroom/(1-headroom)
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

// legendThumb draws a line with its glyph in the legend.
type legendThumb struct {
	l  *plotter.Line
	sc *plotter.Scatter
}

func (t legendThumb) Thumbnail(c *draw.Canvas) {
	t.l.Thumbnail(c)
	t.sc.Thumbnail(c)
}
