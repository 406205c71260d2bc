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
