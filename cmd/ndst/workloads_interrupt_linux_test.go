package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestWorkloadsInterruptedThenOneReset: each workload that makes kernel
// objects, stopped by SIGINT and by SIGKILL partway (a seeded delay),
// leaves only what one reset removes: no namespace, no record, no sender.
func TestWorkloadsInterruptedThenOneReset(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the real kernel")
	}
	type victim struct{ before, cmd string }
	victims := []victim{
		{"", "--backend netlink --kind ifb add 3000 --addr6 2 --addr4 2 --ipv6-forwarding"},
		{"--backend netlink --kind ifb add 1", "--backend netlink --kind macvlan add 2000 --parent ifb0"},
		{"", "--backend netlink unshare 3000 --parallel 8 --lo-up --veth"},
		{"", "--backend netlink churn --netns --rate 100 --for 20s"},
		{"", "--backend netlink netns add 500 --links 2 --addr6 1 --addr4 1 --veth --lo-up"},
		{"--backend netlink netns add 150 --veth --lo-up", "--backend netlink netns del 1 150 --cni"},
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 24))
	t.Logf("seed %d", seed)
	var script strings.Builder
	script.WriteString(leftCheck)
	for i, v := range victims {
		for _, sig := range []string{"INT", "KILL"} {
			delay := 200 + rng.IntN(1000)
			fmt.Fprintf(&script, "echo '== %d: %s, SIG%s after %d ms'\n", i, v.cmd, sig, delay)
			if v.before != "" {
				fmt.Fprintf(&script, "\"$NDST\" %s >/dev/null 2>&1 || echo 'setup failed'\n", v.before)
			}
			fmt.Fprintf(&script, `"$NDST" %s >/dev/null 2>&1 & pid=$!
sleep %d.%03d; kill -%s $pid 2>/dev/null || echo 'it had finished'; wait $pid 2>/dev/null || true
"$NDST" --backend netlink reset >"$T/reset" 2>&1 && echo 'reset ok' || { echo "reset exit $?"; cat "$T/reset"; }
sleep 0.2
left
`, v.cmd, delay/1000, delay%1000, sig)
		}
	}
	out, code := sandbox(t, 10*time.Minute, script.String())
	if code != 0 {
		t.Fatalf("sandbox exit %d:\n%s", code, out)
	}
	t.Logf("\n%s", out)
	for _, block := range strings.Split(out, "== ")[1:] {
		name, _, _ := strings.Cut(block, "\n")
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if !strings.Contains(block, "reset ok") || lines[len(lines)-1] != nothingLeft {
			t.Errorf("%s (seed %d): after one reset, ndst's things are left:\n%s", name, seed, block)
		}
		if strings.Contains(block, "setup failed") {
			t.Errorf("%s: the setup command failed", name)
		}
	}
}
