package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestIproute2Habits: -j is --json, -n NS is --netns (before or after the
// command), churn keeps its own -n, and del --match chooses devices by name.
func TestIproute2Habits(t *testing.T) {
	state := tempState(t)
	if _, e, code := ndstRun(t, state, "netns", "add", "2", "--links", "3"); code != 0 {
		t.Fatal(e)
	}
	for _, args := range [][]string{{"-j", "-n", "ndst2", "list"}, {"list", "-n", "ndst2", "-j"}} {
		out, e, code := ndstRun(t, state, args...)
		var r struct {
			Count   int `json:"count"`
			Devices []struct {
				Name string `json:"name"`
			} `json:"devices"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Count != 4 {
			t.Errorf("%v = exit %d, %q %q; want ndst2's 4 devices as JSON", args, code, out, e)
		}
	}
	if _, e, code := ndstRun(t, state, "churn", "-t", "1", "-n", "10", "-l", "0.02"); code != 0 {
		t.Errorf("churn -n 10 = exit %d: %s", code, e)
	}
	if _, e, code := ndstRun(t, state, "add", "30"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := ndstRun(t, state, "-j", "del", "--match", "dummy2?")
	var r struct {
		Count int `json:"count"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Count != 10 {
		t.Errorf("del --match dummy2? = exit %d, %q %q; want 10 deleted", code, out, e)
	}
	if _, e, code := ndstRun(t, state, "del", "--match", "[x"); code != 2 || !strings.Contains(e, "shell pattern") {
		t.Errorf("del --match '[x' = exit %d, %q; want a usage error", code, e)
	}
}

// TestTimeoutAndGiveUp: --give-up is the emulated kernel's bound (virtual
// time), --timeout the real kernel's (wall time, del only); each is
// refused where it would do nothing.
func TestTimeoutAndGiveUp(t *testing.T) {
	for _, args := range [][]string{
		{"--timeout", "5s", "add", "1"},
		{"--backend", "netlink", "--timeout", "5s", "list"},
		{"--backend", "netlink", "--timeout", "5s", "--give-up", "3s", "del", "1", "2"},
		{"--backend", "netlink", "--timeout", "-1s", "del", "1", "2"},
	} {
		if _, e, code := ndstRunArgs(args...); code != 2 || !strings.Contains(e, "--timeout") {
			t.Errorf("%v = exit %d, %q; want a usage error naming --timeout", args, code, e)
		}
	}
}
