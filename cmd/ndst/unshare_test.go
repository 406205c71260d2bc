package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnshareGolden: namespaces that die with their process on 6.18 as this
// project's host runs (creations never wait for the cleanup) and on 2.6.32
// (they wait for net_mutex while a cleanup runs).
func TestUnshareGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
		want   string
	}{
		{"unshare-6.18.txt", []string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "unshare", "200", "--parallel", "8", "--lo-up", "--veth"}, "no creation waited for the cleanup"},
		{"unshare-2.6.32.txt", []string{"--profile", "2.6.32", "unshare", "20", "--parallel", "4", "--lo-up"}, "creations waited for a running cleanup"},
		{"unshare-6.18.json", []string{"--profile", "6.18", "--json", "unshare", "20", "--parallel", "2"}, `"pernet_lock":"pernet_ops_rwsem"`},
	} {
		out, e, code := ndstRun(t, tempState(t), c.args...)
		if code != 0 {
			t.Fatalf("%v = exit %d, %s", c.args, code, e)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%v lacks %q:\n%s", c.args, c.want, out)
		}
		golden(t, c.golden, maskWall(out))
	}
}

func TestUnshareBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"unshare", "0"}, "namespace count must be at least 1"},
		{[]string{"unshare", "10", "--parallel", "0"}, "--parallel must be between 1 and 1024"},
		{[]string{"unshare", "10", "--parallel", "2000"}, "--parallel must be between 1 and 1024"},
		{[]string{"unshare", "10", "--veth-name", "a%db%d"}, "exactly one %d"},
		{[]string{"--netns", "x", "unshare", "10"}, "--netns would be ignored"},
	} {
		_, e, code := ndstRun(t, tempState(t), c.args...)
		if code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("ndst %v = exit %d, %q; want exit 2 with %q", c.args, code, e, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "module", "unshare", "10"}, "--backend module has no unshare"},
		{[]string{"--backend", "netlink", "--hz", "100", "unshare", "10"}, "--hz would be ignored"},
	} {
		var o, e bytes.Buffer
		if code := run(c.args, &o, &e); code != 2 || !strings.Contains(e.String(), c.want) {
			t.Errorf("ndst %v = exit %d, %q; want exit 2 with %q", c.args, code, e.String(), c.want)
		}
	}
}
