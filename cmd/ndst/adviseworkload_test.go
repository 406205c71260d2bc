package main

import (
	"strings"
	"testing"
)

// TestAdviseWorkloads: advise accepts every workload of bench's workload
// cells and finds the workload change each one has.
func TestAdviseWorkloads(t *testing.T) {
	k := []string{"--profile", "6.18", "--hz", "250", "--cpus", "2", "advise"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--count", "20", "--addr6", "1", "--ipv6-forwarding", "--one-by-one"}, []string{"each up, 1 IPv6 address, IPv6 forwarding", "IPv6 forwarding off on the devices to delete"}},
		{[]string{"--count", "20", "--child", "macvlan"}, []string{"20 macvlans on a device deleted one by one", "delete the lower device instead", "delete the children in one batch"}},
		{[]string{"--count", "20", "--child", "vlan", "--child-del", "stream"}, []string{"in one request stream", "delete the lower device instead"}},
		{[]string{"--netns-count", "20", "--veth", "--lo-up", "--cni"}, []string{"as a CNI plugin's DEL does", "leave each pod's veth to its namespace's cleanup"}},
		{[]string{"--netns-count", "50", "--unshare", "--parallel", "4"}, []string{"50 namespaces made by 4 workers that unshare and exit"}},
	} {
		out, e, code := ndstRun(t, tempState(t), append(k, c.args...)...)
		if code != 0 {
			t.Fatalf("advise %v = exit %d, %s", c.args, code, e)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("advise %v lacks %q:\n%s", c.args, w, out)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--count", "20", "--child", "ipvlan"}, "--child \"ipvlan\": want vlan or macvlan"},
		{[]string{"--count", "20", "--child", "macvlan", "--child-del", "later"}, "--child-del \"later\""},
		{[]string{"--count", "5000", "--child", "vlan"}, "at most 4094 VLANs"},
		{[]string{"--netns-count", "20", "--cni"}, "give --veth"},
		{[]string{"--unshare"}, "--unshare: give --netns-count N"},
		{[]string{"--churn-rate", "0"}, "the workload has no devices"},
		{[]string{"--churn-rate", "-3"}, "--rate must be above 0"},
	} {
		_, e, code := ndstRun(t, tempState(t), append(k, c.args...)...)
		if code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("advise %v = exit %d, %q; want exit 2 with %q", c.args, code, e, c.want)
		}
	}
}
