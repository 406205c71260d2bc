package emu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
	"github.com/ndst-project/ndst/waitrefs"
)

// stressRuns is how many random scenarios TestStress runs; the long version
// is scripts/stress.sh (NDST_STRESS=2000).
func stressRuns() int {
	if n, err := strconv.Atoi(os.Getenv("NDST_STRESS")); err == nil && n > 0 {
		return n
	}
	return 40
}

// TestStress runs random add/del/list sequences on random machines, profiles
// and strategies. After every step the registry must match a trivially
// correct model (which devices exist), every deleted device must have been
// freed exactly once (a double free or a negative refcount panics inside the
// model and fails the run), and a livelock must leave the registry as it was.
// Each scenario then runs again from scratch and must give identical results.
func TestStress(t *testing.T) {
	for i := range stressRuns() {
		seed := uint64(i) + 1
		first := stressScenario(t, seed)
		again := stressScenario(t, seed)
		if first != again {
			t.Fatalf("scenario %d is not repeatable:\n%s\n---\n%s", seed, first, again)
		}
	}
}

func stressScenario(t *testing.T, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	profile := netdev.ProfileNames[rng.IntN(len(netdev.ProfileNames))]
	cfg := Config{
		Profile:   profile,
		Strategy:  waitrefs.Names[rng.IntN(len(waitrefs.Names))],
		HZ:        []int{100, 250, 300, 1000}[rng.IntN(4)],
		CPUs:      1 + rng.IntN(4),
		Preempt:   []string{"none", "voluntary", "full", "lazy"}[rng.IntN(4)],
		Seed:      seed,
		Ephemeral: true,
		Watchdog:  3e9, // 3 s of virtual time keeps livelocks cheap
	}
	// Any RCU the line offers that fits the machine; the expedited loop
	// only where the line has synchronize_rcu_expedited.
	p, _ := netdev.LookupProfile(profile)
	pre, _ := sim.ParsePreempt(cfg.Preempt)
	if _, err := p.Choose("", cfg.CPUs, pre); err != nil {
		// The line cannot run that model (lazy before 6.13, none or
		// voluntary on x86 7.x): full, which every line can.
		cfg.Preempt, pre = "full", sim.PreemptFull
	}
	var fits []string
	for _, c := range p.RCUs {
		if p.CheckMachine(c, cfg.CPUs, pre) == nil {
			fits = append(fits, c.Name)
		}
	}
	if len(fits) > 0 {
		cfg.RCU = fits[rng.IntN(len(fits))]
	}
	if cfg.Strategy == "expedited" && profile == "2.6.31" {
		cfg.Strategy = "tick"
	}
	b, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("scenario %d: Open(%+v) = %v", seed, cfg, err)
	}
	tmpl, _ := ndst.ParseTemplate("st%d")
	model := map[int]bool{} // ifindexes that exist
	var log []string
	ctx := context.Background()
	for step := range 6 {
		var res *ndst.Result
		switch op := rng.IntN(3); {
		case op == 0 || len(model) == 0:
			n := 1 + rng.IntN(40)
			res, err = b.Add(ctx, ndst.AddRequest{Count: n, Template: tmpl})
			checkPhases(t, seed, step, res)
			if err != nil {
				t.Fatalf("scenario %d step %d: Add(%d) = %v", seed, step, n, err)
			}
			devs, _ := b.List(ctx, ndst.ListRequest{})
			for _, d := range devs {
				model[d.Ifindex] = true
			}
			if len(model) != len(devs) || res.Count != n {
				t.Fatalf("scenario %d step %d: after Add(%d) %d devices, model has %d", seed, step, n, len(devs), len(model))
			}
		case op == 1:
			keys := slices.Sorted(func(yield func(int) bool) {
				for k := range model {
					if !yield(k) {
						return
					}
				}
			})
			lo := keys[rng.IntN(len(keys))]
			hi := lo + rng.IntN(30)
			oneByOne := rng.IntN(2) == 0
			before, _ := b.List(ctx, ndst.ListRequest{})
			res, err = b.Del(ctx, ndst.DelRequest{Start: lo, Stop: hi, OneByOne: oneByOne})
			after, _ := b.List(ctx, ndst.ListRequest{})
			checkPhases(t, seed, step, res)
			switch {
			case errors.Is(err, ndst.ErrLivelock):
				if !slices.Equal(before, after) {
					t.Fatalf("scenario %d step %d: a livelocked Del changed the registry", seed, step)
				}
			case err != nil:
				t.Fatalf("scenario %d step %d (%s): Del(%d, %d) = %v", seed, step, cfg.Strategy, lo, hi, err)
			default:
				want := 0
				for k := range model {
					if k >= lo && k <= hi {
						delete(model, k)
						want++
					}
				}
				if res.Count != want || res.Counters["devices_freed"] != int64(want) || len(after) != len(model) {
					t.Fatalf("scenario %d step %d: Del(%d, %d) freed %d (counter %d), want %d; %d devices left, model %d",
						seed, step, lo, hi, res.Count, res.Counters["devices_freed"], want, len(after), len(model))
				}
			}
		default:
			devs, err := b.List(ctx, ndst.ListRequest{PageSize: 1 + rng.IntN(10)})
			if err != nil || len(devs) != len(model) {
				t.Fatalf("scenario %d step %d: List = %d devices, %v; model has %d", seed, step, len(devs), err, len(model))
			}
			for _, d := range devs {
				if !model[d.Ifindex] || !d.Refcount.Known || d.Refcount.Value < 1 || d.State != "registered" {
					t.Fatalf("scenario %d step %d: listed %+v", seed, step, d)
				}
			}
			continue
		}
		res.WallNS = 0
		j, _ := json.Marshal(res)
		log = append(log, string(j))
	}
	return fmt.Sprint(cfg.Profile, cfg.Strategy, log)
}

