package calibrate

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/netdev"
)

// The costs of the workloads beyond plain devices and namespaces, measured
// so that their emulated runs are this host's: devices set up with
// addresses (created, then deleted as one batch), children of a device
// (macvlans, and VLANs where the kernel has them: created, deleted as one
// batch), and namespaces with a veth pair. Each run's cost keys are solved
// so that the emulated kernel reproduces it (closure), from where the
// devices' and namespaces' own costs already left the emulated times:
//
//   - addresses: 100 devices each up with one IPv6 address, created and
//     deleted as one batch, then 100 each up with one IPv4 and one IPv6
//     address. The IPv6 runs give one factor on the built-in costs of each
//     side, the add's (link_up_ns, addr6_add_ns, anycast_ns) and the
//     delete's (link_down_ns, addr6_del_ns); the IPv4 and IPv6 runs then
//     what the IPv4 address adds (addr4_add_ns, addr4_del_ns). An add's
//     figure is its address part (addr_ns, on both kernels), after every
//     device was created: the creates are the create figure's, and their
//     spread from one round to the next (60 to 105µs a device on this
//     project's host) is larger than what the addresses cost;
//   - children: vlan_register_ns / macvlan_register_ns from the create of
//     100 of them on one device, _unregister_ns from their batched delete;
//   - veth: netns_veth_ns from 100 namespaces with lo up and a veth pair.
//
// None of the workloads' one-by-one deletes, streams, lower-device deletes,
// unshares or churns is an input.

// WorkloadPoint is one workload calibration run: what, how many, and the
// figure of its rounds on the real kernel (MidMean).
type WorkloadPoint struct {
	What       string `json:"what"`
	Count      int    `json:"count"`
	MeasuredNS int64  `json:"measured_ns"`
	Rounds     int    `json:"rounds"`
	// RunsNS is every round's time, in the order measured.
	RunsNS []int64 `json:"runs_ns,omitempty"`
}

// The workload runs.
const (
	WorkAddr6Add  = "set up with IPv6 addresses"
	WorkAddr6Del  = "batched delete of up devices with IPv6 addresses"
	WorkAddrAdd   = "set up with addresses"
	WorkAddrDel   = "batched delete of up devices with addresses"
	WorkChildAdd  = "add %ss on a device"
	WorkChildDel  = "batched delete of %ss"
	WorkVethNetns = "netns add with lo up and a veth pair"
	workloadCount = 100
	// workloadRounds is even: the two address runs take turns at going
	// first in a round (see measureWorkloads). A batched delete of 100
	// addressed devices ranged by +-20% within a calibration on this
	// project's 2-CPU host (22-46 ms), more than the IPv4 address adds to
	// the IPv6 run (1-3 ms), and with six rounds three of nineteen
	// calibrations on 4 December measured the IPv4+IPv6 run faster than
	// the IPv6 one it adds to: twelve.
	workloadRounds = 12
)

// workloadAddrs is how the address runs set each device up.
var workloadAddrs = map[string]ndst.Addrs{
	WorkAddr6Add: {Up: true, V6: 1}, WorkAddr6Del: {Up: true, V6: 1},
	WorkAddrAdd: {Up: true, V4: 1, V6: 1}, WorkAddrDel: {Up: true, V4: 1, V6: 1},
}

