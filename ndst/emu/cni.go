package emu

import (
	"fmt"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	ph "github.com/ndst-project/ndst/phase"
	"github.com/ndst-project/ndst/sim"
)

// cniDelVeth is the reference CNI plugins' DEL inside namespace n
// (ip.DelLinkByName of the pod's interface, in the namespace): one
// RTM_DELLINK of the inner veth end, under RTNL, which veth_dellink makes a
// batch of both ends; the request returns only after rtnl_unlock's
// netdev_run_todo has waited for and freed them. The request goes on a
// netlink socket opened in n and closed after it, whose reference to n
// goes with the socket's RCU-deferred free (netdev/socket.go): n's cleanup
// is queued then, not at its delete, so it runs beside the next pod's DEL,
// and the two meet at rcu_barrier()'s mutex. It reports whether n had a
// veth to delete.
func cniDelVeth(t *sim.Task, ns *netdev.Namespaces, n *netdev.Netns, sys sim.Time, lat *[]int64) bool {
	var inner *netdev.Device
	n.Reg.Range(func(d *netdev.Device) bool {
		if ns.Kind(d) == netdev.KindVeth {
			inner = d
			return false
		}
		return true
	})
	if inner == nil {
		return false
	}
	host := ns.Host()
	ns.OpenSocket(n)
	s := t.Now()
	host.RTNLLock(t)
	host.UnregisterMany(t, ns.WithPeers([]*netdev.Device{inner}))
	host.RTNLUnlock(t)
	returnToUser(t)
	if lat != nil {
		*lat = append(*lat, int64(t.Now()-s))
	}
	ns.CloseSocket(t, n)
	return true
}

// explainCNI is the sentence under a --cni delete: what the pods' own
// veth deletes cost the deleting task, from its phases, beside the
// namespace deletes that leave the veth to the cleanup.
func explainCNI(res *ndst.Result) []string {
	n := res.Netns
	if res.Result != ndst.ResultOK || n == nil || n.Style != ndst.StyleCNI || n.Namespaces == 0 {
		return nil
	}
	var wait, all int64
	for _, p := range res.Phases {
		all += p.TotalNS()
		switch p.Name {
		case ph.Barrier, ph.SyncNet, ph.SyncNetExp, ph.WaitLoop, ph.RTNL:
			wait += p.WaitNS
		}
	}
	return []string{fmt.Sprintf("the deleting task waited %s a pod (%.0f%% of its %s) for its veth's delete: RTNL, the expedited grace periods and netdev_run_todo's rcu_barrier(), before the namespace could go; without --cni each namespace's delete returns at once and its veth goes with its cleanup, shared with the other namespaces of the run",
		dur(wait/int64(n.Namespaces)), 100*float64(wait)/float64(max(all, 1)), dur(all))}
}
