package main

import (
	"strings"
	"testing"
)

// TestVLANGolden: VLANs and macvlans on an ifb, deleted one by one, as one
// batch, and by deleting their lower device, on 5.10 (a VLAN lets go of
// its lower device at uninit) and 6.18 (at free).
func TestVLANGolden(t *testing.T) {
	for _, c := range []struct {
		golden, line, kind string
		del                []string
		want               string
	}{
		{"vlan-6.18-one-by-one.txt", "6.18", "vlan", []string{"del", "2", "11", "--one-by-one"}, "10 devices deleted one by one"},
		{"vlan-6.18-batch.txt", "6.18", "vlan", []string{"del", "2", "11"}, "10 devices deleted as one batch"},
		{"vlan-6.18-parent.txt", "6.18", "vlan", []string{"-v", "del", "1", "1"}, "the 10 VLANs and macvlans on ifb0 go with it"},
		{"vlan-5.10-parent.txt", "5.10", "vlan", []string{"del", "1", "1"}, "11 devices deleted as one batch"},
		{"macvlan-6.18-parent.txt", "6.18", "macvlan", []string{"-v", "del", "1", "1"}, "the 10 VLANs and macvlans on ifb0 go with it"},
	} {
		state := tempState(t)
		k := []string{"--profile", c.line, "--cpus", "2", "--hz", "250"}
		if _, e, code := ndstRun(t, state, append(k, "--kind", "ifb", "add", "1")...); code != 0 {
			t.Fatalf("add the parent = %d %s", code, e)
		}
		_, e, code := ndstRun(t, state, append(k, "--kind", c.kind, "add", "10", "--parent", "ifb0")...)
		if code != 0 {
			t.Fatalf("add %ss = %d %s", c.kind, code, e)
		}
		list, _, _ := ndstRun(t, state, "list")
		if !strings.Contains(list, c.kind) || strings.Count(list, "\n") < 12 {
			t.Errorf("list after adding 10 %ss:\n%s", c.kind, list)
		}
		out, e, code := ndstRun(t, state, append(k, c.del...)...)
		if code != 0 {
			t.Fatalf("%v = %d %s", c.del, code, e)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s %v lacks %q:\n%s", c.line, c.del, c.want, out)
		}
		golden(t, c.golden, maskWall(out))
	}
}

// TestVLANBadInput: each refused with exit 2, the state unchanged.
func TestVLANBadInput(t *testing.T) {
	state := tempState(t)
	if _, e, c := ndstRun(t, state, "--profile", "6.18", "--kind", "ifb", "add", "1"); c != 0 {
		t.Fatalf("add = %d %s", c, e)
	}
	before, _, _ := ndstRun(t, state, "list")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "vlan", "add", "1", "--parent", "ifb0", "--vlan-id", "4095"}, "VLAN ids 4095..4095: want ids within 1..4094"},
		{[]string{"--kind", "vlan", "add", "2", "--parent", "ifb0", "--vlan-id", "4094"}, "VLAN ids 4094..4095"},
		{[]string{"--kind", "vlan", "add", "1", "--parent", "ifb0", "--vlan-id", "-1"}, "VLAN ids -1..-1"},
		{[]string{"--kind", "vlan", "add", "1", "--parent", "ifb0", "--vlan-id", "0"}, "--vlan-id 0: want ids within 1..4094"},
		{[]string{"--kind", "vlan", "add", "1", "--parent", "eth9"}, "--parent eth9: no such device"},
		{[]string{"--kind", "vlan", "add", "1"}, "--kind vlan needs --parent NAME"},
		{[]string{"add", "1", "--parent", "ifb0"}, "--parent ifb0 applies to --kind vlan or macvlan"},
		{[]string{"--kind", "macvlan", "add", "1", "--parent", "ifb0", "--vlan-id", "3"}, "--vlan-id applies to --kind vlan"},
	} {
		_, e, code := ndstRun(t, state, append([]string{"--profile", "6.18"}, c.args...)...)
		if code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("ndst %v = exit %d, %q; want exit 2 with %q", c.args, code, e, c.want)
		}
	}
	if _, e, c := ndstRun(t, state, "--profile", "6.18", "--kind", "vlan", "add", "1", "--parent", "ifb0", "--vlan-id", "7"); c != 0 {
		t.Fatalf("add VLAN 7 = %d %s", c, e)
	}
	if _, e, c := ndstRun(t, state, "--profile", "6.18", "--kind", "vlan", "add", "1", "--parent", "ifb0", "--vlan-id", "7", "--name", "v%d"); c != 2 || !strings.Contains(e, "VLAN 7 exists on ifb0") {
		t.Errorf("a second VLAN 7 = exit %d, %q; want exit 2, VLAN 7 exists", c, e)
	}
	if _, e, c := ndstRun(t, state, "--profile", "6.18", "--kind", "vlan", "add", "1", "--parent", "ifb0.7"); c != 2 || !strings.Contains(e, "is itself a vlan") {
		t.Errorf("a VLAN on a VLAN = exit %d, %q; want exit 2", c, e)
	}
	ndstRun(t, state, "del", "2", "2")
	if after, _, _ := ndstRun(t, state, "list"); after != before {
		t.Errorf("after the refused adds the list is\n%s\nwant\n%s", after, before)
	}
}
