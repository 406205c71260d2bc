package emu

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// knobRun is what one small workload shows of a kernel: the virtual time
// and counters of a one-by-one delete, a batched delete and a namespace
// teardown.
type knobRun struct {
	times    []int64
	counters []map[string]int64
}

func runKnobWorkload(t *testing.T, c Config) (knobRun, error) {
	t.Helper()
	ctx := context.Background()
	c.Ephemeral = true
	var out knobRun
	for _, oneByOne := range []bool{true, false} {
		b, err := Open(ctx, c)
		if err != nil {
			return out, err
		}
		if _, err := b.Add(ctx, ndst.AddRequest{Count: 12, Template: mustTemplate(t)}); err != nil {
			b.Close()
			return out, err
		}
		del, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: oneByOne})
		b.Close()
		if err != nil {
			return out, err
		}
		out.times = append(out.times, *del.VirtualNS)
		out.counters = append(out.counters, del.Counters)
	}
	b, err := Open(ctx, c)
	if err != nil {
		return out, err
	}
	defer b.Close()
	if _, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 4, Veth: true, LoUp: true, LinkTemplate: mustTemplate(t)}); err != nil {
		return out, err
	}
	del, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 4})
	if err != nil {
		return out, err
	}
	out.times = append(out.times, *del.VirtualNS)
	out.counters = append(out.counters, del.Counters)
	return out, nil
}

