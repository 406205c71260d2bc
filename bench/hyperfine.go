package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/ndst"
)

// The habits of hyperfine for real-kernel cells, whose runs are wall time
// on a machine doing other things: warm-up runs that are not measured
// (Spec.Warmup), a warning when runs are statistical outliers, and a
// summary line saying how many times faster the fastest cell of each N ran
// than the others.

// outlierZ is the modified z-score above which a run is an outlier: hyperfine's
// threshold (Iglewicz and Hoaglin's 3.5, on the median absolute deviation).
const outlierZ = 3.5

// outliers returns the completed runs' delete times whose modified z-score
// exceeds outlierZ, and the median they stray from (none with fewer than
// three runs, or when half the runs or more have the same time).
func outliers(smp []Sample) ([]int64, int64) {
	var xs []float64
	for _, x := range smp {
		if x.Result == ndst.ResultOK {
			xs = append(xs, float64(x.DelNS))
		}
	}
	if len(xs) < 3 {
		return nil, 0
	}
	med := median64(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	mad := median64(dev)
	if mad == 0 {
		return nil, int64(med)
	}
	var out []int64
	for _, x := range xs {
		if math.Abs(0.6745*(x-med)/mad) > outlierZ {
			out = append(out, int64(x))
		}
	}
	return out, int64(med)
}

func median64(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// outlierWarning is the warning of a real-kernel cell with outliers, "" for
// none.
func outlierWarning(r *Record, smp []Sample) string {
	if r.Backend != "netlink" {
		return ""
	}
	out, med := outliers(smp)
	if len(out) == 0 {
		return ""
	}
	var ts []string
	for _, x := range out {
		ts = append(ts, FormatDuration(float64(x)))
	}
	r.Outliers = len(out)
	return fmt.Sprintf("%s: %d of %d runs are statistical outliers (%s against a median of %s; modified z-score above %.1f): "+
		"another program or a cold cache disturbed them; rerun on a quiet machine, with --warmup or more --runs",
		r.Cell, len(out), r.OK, strings.Join(ts, ", "), FormatDuration(float64(med)), outlierZ)
}

// summaries say, for each N of the real kernel with more than one
// completed cell, how many times faster its fastest cell ran than each
// other (Relative, with its spread), as hyperfine's summary does.
func summaries(rs []Record) []string {
	type key struct {
		backend string
		count   int
	}
	groups := map[key][]Record{}
	var order []key
	for _, r := range rs {
		if r.Backend != "netlink" || r.OK == 0 || r.Relative == nil {
			continue
		}
		k := key{r.Backend, r.Count}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []string
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		slices.SortStableFunc(g, func(a, b Record) int { return cmpFloat(*a.Relative, *b.Relative) })
		var parts []string
		for _, r := range g[1:] {
			parts = append(parts, fmt.Sprintf("%.2f ± %.2f times faster than %s", *r.Relative, *r.RelativeSD, summaryName(r)))
		}
		out = append(out, fmt.Sprintf("real kernel, N=%d: %s ran %s", k.count, summaryName(g[0]), strings.Join(parts, ", ")))
	}
	return out
}

func summaryName(r Record) string {
	if r.NetnsCell() {
		return "'" + r.netnsWhat() + " " + r.Batch + "'"
	}
	return "'" + r.Batch + "'"
}
