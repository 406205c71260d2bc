package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCounterLegend: every counter the emulated kernel's runs print, and
// every counter the real backends set, is in `ndst help counters`.
func TestCounterLegend(t *testing.T) {
	keys := map[string]bool{}
	state := tempState(t)
	for _, args := range [][]string{
		{"--json", "--profile", "6.18", "add", "20", "--addr6", "1"},
		{"--json", "--profile", "6.18", "del", "1", "30"},
		{"--json", "add", "20"},
		{"--json", "del", "1", "30"},
		{"--json", "--profile", "6.18", "netns", "add", "3", "--veth", "--lo-up"},
		{"--json", "--profile", "6.18", "netns", "del", "1", "3"},
		{"--json", "--profile", "6.18", "--param", "rcutree.enable_rcu_lazy=1", "add", "5"},
		{"--json", "--profile", "6.18", "--param", "rcutree.enable_rcu_lazy=1", "del", "1", "10"},
	} {
		out, errOut, code := ndstRun(t, state, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var r struct {
			Counters map[string]json.Number `json:"counters"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for k := range r.Counters {
			keys[k] = true
		}
	}
	// The real backends' counters, from their sources.
	re := regexp.MustCompile(`Counters\["([a-z0-9_]+)"\]|Counters = map\[string\]int64\{"([a-z0-9_]+)"`)
	for _, dir := range []string{"../../ndst/nlbackend", "../../ndst/modbackend"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				keys[m[1]+m[2]] = true
			}
		}
	}
	if len(keys) < 40 {
		t.Fatalf("only %d counters found: %v", len(keys), keys)
	}
	for k := range keys {
		if _, ok := counterLegend(k); !ok {
			t.Errorf("counter %q is not in ndst help counters", k)
		}
	}
	out, _, code := ndstRunArgs("help", "counters")
	if code != 0 || !strings.Contains(out, "grace_periods") || !strings.Contains(out, "cleanup_runs") {
		t.Errorf("ndst help counters = exit %d:\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := ndstRunArgs("--version")
	if code != 0 || !strings.HasPrefix(out, "ndst ") || !strings.Contains(out, "go1") {
		t.Errorf("ndst --version = exit %d, %q", code, out)
	}
}