func mustTemplate(t *testing.T) ndst.Template {
	tm, err := ndst.ParseTemplate(ndst.DefaultTemplate)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

type knobMachine struct {
	hz, cpus int
	preempt  string
}

var knobMachines = []knobMachine{{1000, 1, "none"}, {250, 2, "none"}, {250, 2, "full"}, {250, 2, "rt"}, {250, 20, "none"}}

// TestKnobAtDefaultChangesNothing is the property that a knob given its own
// default value leaves the line exactly as it is: the same virtual times and
// the same counters, on every line, for every knob the line has, on
// machines of 1, 2 and 20 CPUs and every preemption model the line runs.
func TestKnobAtDefaultChangesNothing(t *testing.T) {
	for _, line := range netdev.ProfileNames {
		p := netdev.Profiles[line]
		for _, m := range knobMachines {
			pre, _ := sim.ParsePreempt(m.preempt)
			choice, err := p.Choose("", m.cpus, pre)
			if err != nil {
				continue // a machine the line cannot run
			}
			base := Config{Profile: line, HZ: m.hz, CPUs: m.cpus, Preempt: m.preempt, Seed: 3}
			want, err := runKnobWorkload(t, base)
			if err != nil {
				t.Fatalf("%s %+v: %v", line, m, err)
			}
			defaults, err := p.ResolveKnobs(m.hz, m.cpus, pre, choice.Name, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range defaults.List() {
				name := fmt.Sprintf("%s/%dHz/%dcpu/%s/%s=%s", line, m.hz, m.cpus, m.preempt, s.Name, s.Value)
				c := base
				c.Params = []string{s.Name + "=" + s.Value}
				got, err := runKnobWorkload(t, c)
				if err != nil {
					// A knob the machine does not let be set (5.10-rt's
					// rcu_normal_after_boot) is refused, not changed.
					if ndst.IsUsage(err) {
						continue
					}
					t.Errorf("%s: %v", name, err)
					continue
				}
				for i := range want.times {
					if got.times[i] != want.times[i] {
						t.Errorf("%s: run %d took %d ns, %d ns without the knob", name, i, got.times[i], want.times[i])
					}
					if !maps.Equal(got.counters[i], want.counters[i]) {
						t.Errorf("%s: run %d counters differ from the run without the knob:\n got %v\nwant %v", name, i, got.counters[i], want.counters[i])
					}
				}
			}
		}
	}
}

// TestKnobErrors checks the command line's mistakes: each is a usage error
// naming the problem.
func TestKnobErrors(t *testing.T) {
	for _, tc := range []struct {
		profile string
		cpus    int
		preempt string
		params  []string
		want    string
	}{
		{"6.18", 1, "none", []string{"rcutree.nonesuch=1"}, `unknown knob "rcutree.nonesuch"`},
		{"6.18", 1, "none", []string{"blimit=3"}, "did you mean rcutree.blimit"},
		{"6.18", 1, "none", []string{"rcutree.blimit"}, "want NAME=VALUE"},
		{"6.18", 1, "none", []string{"rcutree.blimit=ten"}, "not an integer"},
		{"6.18", 1, "none", []string{"rcutree.blimit=0"}, "out of range; want 1..LONG_MAX"},
		{"6.18", 1, "none", []string{"rcutree.use_softirq=2"}, "not a bool"},
		{"6.18", 1, "none", []string{"net.core.netdev_unregister_timeout_secs=3601"}, "out of range; want 1..3600"},
		{"2.6.32", 1, "none", []string{"rcupdate.rcu_expedited=1"}, "kernel 2.6.32 lacks it"},
		{"5.10", 1, "none", []string{"net.core.netdev_unregister_timeout_secs=5"}, "it came in 5.13, 5aa3afe107d9"},
		{"6.6", 1, "none", []string{"rcutree.rcu_normal_wake_from_gp=1"}, "it came in 6.10, 988f569ae041"},
		{"5.10", 2, "none", []string{"rcu_nocbs=all"}, "needs CONFIG_RCU_NOCB_CPU=y"},
		{"6.18", 2, "none", []string{"rcu_nocbs=0-3"}, "CPU 2 does not exist"},
		{"6.18", 2, "none", []string{"rcu_nocbs=3-1"}, "runs backwards"},
		{"6.6", 2, "none", []string{"CONFIG_RCU_LAZY=1", "CONFIG_RCU_NOCB_CPU=0"}, "depends on CONFIG_RCU_NOCB_CPU=y"},
		{"6.12", 2, "none", []string{"CONFIG_RCU_LAZY=0", "rcutree.enable_rcu_lazy=1"}, "needs CONFIG_RCU_LAZY=y"},
		{"5.15", 2, "rt", []string{"rcupdate.rcu_normal_after_boot=0"}, "from 5.12 (36221e109eb2) to 5.15 have no such parameter"},
		{"5.10", 2, "rt", []string{"rcupdate.rcu_normal_after_boot=0"}, "patches-rt/0073, rt commit 1f3a70b3086e"},
		{"5.15", 2, "none", []string{"preempt=full"}, "kernel 5.15 lacks it"},
		{"6.1", 2, "rt", []string{"preempt=full"}, "not PREEMPT_DYNAMIC"},
		{"6.18", 2, "rt", []string{"preempt=none"}, "takes preempt=full or lazy only"},
		{"6.12", 2, "none", []string{"preempt=lazy"}, "kernel 6.12 has no PREEMPT_LAZY"},
		{"7.2", 2, "lazy", []string{"preempt=voluntary"}, "cannot run it: PREEMPT_NONE depends on ARCH_NO_PREEMPT"},
		{"6.18", 1, "none", []string{"rcutree.blimit=5", "rcutree.blimit=6"}, "set rcutree.blimit twice"},
		{"2.6.31", 1, "none", []string{"rcutree.blimit=4294967296"}, "out of range on kernel 2.6.31"},
	} {
		_, err := Open(context.Background(), Config{Profile: tc.profile, HZ: 250, CPUs: tc.cpus, Preempt: tc.preempt, Params: tc.params, Ephemeral: true})
		if err == nil || !ndst.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s, %d CPUs, %s, %v) = %v, want a usage error containing %q", tc.profile, tc.cpus, tc.preempt, tc.params, err, tc.want)
		}
	}
}

