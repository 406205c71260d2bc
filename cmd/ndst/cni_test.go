package main

import (
	"strings"
	"testing"
)

// TestNetnsDelCNIGolden: 10 pods with a veth pair deleted as a CNI plugin's
// DEL does (the veth, waited for, then the namespace), and the same pods
// deleted by their namespaces alone.
func TestNetnsDelCNIGolden(t *testing.T) {
	k := []string{"--profile", "6.18", "--cpus", "2", "--hz", "250"}
	for _, c := range []struct {
		golden string
		del    []string
		want   string
	}{
		{"netns-del-cni.txt", []string{"netns", "del", "1", "10", "--cni"}, "for its veth's delete"},
		{"netns-del-cni-alone.txt", []string{"netns", "del", "1", "10"}, "deleted at once"},
	} {
		state := tempState(t)
		if _, e, code := ndstRun(t, state, append(k, "netns", "add", "10", "--veth", "--lo-up")...); code != 0 {
			t.Fatalf("netns add = %d %s", code, e)
		}
		out, e, code := ndstRun(t, state, append(k, c.del...)...)
		if code != 0 {
			t.Fatalf("%v = %d %s", c.del, code, e)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%v lacks %q:\n%s", c.del, c.want, out)
		}
		golden(t, c.golden, maskWall(out))
	}
	if _, e, code := ndstRun(t, tempState(t), "netns", "del", "1", "2", "--cni", "--one-at-a-time"); code != 2 || !strings.Contains(e, "choose one") {
		t.Errorf("--cni --one-at-a-time = exit %d, %q; want exit 2", code, e)
	}
}

// TestOneByOneNames: netns del and advise take --one-by-one, the name del
// and bench use for the same idea; --one-at-a-time, the earlier spelling,
// still works and is hidden from the help.
func TestOneByOneNames(t *testing.T) {
	state := tempState(t)
	for _, flag := range []string{"--one-by-one", "--one-at-a-time"} {
		if _, e, code := ndstRun(t, state, "netns", "add", "2"); code != 0 {
			t.Fatal(e)
		}
		out, e, code := ndstRun(t, state, "--json", "netns", "del", "1", "2", flag)
		if code != 0 || !strings.Contains(out, `"style":"one-by-one"`) {
			t.Errorf("netns del %s = exit %d, %q %q; want style one-by-one", flag, code, out, e)
		}
	}
	help, _, _ := ndstRun(t, state, "netns", "del", "--help")
	if !strings.Contains(help, "--one-by-one") || strings.Contains(help, "--one-at-a-time") {
		t.Errorf("netns del --help should name --one-by-one only:\n%s", help)
	}
	if _, e, code := ndstRun(t, state, "netns", "del", "1", "2", "--cni", "--one-by-one"); code != 2 || !strings.Contains(e, "--one-by-one and --cni") {
		t.Errorf("--cni --one-by-one = exit %d, %q", code, e)
	}
}
