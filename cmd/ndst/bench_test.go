package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchArgs is a small, quick matrix with a livelocking cell.
var benchArgs = []string{"--watchdog", "2s", "--profile", "2.6.33", "bench", "--strategy", "tick,expedited,barrier",
	"--count", "10,50", "--runs", "2"}

var benchWallRE = regexp.MustCompile(`"(wall_ns|wall_mean_ns|add_wall_mean_ns|add_wall_ns|del_wall_ns)": [0-9.e+-]+`)

func maskBenchWall(s string) string { return benchWallRE.ReplaceAllString(s, `"$1": 0`) }

func TestBenchGoldenTable(t *testing.T) {
	out, errOut, code := ndstRunArgs(benchArgs...)
	if code != 0 {
		t.Fatalf("ndst %v: exit %d, stderr %q", benchArgs, code, errOut)
	}
	golden(t, "bench-table.txt", out)
}

func TestBenchGoldenJSON(t *testing.T) {
	args := append([]string{"--json"}, benchArgs...)
	out, errOut, code := ndstRunArgs(args...)
	if code != 0 {
		t.Fatalf("ndst %v: exit %d, stderr %q", args, code, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("ndst %v: output is not one JSON object: %v", args, err)
	}
	golden(t, "bench.json", maskBenchWall(out))
}

func TestBenchExports(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"--export-json": filepath.Join(dir, "b.json"), "--export-csv": filepath.Join(dir, "b.csv"),
		"--export-markdown": filepath.Join(dir, "b.md"), "--plot": filepath.Join(dir, "b.svg"),
	}
	args := append([]string(nil), benchArgs...)
	for f, p := range files {
		args = append(args, f, p)
	}
	if _, errOut, code := ndstRunArgs(args...); code != 0 {
		t.Fatalf("ndst %v: exit %d, stderr %q", args, code, errOut)
	}
	want := map[string]string{"--export-json": `"results"`, "--export-csv": "backend,profile,strategy",
		"--export-markdown": "| strategy | N |", "--plot": "<svg"}
	for f, p := range files {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), want[f]) {
			t.Errorf("ndst bench %s %s: file has %d bytes (err %v), want it to contain %q", f, p, len(b), err, want[f])
		}
	}
}

// TestBenchBadInput: exit 2, one line, and nothing written (the good export
// path given alongside stays absent).
func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "out.json")
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--strategy", "tick,nap"}, `unknown name "nap"`},
		{[]string{"bench", "--profile", "2.6.30"}, `--profile: unknown name "2.6.30"`},
		{[]string{"bench", "--preempt", "eager"}, `--preempt: unknown name "eager"`},
		{[]string{"bench", "--preempt", "lazy"}, `kernel 2.6.32 has no PREEMPT_LAZY`},
		{[]string{"bench", "--batch", "bulk"}, `--batch: unknown name "bulk"`},
		{[]string{"bench", "--backend", "qemu"}, `--backend: unknown name "qemu"`},
		{[]string{"bench", "--strategy", ""}, "--strategy: empty list"},
		{[]string{"bench", "--count", ""}, "--count: empty list"},
		{[]string{"bench", "--count", "10x"}, `--count: "10x" is not a whole number`},
		{[]string{"bench", "--hz", "0"}, "--hz: 0 is out of range"},
		{[]string{"bench", "--runs", "0"}, "--runs: 0 is out of range"},
		{[]string{"bench", "--count", "1,2,3,4,5,6,7,8,9,10", "--hz", "100,250,1000", "--cpus", "1,2,3,4,5,6,7,8", "--profile", "2.6.31,2.6.33,6.18", "--preempt", "none,full"}, "needs --yes"},
		{[]string{"bench", "--export-csv", filepath.Join(dir, "missing", "x.csv")}, "--export-csv: cannot create"},
		{[]string{"bench", "--export-markdown", filepath.Join(ro, "x.md")}, "--export-markdown: cannot create"},
		{[]string{"bench", "--export-csv", dir}, "is a directory"},
		{[]string{"bench", "--plot", filepath.Join(dir, "p.pdf")}, "want a name ending in .svg or .png"},
		{[]string{"bench", "--export-csv", good}, "both write"},
		{[]string{"bench", "--export-csv", "-", "--export-markdown", "-"}, "only one export may go to stdout"},
		{[]string{"--rcu", "tiny", "bench", "--cpus", "1,2"}, "--rcu tiny"},
		{[]string{"bench", "extra"}, "no arguments"},
	}
	for _, tc := range tests {
		args := append(append([]string(nil), tc.args...), "--export-json", good)
		if os.Geteuid() == 0 && strings.Contains(tc.want, "cannot create") && strings.Contains(strings.Join(tc.args, " "), ro) {
			continue // root writes into read-only directories
		}
		out, errOut, code := ndstRunArgs(args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("ndst %v = exit %d, stdout %q, stderr %q; want exit 2, no output, an error containing %q",
				args, code, out, errOut, tc.want)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("ndst %v: stderr has several lines %q, want one", args, errOut)
		}
		if _, err := os.Stat(good); err == nil {
			t.Fatalf("ndst %v: wrote %s although the input was bad", args, good)
		}
	}
}

// TestBenchSaysWhatItWrote: each file written is named, beside the table, or
// on stderr when stdout carries JSON or an export.
func TestBenchSaysWhatItWrote(t *testing.T) {
	dir := t.TempDir()
	plot, csv := filepath.Join(dir, "p.png"), filepath.Join(dir, "r.csv")
	args := append(append([]string(nil), benchArgs...), "--plot", plot, "--export-csv", csv)
	out, errOut, code := ndstRunArgs(args...)
	if code != 0 || !strings.Contains(out, "wrote "+plot+" (plot)\n") || !strings.Contains(out, "wrote "+csv+" (CSV)\n") || errOut != "" {
		t.Errorf("ndst %v = exit %d, stdout ends %q, stderr %q; want the table and a 'wrote' line per file", args, code, out[max(0, len(out)-200):], errOut)
	}
	out, errOut, code = ndstRunArgs(append([]string{"--json"}, args...)...)
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !strings.Contains(errOut, "ndst: wrote "+plot) {
		t.Errorf("ndst --json %v = exit %d, stderr %q; want one JSON object on stdout and the 'wrote' lines on stderr", args, code, errOut)
	}
	out, _, code = ndstRunArgs(append(append([]string(nil), benchArgs...), "--export-csv", "-")...)
	if code != 0 || !strings.HasPrefix(out, "backend,profile,strategy") {
		t.Errorf("bench --export-csv - printed %.80q..., want only the CSV on stdout", out)
	}
}
