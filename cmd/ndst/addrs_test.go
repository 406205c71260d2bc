package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAddrsGolden: the shape 0e4be9e57e8c was measured on (devices up with
// an IPv6 address each, IPv6 forwarding, deleted one by one) on line 5.10
// with the 5.4 wait loop (msleep250) and with its own (backoff), and on 6.18
// as this project's host runs it (ifb, 2 CPUs, HZ=250), with and without
// forwarding.
func TestAddrsGolden(t *testing.T) {
	cases := []struct {
		golden string
		add    []string
		del    []string
		want   string // a phrase the explanation must carry
	}{
		{"addr6-fwd-5.10-msleep250.txt", []string{"--profile", "5.10", "add", "100", "--addr6", "1", "--ipv6-forwarding"},
			[]string{"--profile", "5.10", "--strategy", "msleep250", "del", "1", "100", "--one-by-one"}, "(route)"},
		{"addr6-fwd-5.10-backoff.txt", []string{"--profile", "5.10", "add", "100", "--addr6", "1", "--ipv6-forwarding"},
			[]string{"--profile", "5.10", "-v", "del", "1", "100", "--one-by-one"}, "100 of 100 devices were ready only after a second grace period"},
		{"addr6-6.18-ifb.txt", []string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "--kind", "ifb", "add", "20", "--addr6", "1", "--addr4", "1"},
			[]string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "del", "1", "20", "--one-by-one"}, "rcu_barrier()"},
		{"addr6-fwd-6.18-ifb.txt", []string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "--kind", "ifb", "add", "20", "--addr6", "1", "--ipv6-forwarding"},
			[]string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "--json", "del", "1", "20", "--one-by-one"}, `"last_ref_nested_rcu":20`},
	}
	for _, c := range cases {
		state := tempState(t)
		out, errOut, code := ndstRun(t, state, c.add...)
		if code != 0 {
			t.Fatalf("%v = exit %d, %s", c.add, code, errOut)
		}
		if !strings.Contains(out, "each device up") {
			t.Errorf("%v does not say how the devices were set up:\n%s", c.add, out)
		}
		out, errOut, code = ndstRun(t, state, c.del...)
		if code != 0 {
			t.Fatalf("%v = exit %d, %s", c.del, code, errOut)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%v lacks %q:\n%s", c.del, c.want, out)
		}
		golden(t, c.golden, maskWall(out))
	}
}

// TestAddrsForwardingCostsAGracePeriod: with forwarding, each one-by-one
// delete waits one more rcu_barrier() than without, on every modelled line.
func TestAddrsForwardingCostsAGracePeriod(t *testing.T) {
	for _, line := range []string{"5.10", "6.1", "6.18"} {
		var got [2]int64
		for i, fwd := range []bool{false, true} {
			state := tempState(t)
			add := []string{"--profile", line, "--hz", "250", "add", "10", "--addr6", "1"}
			if fwd {
				add = append(add, "--ipv6-forwarding")
			}
			if _, e, c := ndstRun(t, state, add...); c != 0 {
				t.Fatalf("%v = %d %s", add, c, e)
			}
			r := runJSON(t, state, "--profile", line, "--hz", "250", "--json", "del", "1", "10", "--one-by-one")
			got[i] = int64(r["counters"].(map[string]any)["rcu_barriers"].(float64))
		}
		if got[1] != got[0]+10 {
			t.Errorf("line %s: rcu_barriers without forwarding %d, with %d; want 10 more (one a device)", line, got[0], got[1])
		}
	}
}

// runJSON runs a --json command that must succeed and decodes its object.
func runJSON(t *testing.T, state string, args ...string) map[string]any {
	t.Helper()
	out, errOut, code := ndstRun(t, state, args...)
	if code != 0 {
		t.Fatalf("%v = exit %d, %s", args, code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v printed %q: %v", args, out, err)
	}
	return m
}

// TestNetnsAddrsGolden: namespaces whose links are up with addresses; on
// 5.10 forwarding's anycast cascade makes their cleanup later; a line
// without addresses, or addresses without links, exit 2 with nothing made.
func TestNetnsAddrsGolden(t *testing.T) {
	var done [2]int64
	for i, fwd := range []bool{false, true} {
		state := tempState(t)
		add := []string{"--profile", "5.10", "--hz", "250", "--cpus", "2", "netns", "add", "10", "--links", "2", "--addr6", "1", "--lo-up"}
		if fwd {
			add = append(add, "--ipv6-forwarding")
		}
		out, e, c := ndstRun(t, state, add...)
		if c != 0 || !strings.Contains(out, "each link up, 1 IPv6 address") {
			t.Fatalf("%v = exit %d, %s%s", add, c, out, e)
		}
		out, e, c = ndstRun(t, state, "--profile", "5.10", "--hz", "250", "--cpus", "2", "--json", "netns", "del", "1", "10")
		if c != 0 {
			t.Fatalf("netns del = exit %d, %s", c, e)
		}
		var r struct {
			Netns struct {
				DoneNS int64 `json:"done_ns"`
			} `json:"netns"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Netns.DoneNS == 0 {
			t.Fatalf("netns del --json: %v (done %d):\n%s", err, r.Netns.DoneNS, out)
		}
		done[i] = r.Netns.DoneNS
		if fwd {
			golden(t, "netns-addr6-fwd-5.10.json", maskWall(out))
		}
	}
	if done[1] <= done[0] {
		t.Errorf("cleanup done %d ns with forwarding, %d without: want later with it", done[1], done[0])
	}
	state := tempState(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "2.6.32", "netns", "add", "2", "--links", "1", "--addr6", "1"}, "kernel line 2.6.32 is modelled without addresses"},
		{[]string{"--profile", "6.18", "netns", "add", "2", "--addr6", "1"}, "give --links K"},
	} {
		if _, e, code := ndstRun(t, state, c.args...); code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("ndst %v = exit %d, %q; want exit 2 with %q", c.args, code, e, c.want)
		}
	}
	if out, _, _ := ndstRun(t, state, "netns", "list"); !strings.Contains(out, "0 namespaces") {
		t.Errorf("a refused netns add left namespaces:\n%s", out)
	}
}
