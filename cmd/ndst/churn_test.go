package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestChurnJSON(t *testing.T) {
	for _, locking := range []string{"rtnl", "netns", "split"} {
		out, errOut, code := ndstRunArgs("churn", "-t", "2", "-n", "50", "-l", "0.05",
			"--locking", locking, "--namespaces", "2", "--listers", "1", "--json")
		if code != 0 {
			t.Fatalf("churn --locking %s exit = %d, want 0; stderr %s", locking, code, errOut)
		}
		var j churnJSON
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("churn --json output %q: %v", out, err)
		}
		var sum int64
		for _, n := range j.PerThread {
			sum += n
		}
		if j.Op != "churn" || j.Result != "ok" || j.Locking != locking || j.Ops == 0 || j.Ops != sum ||
			j.Ops != j.Creates+j.Destroys || len(j.PerThread) != 2 || j.Limit == "" {
			t.Errorf("churn --locking %s --json = %+v; want op churn, result ok, ops > 0 adding up, 2 threads, a limit", locking, j)
		}
	}
}

func TestChurnText(t *testing.T) {
	out, errOut, code := ndstRunArgs("churn", "-t", "2", "-n", "20", "-l", "0.03")
	if code != 0 {
		t.Fatalf("churn exit = %d, want 0; stderr %s", code, errOut)
	}
	for _, want := range []string{"churn:", "ops:", "rate:", "locks:", "limit:"} {
		if !strings.Contains(out, want) {
			t.Errorf("churn output lacks %q:\n%s", want, out)
		}
	}
}

func TestChurnUsage(t *testing.T) {
	tests := [][]string{
		{"churn", "-t", "0"},
		{"churn", "-n", "0"},
		{"churn", "-t", "8", "-n", "4"},
		{"churn", "-l", "0"},
		{"churn", "-l", "-3"},
		{"churn", "-l", "NaN"},
		{"churn", "--locking", "giant"},
		{"churn", "--alloc", "tree"},
		{"churn", "--namespaces", "0"},
		{"churn", "--work", "-1s"},
		{"churn", "extra"},
		{"--backend", "netlink", "churn"},
	}
	for _, args := range tests {
		out, errOut, code := ndstRunArgs(args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "ndst: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ndst %s = exit %d, stdout %q, stderr %q; want exit 2, one-line error", strings.Join(args, " "), code, out, errOut)
		}
	}
}