// measureWorkloads measures the workload runs, workloadRounds rounds each
// after a warm-up round, on backend b.
//
// The IPv4 runs' costs are what they add to the IPv6 runs (a few
// microseconds a device against devices of 130), so the two runs must see
// the same machine: the run that opens a round follows the previous
// round's namespace deletes, and with the IPv6 runs always first the IPv4
// runs came out faster than the IPv6 runs they add to (by up to a fifth).
// The two take turns at going first, an equal number of rounds each.
func (r *Report) measureWorkloads(ctx context.Context, b *nlbackend.Backend) error {
	runs := map[string][]int64{}
	add := func(what string, ns int64) { runs[what] = append(runs[what], ns) }
	tmpl, _ := ndst.ParseTemplate("wl%d")
	parentTmpl, _ := ndst.ParseTemplate("wlp%d")
	kinds := []string{ndst.KindMacvlan, ndst.KindVLAN}
	supported := map[string]bool{}
	nsTmpl, err := ndst.ParseNetnsTemplate(fmt.Sprintf("ndst-calw%d-%%d", os.Getpid()))
	if err != nil {
		return err
	}
	defer func() { _, _ = b.DropNamespaces(nsTmpl) }()
	for round := -1; round < workloadRounds; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		pairs := [][2]string{{WorkAddr6Add, WorkAddr6Del}, {WorkAddrAdd, WorkAddrDel}}
		if round%2 != 0 {
			slices.Reverse(pairs)
		}
		for _, w := range pairs {
			a, err := b.Add(ctx, ndst.AddRequest{Count: workloadCount, Template: tmpl, Addrs: workloadAddrs[w[0]]})
			if err != nil {
				return fmt.Errorf("%s %d: %w", w[0], workloadCount, err)
			}
			d, err := deleteInOne(ctx, b, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}, workloadCount, w[1])
			if err != nil {
				return err
			}
			if round >= 0 {
				add(w[0], a.Counters["addr_ns"])
				add(w[1], d.WallNS)
			}
		}
		for _, k := range kinds {
			if round >= 0 && !supported[k] {
				continue
			}
			if _, err := b.Add(ctx, ndst.AddRequest{Count: 1, Template: parentTmpl}); err != nil {
				return fmt.Errorf("add a lower device: %w", err)
			}
			ca, err := b.Add(ctx, ndst.AddRequest{Count: workloadCount, Kind: k, Parent: parentTmpl.Name(0)})
			if ndst.IsUsage(err) && round < 0 {
				// The kernel has no such link type: measured without it.
				if _, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("add %d %ss: %w", workloadCount, k, err)
			}
			supported[k] = true
			// The children only, by their ifindexes: one group delete.
			list, err := b.List(ctx, ndst.ListRequest{})
			if err != nil {
				return err
			}
			lo, hi := math.MaxInt32, 0
			for _, dv := range list {
				if dv.Kind == k {
					lo, hi = min(lo, dv.Ifindex), max(hi, dv.Ifindex)
				}
			}
			cd, err := deleteInOne(ctx, b, ndst.DelRequest{Start: lo, Stop: hi}, workloadCount, fmt.Sprintf(WorkChildDel, k))
			if err != nil {
				return err
			}
			if _, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32}); err != nil {
				return err
			}
			if round >= 0 {
				add(fmt.Sprintf(WorkChildAdd, k), ca.WallNS)
				add(fmt.Sprintf(WorkChildDel, k), cd.WallNS)
			}
		}
		na, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: workloadCount, Template: nsTmpl, LoUp: true, Veth: true})
		if err != nil {
			return fmt.Errorf("create %d namespaces with a veth pair: %w", workloadCount, err)
		}
		if _, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: workloadCount, Template: nsTmpl}); err != nil {
			return fmt.Errorf("delete the namespaces with a veth pair: %w", err)
		}
		if round >= 0 {
			add(WorkVethNetns, na.WallNS)
		}
	}
	r.Workloads = nil
	whats := []string{WorkAddr6Add, WorkAddr6Del, WorkAddrAdd, WorkAddrDel}
	for _, k := range kinds {
		if supported[k] {
			whats = append(whats, fmt.Sprintf(WorkChildAdd, k), fmt.Sprintf(WorkChildDel, k))
		}
	}
	whats = append(whats, WorkVethNetns)
	for _, w := range whats {
		r.Workloads = append(r.Workloads, WorkloadPoint{What: w, Count: workloadCount, MeasuredNS: MidMean(runs[w]), Rounds: len(runs[w]), RunsNS: runs[w]})
	}
	return nil
}

// emulatedWorkload runs one workload run on the emulated kernel with table
// t: the figure (fig) over ClosurePhases start phases.
func emulatedWorkload(ctx context.Context, base emu.Config, t *costs.Table, kind, what string, n int, fig figureFunc) (int64, error) {
	out, err := overPhases(ctx, base, t, func(b *emu.Backend) (int64, error) {
		return runEmulatedWorkload(ctx, b, emuKind(kind), what, n)
	})
	if err != nil {
		return 0, err
	}
	return fig(out), nil
}

