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

// The kernel's namespace create, apart from naming it. A namespace that
// `netns add` makes is the kernel's work (unshare(CLONE_NEWNET):
// copy_net_ns, setup_net under pernet_ops_rwsem taken for reading, lo;
// then lo up) and ndst's naming of it (its ownership record, mount point
// and bind mount: netdev/netnsfiles.go), which on this project's host,
// /run on ext4 without a journal, cost more than the kernel's part and
// drift with what /run deleted before. One cost fitted to named creates
// alone (netns_setup_ns before netns_files_ns was measured) charged that
// filesystem work to every namespace, those that die with their process
// too, which name nothing: the emulated unshare of 1000 namespaces by 8
// workers with lo up and a veth pair took 4.1 s against 2.9 s on this
// host.
//
// So the kernel's part is measured where nothing is named: unshareCount
// namespaces made by `ndst unshare` with lo up, one worker (each made by a
// thread of its own that unshares, sets lo up through a netlink socket and
// ends, one after another), unshareRounds rounds after a warm-up round.
// netns_setup_ns is solved so that the emulated unshare's create time
// (unshare to the last lo up) is the measured one; the thread's start and
// end, which the emulated worker does not pay apart from its syscalls,
// fall into it. netns_files_ns is then what the named creates of
// measureNetns take beyond it (netns.go).

// UnsharePoint is the unshares' figure (MidMean) and rounds.
type UnsharePoint struct {
	Namespaces int   `json:"namespaces"`
	CreatedNS  int64 `json:"created_ns"` // the last one was made, lo up
	Rounds     int   `json:"rounds"`
	// RunsNS are the rounds' times, in the order measured.
	RunsNS []int64 `json:"runs_ns,omitempty"`
}

// NetnsUnshare names the closure point of the unshares.
const NetnsUnshare = "netns unshare"

// The unshares' size and rounds.
const (
	unshareCount  = 200
	unshareRounds = 5
)

// unshareRequest is the calibration's unshare (the real and the emulated).
func unshareRequest() ndst.UnshareRequest {
	return ndst.UnshareRequest{Count: unshareCount, Parallel: 1, LoUp: true}
}

// measureUnshare runs the unshares on the real kernel.
func (r *Report) measureUnshare(ctx context.Context, b *nlbackend.Backend) error {
	var runs []int64
	for round := -1; round < unshareRounds; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := b.Unshare(ctx, unshareRequest())
		if err != nil {
			return fmt.Errorf("unshare %d namespaces: %w", unshareCount, err)
		}
		u := res.Unshare
		if u == nil || u.Namespaces != unshareCount || u.CreatedNS <= 0 {
			return fmt.Errorf("unshare made %d of %d namespaces, or its create time was not observed", res.Count, unshareCount)
		}
		if round >= 0 {
			runs = append(runs, u.CreatedNS)
		}
	}
	r.Unshare = &UnsharePoint{Namespaces: unshareCount, CreatedNS: MidMean(runs), Rounds: len(runs), RunsNS: runs}
	return nil
}

// emulatedUnshare is the figure (fig) of the emulated unshares' create
// time with table t, over ClosurePhases start phases.
func emulatedUnshare(ctx context.Context, base emu.Config, t *costs.Table, fig figureFunc) (int64, error) {
	out, err := overPhases(ctx, base, t, func(b *emu.Backend) (int64, error) {
		res, err := b.Unshare(ctx, unshareRequest())
		if err != nil {
			return 0, err
		}
		if res.Unshare == nil {
			return 0, fmt.Errorf("emulated unshare: no times")
		}
		return res.Unshare.CreatedNS, nil
	})
	if err != nil {
		return 0, err
	}
	return fig(out), nil
}

// fitSetupToUnshare solves netns_setup_ns on r.Table so that the emulated
// unshares take the measured time: one worker makes the namespaces one
// after another, so the time is about linear in the cost, with a slope of
// one per namespace; Newton steps settle it.
func (r *Report) fitSetupToUnshare(ctx context.Context, base emu.Config) error {
	u, t := r.Unshare, r.Table
	if _, ok := t.Extra[keyNetnsSetup]; !ok {
		t.Extra[keyNetnsSetup] = 0
	}
	for range 6 {
		e, err := emulatedUnshare(ctx, base, t, r.figure())
		if err != nil {
			return fmt.Errorf("calibrate: unshare closure: %w", err)
		}
		r.FitIterations++
		s0 := t.Extra[keyNetnsSetup]
		t.Extra[keyNetnsSetup] = max(0, s0-int64(math.Round(float64(e-u.CreatedNS)/float64(u.Namespaces))))
		if abs(t.Extra[keyNetnsSetup]-s0) < 1000 {
			break
		}
	}
	t.Extra[fmt.Sprintf("netns_unshare_%d_ns", u.Namespaces)] = u.CreatedNS
	return nil
}

// unshareClosure adds the unshares to the closure.
func (r *Report) unshareClosure(ctx context.Context, base emu.Config) error {
	u := r.Unshare
	if u == nil {
		return nil
	}
	e, err := emulatedUnshare(ctx, base, r.Table, r.figure())
	if err != nil {
		return fmt.Errorf("calibrate: unshare closure: %w", err)
	}
	p := ClosurePoint{What: NetnsUnshare, Devices: u.Namespaces, MeasuredNS: u.CreatedNS, EmulatedNS: e}
	if u.CreatedNS > 0 {
		p.Error = float64(e-u.CreatedNS) / float64(u.CreatedNS)
	}
	r.Closure = append(r.Closure, p)
	return nil
}

// unshareMiss says why the unshares miss after the fit.
func (r *Report) unshareMiss() string {
	if r.Table != nil && r.Table.Extra[keyNetnsSetup] == 0 {
		return "netns_setup_ns, fitted to these unshares, is at 0 and the emulated unshares are still slower: the namespace's lo, lo up and the cleanup beside them already take longer in the model than the whole create took here"
	}
	return "netns_setup_ns, fitted to these unshares, does not give their time back: their time is not linear in it (the cleanup, running beside them, holds RTNL for longer or shorter as the cost moves)"
}
