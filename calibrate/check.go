package calibrate

import (
	"context"
	"fmt"
	"math"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/ndst/nlbackend"
)

// The check: a batched delete of more devices than the fitted sizes
// (Options.Check, 1000 by default), timed after them and never an input.
// The per-device cost is fitted between Small and Large; a prediction of a
// larger batch extrapolates that line, and on this project's host the
// batched deletes do not always grow linearly past it (one day 1000
// devices took 152 ms where the line through 100 and 300 gave 181 ms).
// The check shows, in every calibration, how far the emulated kernel
// with the fitted table is from such a batch, and how far the host's own
// line is, so that a miss of a large batch is seen to be the host's
// growth or the model's. It is shown and not gated.

// CheckWhat names the check in the closure.
const CheckWhat = "batched delete beyond the fitted sizes"

// checkRounds is the check's measured rounds (after a warm-up round).
const checkRounds = 5

// MaxCheck bounds the check's size.
const MaxCheck = 10_000

// measureCheck creates o.Check devices in one batch and deletes them as
// one batch, checkRounds times after a warm-up round.
func (r *Report) measureCheck(ctx context.Context, b *nlbackend.Backend, o Options) error {
	tmpl, err := ndst.ParseTemplate("chk%d")
	if err != nil {
		return err
	}
	n := o.Check
	if r.Kind == "veth" && n%2 != 0 {
		n++
	}
	var runs []int64
	for round := -1; round < checkRounds; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := b.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl, Kind: r.Kind}); err != nil {
			return fmt.Errorf("calibrate: check: create %d devices: %w", n, err)
		}
		d, err := deleteInOne(ctx, b, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}, n, "check: batched delete")
		if err != nil {
			return err
		}
		if round >= 0 {
			runs = append(runs, d.Counters["group_delete_ns"])
		}
	}
	r.Check = &BatchPoint{Devices: n, P50NS: median(runs), MidMeanNS: MidMean(runs), RunsNS: runs}
	return nil
}

// checkClosure adds the check to the closure: measured, and emulated with
// the fitted table over the start phases.
func (r *Report) checkClosure(ctx context.Context, base emu.Config) error {
	c := r.Check
	if c == nil || c.Figure() <= 0 {
		return nil
	}
	_, dels, err := emulated(ctx, base, r.Table, []int{c.Devices}, r.figure())
	if err != nil {
		return fmt.Errorf("calibrate: check: %w", err)
	}
	p := ClosurePoint{What: CheckWhat, Devices: c.Devices, MeasuredNS: c.Figure(), EmulatedNS: dels[0]}
	p.Error = float64(p.EmulatedNS-p.MeasuredNS) / float64(p.MeasuredNS)
	r.Closure = append(r.Closure, p)
	return nil
}

// checkLine is what the host's own line through the fitted sizes gives at
// the check's size, and the measured check's distance from it.
func (r *Report) checkLine() (atCheck int64, off float64, ok bool) {
	c := r.Check
	if c == nil || c.Figure() <= 0 {
		return 0, 0, false
	}
	atCheck = r.InterceptNS + r.SlopeNS*int64(c.Devices)
	if atCheck <= 0 {
		return 0, 0, false
	}
	return atCheck, float64(c.Figure()-atCheck) / float64(atCheck), true
}

// checkNote is the check's line in the report: its figures, the host's
// line at its size, and what a miss is.
func (r *Report) checkNote() string {
	var p *ClosurePoint
	for i := range r.Closure {
		if r.Closure[i].What == CheckWhat {
			p = &r.Closure[i]
		}
	}
	if p == nil {
		return ""
	}
	s := fmt.Sprintf("check:           a batched delete of %d devices, not fitted (shown, not gated): measured %s (%s of %d), emulated %s (%+.1f%%)",
		p.Devices, dur(p.MeasuredNS), r.figure1(), len(r.Check.RunsNS), dur(p.EmulatedNS), 100*p.Error)
	if at, off, ok := r.checkLine(); ok {
		l, h := r.Batches[0].Devices, r.Batches[len(r.Batches)-1].Devices
		s += fmt.Sprintf("; the line through %d and %d devices gives %s here, the measured is %+.1f%% off it", l, h, dur(at), 100*off)
		switch {
		case math.Abs(p.Error) <= ClosureLimit:
		case math.Abs(off) > ClosureLimit && (off > 0) != (p.Error > 0):
			s += ": this host's batched deletes do not grow linearly past the fitted sizes now, and a prediction of a batch this large misses by about as much"
		default:
			s += ": the emulated kernel's own growth past the fitted sizes is not the host's"
		}
	}
	return s + "\n"
}

// gated reports whether a closure point counts toward Closed: the
// namespace deletes' own time and the check are shown only.
func gated(p ClosurePoint) bool {
	return p.What != NetnsReturned && p.What != CheckWhat
}

// TableCheck is what a cost table written by calibrate says about batches
// beyond its fitted sizes: the largest fitted batch, and its check's size
// and emulated error (CheckDevices 0 in a table written before the check).
type TableCheck struct {
	FittedDevices int
	CheckDevices  int
	CheckError    float64
}

// CheckOf reads a table's fitted batch sizes and check from its extra
// figures (batch_delete_N_ns, closure_check_delN_permille); false for a
// table calibrate did not write.
func CheckOf(t *costs.Table) (TableCheck, bool) {
	var c TableCheck
	if t == nil {
		return c, false
	}
	for k, v := range t.Extra {
		var n int
		if _, err := fmt.Sscanf(k, "batch_delete_%d_ns", &n); err == nil && fmt.Sprintf("batch_delete_%d_ns", n) == k {
			c.FittedDevices = max(c.FittedDevices, n)
		}
		if _, err := fmt.Sscanf(k, "closure_check_del%d_permille", &n); err == nil && fmt.Sprintf("closure_check_del%d_permille", n) == k {
			c.CheckDevices, c.CheckError = n, float64(v)/1000
		}
	}
	return c, c.FittedDevices > 0
}