// emuKind is the emulated devices' kind for the host's: ifb, or the
// emulated kernel's dummy.
func emuKind(kind string) string {
	if kind == "ifb" {
		return "ifb"
	}
	return ""
}

func runEmulatedWorkload(ctx context.Context, b *emu.Backend, kind, what string, n int) (int64, error) {
	tmpl, _ := ndst.ParseTemplate("wl%d")
	switch what {
	case WorkAddr6Add, WorkAddr6Del, WorkAddrAdd, WorkAddrDel:
		a, err := b.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl, Kind: kind, Addrs: workloadAddrs[what]})
		if err != nil {
			return 0, err
		}
		if what == WorkAddr6Add || what == WorkAddrAdd {
			return a.Counters["addr_ns"], nil
		}
		d, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32})
		return virt(d), err
	case WorkVethNetns:
		a, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: n, LoUp: true, Veth: true})
		return virt(a), err
	}
	for _, k := range []string{ndst.KindMacvlan, ndst.KindVLAN} {
		if what != fmt.Sprintf(WorkChildAdd, k) && what != fmt.Sprintf(WorkChildDel, k) {
			continue
		}
		pt, _ := ndst.ParseTemplate("wlp%d")
		if _, err := b.Add(ctx, ndst.AddRequest{Count: 1, Template: pt, Kind: kind}); err != nil {
			return 0, err
		}
		a, err := b.Add(ctx, ndst.AddRequest{Count: n, Kind: k, Parent: "wlp0"})
		if err != nil || what == fmt.Sprintf(WorkChildAdd, k) {
			return virt(a), err
		}
		d, err := b.Del(ctx, ndst.DelRequest{Start: 2, Stop: math.MaxInt32})
		return virt(d), err
	}
	return 0, fmt.Errorf("unknown workload run %q", what)
}

func virt(r *ndst.Result) int64 {
	if r == nil || r.VirtualNS == nil {
		return 0
	}
	return *r.VirtualNS
}

// workloadKeys are the cost keys each run solves, with their built-in
// values (the factor scales them together).
func workloadKeys(what string) []string {
	switch what {
	case WorkAddr6Add:
		return []string{"link_up_ns", "addr6_add_ns", "anycast_ns"}
	case WorkAddr6Del:
		return []string{"link_down_ns", "addr6_del_ns"}
	case WorkAddrAdd:
		return []string{"addr4_add_ns"}
	case WorkAddrDel:
		return []string{"addr4_del_ns"}
	case WorkVethNetns:
		return []string{"netns_veth_ns"}
	}
	for _, k := range []string{ndst.KindMacvlan, ndst.KindVLAN} {
		switch what {
		case fmt.Sprintf(WorkChildAdd, k):
			return []string{k + "_register_ns"}
		case fmt.Sprintf(WorkChildDel, k):
			return []string{k + "_unregister_ns"}
		}
	}
	return nil
}

// workloadMiss says why a workload run the emulated kernel does not
// reproduce may miss: its keys, fitted to it, hit their bound (a cost of 0,
// or for a child's unregister minus the device's), or the run's time is
// not linear in them.
func workloadMiss(what string) string {
	keys := workloadKeys(what)
	if len(keys) == 0 {
		return "its mechanism is not named"
	}
	return fmt.Sprintf("%s, fitted to this run, cannot give its time back: at their bound, or the run's time is not linear in them (the run's other costs, fitted before, leave it too much or too little)", strings.Join(keys, ", "))
}

