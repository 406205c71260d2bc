package stacks

import (
	"slices"
	"testing"

	"github.com/ndst-project/ndst/phase"
	"pgregory.net/rapid"
)

// Stacks as this host's 6.18 kernel showed them for `ip link del`.
const (
	barrierStack = `[<0>] rcu_barrier+0x1c6/0x2a0
[<0>] netdev_run_todo+0x6b/0x560
[<0>] rtnl_dellink+0x2b3/0x3c0
[<0>] netlink_rcv_skb+0x58/0x100
[<0>] netlink_unicast+0x25e/0x390
[<0>] netlink_sendmsg+0x206/0x440
[<0>] ____sys_sendmsg+0x361/0x390
[<0>] ___sys_sendmsg+0x7d/0xc0
[<0>] __sys_sendmsg+0x6d/0xc0
[<0>] do_syscall_64+0x71/0x280
[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e
`
	expStack = `[<0>] synchronize_rcu_expedited+0x1ab/0x1f0
[<0>] unregister_netdevice_many_notify+0x3a5/0xa80
[<0>] rtnl_dellink+0x23d/0x3c0
[<0>] netlink_rcv_skb+0x58/0x100
`
)

func TestFrames(t *testing.T) {
	got := Frames([]byte(expStack))
	want := []string{"synchronize_rcu_expedited", "unregister_netdevice_many_notify", "rtnl_dellink", "netlink_rcv_skb"}
	if !slices.Equal(got, want) {
		t.Errorf("Frames() = %q, want %q", got, want)
	}
	if got := Frames(nil); len(got) != 0 {
		t.Errorf("Frames(empty) = %q, want none", got)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		frames []string
		want   string
	}{
		{Frames([]byte(barrierStack)), phase.Barrier},
		{Frames([]byte(expStack)), phase.SyncNetExp},
		{[]string{"msleep", "netdev_wait_allrefs_any", "netdev_run_todo", "rtnl_dellink"}, phase.WaitLoop},
		{[]string{"msleep", "netdev_run_todo", "rtnl_dellink"}, phase.WaitLoop}, // netdev_wait_allrefs_any inlined
		{[]string{"rcu_barrier", "netdev_wait_allrefs_any", "netdev_run_todo"}, phase.Barrier},
		{[]string{"__wait_rcu_gp", "synchronize_rcu", "synchronize_net", "dev_deactivate_many"}, phase.SyncNet},
		{[]string{"__mutex_lock.constprop.0", "rtnl_lock", "rtnetlink_rcv_msg"}, phase.RTNL},
		{[]string{"kobject_put", "netdev_run_todo", "rtnl_dellink"}, phase.Free},
		{[]string{"__cond_resched", "dev_shutdown", "unregister_netdevice_many_notify"}, phase.Unregister},
		{[]string{"kmem_cache_alloc_node", "__alloc_skb", "netlink_sendmsg"}, phase.Syscall},
		{[]string{"do_setlink.isra.0", "rtnl_setlink"}, phase.Other},
		{[]string{"rcu_barrier.part.0"}, phase.Barrier},
		{nil, Running},
	} {
		if got := Classify(tc.frames); got != tc.want {
			t.Errorf("Classify(%q) = %q, want %q", tc.frames, got, tc.want)
		}
	}
}

func total(a *Acc) (sum int64) {
	for _, p := range a.Phases() {
		sum += p.TotalNS()
	}
	return sum
}

func split(a *Acc) map[string][2]int64 {
	m := map[string][2]int64{}
	for _, p := range a.Phases() {
		m[p.Name] = [2]int64{p.CPUNS, p.WaitNS}
	}
	return m
}

