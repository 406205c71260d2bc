package main

import (
	"strings"
	"testing"
)

// TestBenchWorkloadGolden: each workload's bench cells on the emulated
// kernel, small, one run each; a bad workload name exits 2.
func TestBenchWorkloadGolden(t *testing.T) {
	m := []string{"bench", "--profile", "6.18", "--hz", "250", "--cpus", "2", "--strategy", "backoff", "--runs", "1"}
	for _, c := range []struct {
		golden string
		args   []string
		want   string
	}{
		{"bench-workload-addrs.txt", []string{"--kind", "ifb", "--workload", "addrs", "--addr6", "1", "--ipv6-forwarding", "--count", "20", "--batch", "batched,one-by-one"}, "IPv6"},
		{"bench-workload-children.txt", []string{"--workload", "children", "--child", "vlan", "--count", "20"}, "VLAN"},
		{"bench-workload-unshare.txt", []string{"--workload", "unshare", "--parallel", "4", "--count", "100"}, "unshare"},
		{"bench-workload-churn.txt", []string{"--workload", "churn", "--rate", "20", "--for", "3s", "--count", "1"}, "pods at 20 a second"},
	} {
		out, e, code := ndstRun(t, tempState(t), append(m, c.args...)...)
		if code != 0 {
			t.Fatalf("bench %v = exit %d: %s", c.args, code, e)
		}
		if !strings.Contains(strings.ToLower(out), strings.ToLower(c.want)) {
			t.Errorf("bench %v lacks %q:\n%s", c.args, c.want, out)
		}
		golden(t, c.golden, maskWall(out))
	}
	if _, e, code := ndstRun(t, tempState(t), append(m, "--workload", "pods")...); code != 2 || !strings.Contains(e, "want addrs, children, unshare or churn") {
		t.Errorf("bench --workload pods = exit %d, %q; want exit 2", code, e)
	}
}
