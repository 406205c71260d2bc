package main

import (
	"strings"
	"testing"
)

// TestPodChurnGolden: pods at a rate on 6.18 (the cleanup keeps up) and on
// 2.6.32 (the creations wait for net_mutex, which the cleanup holds), with
// the search for the rate at which the node stops keeping up.
func TestPodChurnGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
		want   string
	}{
		{"churn-netns-6.18.txt", []string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "churn", "--netns", "--rate", "20", "--for", "10s", "--no-limit"}, "bounded: the cleanup keeps up"},
		{"churn-netns-6.18-cni.json", []string{"--profile", "6.18", "--cpus", "2", "--hz", "250", "--json", "churn", "--netns", "--rate", "20", "--for", "4s", "--cni", "--no-limit"}, `"keeps_up":true`},
		{"churn-netns-2.6.32.txt", []string{"--profile", "2.6.32", "churn", "--netns", "--rate", "20", "--for", "10s"}, "creations waited for net_mutex"},
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

func TestPodChurnBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"churn", "--netns", "--rate", "0", "--for", "10s"}, "--rate must be above 0"},
		{[]string{"churn", "--netns", "--rate", "100", "--for", "0s"}, "--for must be above 0"},
		{[]string{"churn", "--netns", "--rate", "100000", "--for", "24h"}, "more than 10000000"},
		{[]string{"churn", "--netns", "--rate", "10000", "--for", "900s"}, "memory"},
		{[]string{"churn", "--netns", "--rate", "1", "--for", "1s"}, "fewer than 2 pods"},
		{[]string{"churn", "--netns", "--rate", "10", "--for", "10s", "--cni", "--no-veth"}, "--cni deletes each pod's veth"},
		{[]string{"churn", "--netns", "--rate", "10", "--for", "10s", "-t", "3"}, "--threads would be ignored"},
		{[]string{"churn", "--rate", "10"}, "--rate would be ignored"},
		{[]string{"churn", "--netns", "--rate", "10", "--for", "10s", "--lifetime", "-1s"}, "--lifetime must be between"},
	} {
		_, e, code := ndstRun(t, tempState(t), c.args...)
		if code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("ndst %v = exit %d, %q; want exit 2 with %q", c.args, code, e, c.want)
		}
	}
}