// A one-by-one delete as on this host: 0.1 ms of CPU, then rcu_barrier()
// until 16 ms, sampled every millisecond.
func TestAddOneByOne(t *testing.T) {
	a := NewAcc()
	w := Window{T0: 1000, T1: 1000 + 16e6, CPU0: 5e6, CPU1: 5e6 + 1e5, Running: phase.Unregister}
	var ss []Sample
	for i := int64(1); i <= 15; i++ {
		ss = append(ss, Sample{T: 1000 + i*1e6, CPU: 5e6 + 1e5, Phase: phase.Barrier})
	}
	ss = append(ss, Sample{T: 1000 + 17e6, CPU: 5e6 + 1e5, Phase: phase.Barrier}) // after the window: ignored
	a.Add(w, ss)
	got := split(a)
	if got[phase.Unregister] != [2]int64{1e5, 0} || got[phase.Barrier] != [2]int64{0, 16e6 - 1e5} || total(a) != 16e6 {
		t.Errorf("phases = %v, want unregister 0.1 ms CPU and rcu_barrier the rest waiting", got)
	}
	if a.SampleCount() != 15 || a.Unsampled != 0 {
		t.Errorf("samples %d, unsampled %d; want 15, 0", a.SampleCount(), a.Unsampled)
	}
}

func TestAddMixedAndUnsampled(t *testing.T) {
	a := NewAcc()
	// Running for the first half (empty stacks), expedited GP wait after.
	w := Window{T0: 0, T1: 4e6, CPU0: 0, CPU1: 2e6, Running: phase.Unregister}
	a.Add(w, []Sample{{T: 1e6, CPU: 1e6, Phase: Running}, {T: 3e6, CPU: 2e6, Phase: phase.SyncNetExp}})
	// A short request no sample fell in.
	a.Add(Window{T0: 5e6, T1: 5.3e6, CPU0: 2e6, CPU1: 2.1e6, Running: phase.Unregister}, nil)
	got := split(a)
	// Between the samples the clock shows 1 ms of CPU in 2 ms: each sample
	// takes half of either; the expedited wait's CPU is the running phase's.
	if got[phase.Unregister] != [2]int64{2.1e6, 0.5e6} || got[phase.SyncNetExp] != [2]int64{0, 1.5e6} || got[phase.Other] != [2]int64{0, 0.2e6} {
		t.Errorf("phases = %v", got)
	}
	if a.Unsampled != 1 || a.TotalNS != 4.3e6 || total(a) != 4.3e6 {
		t.Errorf("unsampled %d, total %d (phases %d); want 1, 4.3 ms", a.Unsampled, a.TotalNS, total(a))
	}
}

// TestAddSums: whatever the samples, a window's phases sum to its
// duration and its CPU share to its CPU time.
func TestAddSums(t *testing.T) {
	names := append([]string{Running}, phase.All...)
	rapid.Check(t, func(t *rapid.T) {
		a := NewAcc()
		var want int64
		t0 := int64(0)
		for range rapid.IntRange(1, 5).Draw(t, "windows") {
			d := rapid.Int64Range(0, 1e9).Draw(t, "d")
			c := rapid.Int64Range(-10, 2e9).Draw(t, "cpu")
			var ss []Sample
			for range rapid.IntRange(0, 40).Draw(t, "n") {
				ss = append(ss, Sample{T: rapid.Int64Range(t0-5, t0+d+5).Draw(t, "t"),
					CPU: rapid.Int64Range(-10, 2e9).Draw(t, "c"), Phase: rapid.SampledFrom(names).Draw(t, "p")})
			}
			slices.SortFunc(ss, func(x, y Sample) int { return int(x.T - y.T) })
			a.Add(Window{T0: t0, T1: t0 + d, CPU0: 0, CPU1: c, Running: phase.Unregister}, ss)
			want += d
			t0 += d + 7
		}
		var cpu int64
		for _, p := range a.Phases() {
			if p.CPUNS < 0 || p.WaitNS < 0 {
				t.Fatalf("negative phase %+v", p)
			}
			cpu += p.CPUNS
		}
		if total(a) != want || cpu != a.CPUNS || cpu > want {
			t.Fatalf("phases sum to %d (CPU %d, counted %d), want %d: %+v", total(a), cpu, a.CPUNS, want, a.Phases())
		}
	})
}