// workloadFloorMiss says why a run whose own costs are at their floor is
// still slower in the model than measured (by e, relative, after the fit):
// the costs it rests on besides its own, fitted to other runs, already
// exceed its time.
func (r *Report) workloadFloorMiss(what string, e float64) string {
	m := fmt.Sprintf("%s, fitted to this run, stop at their floor, and the emulated run is still %+.1f%% off: ", strings.Join(workloadKeys(what), ", "), 100*e)
	if b, w, ok := r.workloadPair(what); ok && w.MeasuredNS < b.MeasuredNS {
		return m + fmt.Sprintf("it measured faster (%s) than the run it adds to (%s, %s), whose costs it rests on: their rounds ranged %s-%s and %s-%s, more than what this run adds; calibrate again, or with more rounds, on a quieter machine",
			dur(w.MeasuredNS), b.What, dur(b.MeasuredNS), dur(slices.Min(w.RunsNS)), dur(slices.Max(w.RunsNS)), dur(slices.Min(b.RunsNS)), dur(slices.Max(b.RunsNS)))
	}
	if what == WorkAddr6Add {
		return m + fmt.Sprintf("what is left of its address part is its requests' round trips (syscall %s each) and the RTNL they take, which the run took less than here", dur(r.Table.Lookup(costs.Syscall)))
	}
	return m + "the costs it rests on, fitted before, leave it too much"
}

// workloadPair is a run's base run and the run itself, with their rounds.
func (r *Report) workloadPair(what string) (base, run WorkloadPoint, ok bool) {
	var hasB, hasW bool
	for _, p := range r.Workloads {
		switch p.What {
		case workloadBase(what):
			base, hasB = p, len(p.RunsNS) > 0
		case what:
			run, hasW = p, len(p.RunsNS) > 0
		}
	}
	return base, run, hasB && hasW && workloadBase(what) != ""
}

// builtinWorkloadCost is the starting value of a key: the built-in
// address cost, or 0 (a child or veth costs what its devices cost).
func builtinWorkloadCost(key string) int64 {
	d := netdev.DefaultAddrCosts
	for i, k := range netdev.AddrCostKeys {
		if k == key {
			return int64([]int64{int64(d.Up), int64(d.Down), int64(d.Add4), int64(d.Add6), int64(d.Del4), int64(d.Del6), int64(d.Anycat)}[i])
		}
	}
	return 0
}

// workloadKeyFloor is the least value a key may take: 0, but a child's
// register and unregister costs are what it costs beyond the calibrated
// device's and may be negative, down to minus that device's cost (the
// model keeps the child's work at least 0: netdev.VLANCosts).
func workloadKeyFloor(t *costs.Table, key string) int64 {
	if !slices.Contains(netdev.VLANCostKeys, key) {
		return 0
	}
	if strings.HasSuffix(key, "_unregister_ns") {
		return -t.Lookup(costs.Unregister)
	}
	return -t.Lookup(costs.Register)
}

// workloadBase is the run whose keys a run rests on besides its own: the
// IPv4 runs are the IPv6 runs plus an IPv4 address a device.
func workloadBase(what string) string {
	switch what {
	case WorkAddrAdd:
		return WorkAddr6Add
	case WorkAddrDel:
		return WorkAddr6Del
	}
	return ""
}

// fitWorkloads solves each run's keys on r.Table: the emulated time is
// about linear in them (CPU charged once per device), so a secant step on
// the run's error, bounded below, settles in a few passes.
//
// A run that rests on another's keys (workloadBase) and is faster than
// its base run allows, with its own keys at their bound, is not given up:
// the two runs measure the same costs there, so the base run's keys are
// solved again, on both runs, where the two relative errors balance.
func (r *Report) fitWorkloads(ctx context.Context, base emu.Config) error {
	t := r.Table
	r.workloadAtFloor = map[string]float64{}
	factor := map[string]float64{} // each run's solved factor (or cost)
	point := map[string]WorkloadPoint{}
	for _, w := range r.Workloads {
		point[w.What] = w
	}
	relErr := func(w WorkloadPoint) (float64, error) {
		e, err := emulatedWorkload(ctx, base, t, r.Kind, w.What, w.Count, r.figure())
		if err != nil {
			return 0, fmt.Errorf("calibrate: %s: %w", w.What, err)
		}
		r.FitIterations++
		return float64(e-w.MeasuredNS) / float64(w.MeasuredNS), nil
	}
	for _, w := range r.Workloads {
		keys := workloadKeys(w.What)
		if len(keys) == 0 || w.MeasuredNS <= 0 {
			continue
		}
		lo := workloadKeyFloor(t, keys[0])
		set := r.workloadSetter(keys, lo)
		// f is a factor on the built-in costs, or the cost itself where
		// there is none.
		f0, f1 := 0.0, 1.0
		if builtinWorkloadCost(keys[0]) == 0 {
			f1 = 100_000
		}
		best, bestErr, err := secant(set, func() (float64, error) { return relErr(w) }, f0, f1, float64(lo))
		if err != nil {
			return err
		}
		set(best)
		factor[w.What] = best
		if best <= float64(lo) && bestErr > 0 {
			r.workloadAtFloor[w.What] = bestErr
		}
		b, ok := point[workloadBase(w.What)]
		if !ok || best > float64(lo) || bestErr <= 0 {
			continue
		}
		bf, bset := factor[b.What], r.workloadSetter(workloadKeys(b.What), 0)
		both := func() (float64, error) {
			eb, err := relErr(b)
			if err != nil {
				return 0, err
			}
			ew, err := relErr(w)
			return eb + ew, err
		}
		fb, _, err := secant(bset, both, bf, 0.9*bf, 0)
		if err != nil {
			return err
		}
		bset(fb)
		factor[b.What] = fb
	}
	for _, w := range r.Workloads {
		t.Extra["workload_"+slug(w.What)+"_ns"] = w.MeasuredNS
	}
	return nil
}