func TestAutoProfile(t *testing.T) {
	dir := t.TempDir()
	osRelease = dir + "/osrelease"
	defer func() { osRelease = "/proc/sys/kernel/osrelease" }()
	if err := os.WriteFile(osRelease, []byte("6.1.0-57-amd64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		table *costs.Table
		want  string
	}{
		{nil, "6.1"},
		{&costs.Table{Source: "t", Host: &costs.Host{Kernel: "5.10.0-30-amd64"}}, "5.10"},
		{&costs.Table{Source: "t", Host: &costs.Host{Kernel: "6.18.4", Profile: "6.12"}}, "6.12"},
	} {
		b, err := Open(context.Background(), Config{Profile: "auto", Costs: tc.table, HZ: 250, CPUs: 1, Ephemeral: true})
		if err != nil {
			t.Fatalf("Open(auto, %+v) = %v", tc.table, err)
		}
		if got := b.r.cfg.Profile; got != tc.want {
			t.Errorf("--profile auto with %+v = %s, want %s", tc.table, got, tc.want)
		}
	}
	os.WriteFile(osRelease, []byte("2.4.37\n"), 0o644)
	if _, err := Open(context.Background(), Config{Profile: "auto", HZ: 250, CPUs: 1, Ephemeral: true}); err == nil || !strings.Contains(err.Error(), "2.6.31") {
		t.Errorf("--profile auto on 2.4.37 = %v, want an error naming the lines", err)
	}
}

// checkPhases: a result's phases sum exactly to its virtual time, whatever
// the scenario (every instant of the command's task is attributed once).
func checkPhases(t *testing.T, seed uint64, step int, res *ndst.Result) {
	t.Helper()
	if res == nil || res.VirtualNS == nil {
		return
	}
	var sum int64
	for _, p := range res.Phases {
		if p.CPUNS < 0 || p.WaitNS < 0 {
			t.Fatalf("scenario %d step %d: phase %+v is negative", seed, step, p)
		}
		sum += p.TotalNS()
	}
	if sum != *res.VirtualNS {
		t.Fatalf("scenario %d step %d: phases %+v sum to %d ns, the %s took %d ns", seed, step, res.Phases, sum, res.Op, *res.VirtualNS)
	}
}