// TestKnobsChangeTheRun checks that knobs reach their mechanisms: each of
// these changes a run, in the direction the kernel's code says.
func TestKnobsChangeTheRun(t *testing.T) {
	ctx := context.Background()
	del := func(c Config, n int, oneByOne bool) (int64, map[string]int64) {
		t.Helper()
		c.Ephemeral = true
		b, err := Open(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Add(ctx, ndst.AddRequest{Count: n, Template: mustTemplate(t)}); err != nil {
			t.Fatal(err)
		}
		r, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: math.MaxInt32, OneByOne: oneByOne})
		if err != nil && r == nil {
			t.Fatal(err)
		}
		return *r.VirtualNS, r.Counters
	}
	rt := Config{Profile: "6.18", HZ: 250, CPUs: 2, Preempt: "rt"}
	base, _ := del(rt, 20, true)
	// PREEMPT_RT sets rcu_normal after boot; writing 0 to it brings the
	// expedited grace periods back.
	c := rt
	c.Params = []string{"rcupdate.rcu_normal=0"}
	if fast, cs := del(c, 20, true); fast >= base || cs["expedited_gps"] == 0 {
		t.Errorf("6.18 rt one-by-one with rcu_normal=0: %d ns (expedited %d), want faster than %d", fast, cs["expedited_gps"], base)
	}
	// rcu_normal_wake_from_gp (on by default on 2 CPUs) starts the normal
	// grace period of each synchronize_net at once; the callbacks the
	// unregister notifiers queued just before then wait for the next one
	// (they are accelerated only at their CPU's next softirq, when a GP is
	// already running), so netdev_run_todo's rcu_barrier waits one GP more:
	// with it off, the callback of synchronize_net and theirs share a GP.
	c.Params = []string{"rcutree.rcu_normal_wake_from_gp=0"}
	if off, cs := del(c, 20, true); off == base || cs["grace_periods"] == 0 {
		t.Errorf("6.18 rt one-by-one without wake_from_gp: %d ns, the same as with it", off)
	}
	// A longer first FQS wait slows a 2-CPU grace period.
	st := Config{Profile: "6.18", HZ: 250, CPUs: 2, Preempt: "none"}
	b2, _ := del(st, 20, true)
	c = st
	c.Params = []string{"rcutree.jiffies_till_first_fqs=10", "rcutree.jiffies_till_next_fqs=10"}
	if slow, _ := del(c, 20, true); slow <= b2 {
		t.Errorf("6.18 with 10-jiffy FQS waits: %d ns, want slower than %d", slow, b2)
	}
	// Offloading runs callbacks in rcuo kthreads.
	c.Params = []string{"rcu_nocbs=all"}
	if _, cs := del(c, 20, true); cs["callbacks"] == 0 {
		t.Errorf("6.18 rcu_nocbs=all: no callbacks invoked")
	}
	// The warning cadence of a stuck device follows the sysctl.
	stuck := st
	stuck.Holds = []netdev.Hold{{Holder: netdev.HolderRoute, Forever: true}}
	stuck.GiveUp = 30 * 1e9
	_, w10 := del(stuck, 1, false)
	stuck.Params = []string{"net.core.netdev_unregister_timeout_secs=1"}
	_, w1 := del(stuck, 1, false)
	if w1["warnings"] <= w10["warnings"] {
		t.Errorf("warnings with a 1 s timeout: %d, with 10 s: %d", w1["warnings"], w10["warnings"])
	}
}

// TestMaxNetNamespaces checks that the count includes namespaces waiting
// for cleanup.
func TestMaxNetNamespaces(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{Profile: "6.18", HZ: 250, CPUs: 2, Ephemeral: true, Params: []string{knob.MaxNetNamespaces + "=3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 4, LinkTemplate: mustTemplate(t)})
	if err == nil || !strings.Contains(err.Error(), "ENOSPC") {
		t.Fatalf("adding 4 namespaces with user.max_net_namespaces=3: %v, want ENOSPC", err)
	}
}
