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

// TestChurnMemoryBound: a run that cannot fit is refused at once with the
// estimate and the flag that overrides it (exit 1, not the usage code 2),
// and a run that outgrows its bound stops with exit 1 and its result.
func TestChurnMemoryBound(t *testing.T) {
	_, errOut, code := ndstRunArgs("churn", "-t", "16", "--namespaces", "16", "-n", "10000000", "--max-memory", "4GiB")
	for _, want := range []string{"160000000 devices", "need about 59.7 GiB", "more than the 4.0 GiB allowed", "raise --max-memory"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("churn of 160M devices under 4GiB = exit %d, %q; want exit 1 containing %q", code, errOut, want)
		}
	}
	out, errOut, code := ndstRunArgs("churn", "-t", "2", "-n", "20", "-l", "30", "--max-memory", "1MiB", "--json")
	var j churnJSON
	if code != 1 || json.Unmarshal([]byte(out), &j) != nil || j.Result != "error" || !strings.Contains(j.Error, "stopped after") {
		t.Errorf("churn above --max-memory = exit %d, %q %q; want exit 1 and a JSON result saying it stopped", code, out, errOut)
	}
	for _, bad := range []string{"4X", "-1G", "NaN", "1e30G"} {
		if _, errOut, code := ndstRunArgs("churn", "--max-memory", bad); code != 2 || !strings.Contains(errOut, "--max-memory") {
			t.Errorf("churn --max-memory %s = exit %d, %q; want a usage error", bad, code, errOut)
		}
	}
	if _, errOut, code := ndstRunArgs("churn", "-n", "10000000", "--namespaces", "1024"); code != 2 || !strings.Contains(errOut, "namespaces 1024 is more than threads 4") {
		t.Errorf("churn --namespaces 1024 with 4 threads = exit %d, %q; want a usage error", code, errOut)
	}
}