// workloadSetter sets keys from a factor on their built-in costs, or, for
// keys without one, to the value itself, at least lo.
func (r *Report) workloadSetter(keys []string, lo int64) func(float64) {
	t := r.Table
	return func(f float64) {
		for _, k := range keys {
			b := builtinWorkloadCost(k)
			if b == 0 { // an additive cost per device
				t.Extra[k] = max(lo, int64(math.Round(f)))
			} else {
				t.Extra[k] = max(0, int64(math.Round(f*float64(b))))
			}
		}
	}
}

// secant finds the f (at least lo) where resid, after set(f), is closest to
// 0, by secant steps from f0 and f1; it returns that f and its residual.
func secant(set func(float64), resid func() (float64, error), f0, f1, lo float64) (float64, float64, error) {
	set(f0)
	e0, err := resid()
	if err != nil {
		return 0, 0, err
	}
	best, bestErr := f0, e0
	for range 8 {
		set(f1)
		e1, err := resid()
		if err != nil {
			return 0, 0, err
		}
		if math.Abs(e1) < math.Abs(bestErr) {
			best, bestErr = f1, e1
		}
		if e1 == e0 || math.Abs(bestErr) < 0.005 {
			break
		}
		f2 := f1 - (f0-f1)*e1/(e0-e1)
		f0, e0, f1 = f1, e1, max(lo, f2)
	}
	return best, bestErr, nil
}

// workloadClosure adds the workload runs to the closure.
func (r *Report) workloadClosure(ctx context.Context, base emu.Config) error {
	for _, w := range r.Workloads {
		e, err := emulatedWorkload(ctx, base, r.Table, r.Kind, w.What, w.Count, r.figure())
		if err != nil {
			return fmt.Errorf("calibrate: %s closure: %w", w.What, err)
		}
		p := ClosurePoint{What: w.What, Devices: w.Count, MeasuredNS: w.MeasuredNS, EmulatedNS: e}
		if w.MeasuredNS > 0 {
			p.Error = float64(e-w.MeasuredNS) / float64(w.MeasuredNS)
		}
		r.Closure = append(r.Closure, p)
	}
	return nil
}

// HasWorkloadCosts reports whether a table carries every workload key of
// its calibration (the address, veth and macvlan costs).
func HasWorkloadCosts(t *costs.Table) bool {
	if t == nil {
		return false
	}
	for _, k := range slices.Concat(workloadKeys(WorkAddr6Add), workloadKeys(WorkAddr6Del), workloadKeys(WorkAddrAdd), workloadKeys(WorkAddrDel), workloadKeys(WorkVethNetns)) {
		if _, ok := t.Extra[k]; !ok {
			return false
		}
	}
	return true
}

// slug is a run's name as a key: letters and digits, '_' between words.
func slug(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b = append(b, c)
		case len(b) > 0 && b[len(b)-1] != '_':
			b = append(b, '_')
		}
	}
	return string(b)
}
