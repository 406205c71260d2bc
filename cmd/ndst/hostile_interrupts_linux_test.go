package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The hostile suite, interrupts: what a signal at any point leaves on the
// real kernel. Every script runs in the sandbox (sandbox_linux_test.go),
// so nothing here can touch the machine's /run/netns or /run/ndst.

// leftCheck prints what ndst left: the namespaces under /run/netns, the
// records under /run/ndst/netns and the sender processes of the sandbox
// still running.
const leftCheck = `few() { tr '\n' ' ' | cut -c1-60; }
# sender processes in this sandbox (its mount namespace), not the machine's
senders() {
  for p in $(pgrep -f '^ndst-sender'); do
    [ "$(readlink /proc/$p/ns/mnt)" = "$(readlink /proc/self/ns/mnt)" ] && echo $p
  done
}
left() {
  printf 'netns=%s[%s] records=%s[%s] senders=[%s]\n' "$(ls -A /run/netns 2>/dev/null | wc -l)" "$(ls -A /run/netns 2>/dev/null | few)" \
    "$(ls -A /run/ndst/netns 2>/dev/null | wc -l)" "$(ls -A /run/ndst/netns 2>/dev/null | few)" "$(senders | few)"
}
`

// nothingLeft is left's line when nothing is.
const nothingLeft = "netns=0[] records=0[] senders=[]"

// waitFor is a shell function that waits (up to its second argument in
// tenths of a second) until /run/netns has at least its first argument
// entries.
const waitFor = `waitfor() {
  i=0
  while [ "$(ls -A /run/netns 2>/dev/null | wc -l)" -lt "$1" ] && [ $i -lt "$2" ]; do sleep 0.1; i=$((i+1)); done
}
`

// TestInterruptedMeasurementsLeaveNothing: SIGINT or SIGTERM to calibrate
// and predict --netns (which calibrates first without --costs) while their
// namespaces exist: each stops within a few seconds, exits 1 saying it was
// interrupted, and leaves no namespace and no record, without a reset;
// netns add and add, stopped the same way, leave what one reset removes.
// (SIGINT during calibrate's namespace phase once left 139 namespaces, and
// predict 15.)
func TestInterruptedMeasurementsLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the real kernel")
	}
	var script strings.Builder
	script.WriteString(leftCheck + waitFor)
	for _, c := range []struct{ cmd, sig string }{
		{"calibrate --rounds 1 --gp-samples 5", "INT"},
		{"calibrate --rounds 1 --gp-samples 5", "TERM"},
		{"predict --netns --count 10 --runs 1 --sim-runs 1", "INT"},
	} {
		fmt.Fprintf(&script, `echo "== %[1]s SIG%[2]s"
"$NDST" %[1]s >"$T/out" 2>&1 & pid=$!
waitfor 5 600
t0=$(date +%%s%%N); kill -%[2]s $pid || echo 'it had finished'; code=0; wait $pid || code=$?; t1=$(date +%%s%%N)
echo "exit $code after $(( (t1 - t0) / 1000000 )) ms"
tail -n 2 "$T/out"
left
`, c.cmd, c.sig)
	}
	// The netlink commands that make many objects stop as fast, leaving
	// whole namespaces and devices, which one reset removes.
	for _, c := range []struct{ before, cmd, sig string }{
		{"", "--backend netlink netns add 3000 --veth --lo-up", "TERM"},
		{"", "--backend netlink --kind ifb add 20000 --one-by-one", "TERM"},
		{"--backend netlink netns add 300 --veth", "--backend netlink netns del 1 300 --one-at-a-time", "TERM"},
	} {
		if c.before != "" {
			fmt.Fprintf(&script, "\"$NDST\" %s >/dev/null 2>&1\n", c.before)
		}
		fmt.Fprintf(&script, `echo "== %[1]s SIG%[2]s"
"$NDST" %[1]s >"$T/out" 2>&1 & pid=$!
sleep 1
t0=$(date +%%s%%N); kill -%[2]s $pid || echo 'it had finished'; code=0; wait $pid || code=$?; t1=$(date +%%s%%N)
echo "exit $code after $(( (t1 - t0) / 1000000 )) ms"
tail -n 2 "$T/out"
"$NDST" --backend netlink reset >"$T/reset" 2>&1 || { echo "reset exit $?"; cat "$T/reset"; }
left
`, c.cmd, c.sig)
	}
	out, code := sandbox(t, 10*time.Minute, script.String())
	if code != 0 {
		t.Fatalf("sandbox exit %d:\n%s", code, out)
	}
	t.Logf("\n%s", out)
	stop := regexp.MustCompile(`exit (\d+) after (\d+) ms`)
	for _, block := range strings.Split(out, "== ")[1:] {
		name, _, _ := strings.Cut(block, "\n")
		m := stop.FindStringSubmatch(block)
		if m == nil || m[1] != "1" || !strings.Contains(block, "interrupted") {
			t.Errorf("%s: want exit 1 saying it was interrupted:\n%s", name, block)
		}
		if m != nil {
			if ms, _ := strconv.Atoi(m[2]); ms > 5000 {
				t.Errorf("%s: took %d ms to stop (the bound is a second; 5 s on a loaded machine)", name, ms)
			}
		}
		if !strings.Contains(block, nothingLeft) {
			t.Errorf("%s: left something:\n%s", name, block)
		}
	}
}

// TestKillAnywhereThenOneReset: SIGKILL at random points (a seeded, bounded
// loop) of every netlink command that creates or deletes kernel objects;
// after each kill, one `reset` must leave no namespace, no record and no
// process of ndst's. (A SIGKILL during netns del once left empty files
// with records, which ndst then called someone else's.)
func TestKillAnywhereThenOneReset(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the real kernel")
	}
	type victim struct{ before, cmd string }
	victims := []victim{
		{"", "--backend netlink netns add 150 --veth --links 2 --lo-up"},
		{"", "--backend netlink netns add 200"},
		{"--backend netlink netns add 60 --veth", "--backend netlink netns del 1 1000 --one-by-one"},
		{"--backend netlink netns add 120 --veth", "--backend netlink netns del 1 1000"},
		{"", "--backend netlink add 1500"},
		{"--backend netlink add 600", "--backend netlink del 1 100000 --one-by-one"},
		{"", "calibrate --rounds 1 --gp-samples 5"},
		{"", "predict --netns --count 10 --runs 1 --sim-runs 1"},
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 22))
	t.Logf("seed %d", seed)
	var script strings.Builder
	script.WriteString(leftCheck)
	const rounds = 2
	for r := range rounds {
		for i, v := range victims {
			delay := rng.IntN(1500)
			fmt.Fprintf(&script, "echo '== round %d, %d: %s, SIGKILL after %d ms'\n", r, i, v.cmd, delay)
			if v.before != "" {
				fmt.Fprintf(&script, "\"$NDST\" %s >/dev/null 2>&1 || echo 'setup failed'\n", v.before)
			}
			fmt.Fprintf(&script, `"$NDST" %s >/dev/null 2>&1 & pid=$!
sleep %d.%03d; kill -KILL $pid 2>/dev/null || echo 'it had finished'; wait $pid 2>/dev/null || true
echo "killed: $(left)"
"$NDST" --backend netlink reset >"$T/reset" 2>&1 && echo 'reset ok' || { echo "reset exit $?"; cat "$T/reset"; }
sleep 0.2
left
`, v.cmd, delay/1000, delay%1000)
		}
	}
	out, code := sandbox(t, 15*time.Minute, script.String())
	if code != 0 {
		t.Fatalf("sandbox exit %d:\n%s", code, out)
	}
	t.Logf("\n%s", out)
	killedMid := 0
	for _, block := range strings.Split(out, "== ")[1:] {
		name, _, _ := strings.Cut(block, "\n")
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if !strings.Contains(block, "reset ok") || lines[len(lines)-1] != nothingLeft {
			t.Errorf("%s (seed %d): after one reset, ndst's things are left:\n%s", name, seed, block)
		}
		if strings.Contains(block, "setup failed") {
			t.Errorf("%s: the setup command failed", name)
		}
		if !strings.Contains(block, "it had finished") && !strings.Contains(block, "killed: "+nothingLeft) {
			killedMid++
		}
	}
	t.Logf("%d of %d kills left something for the reset to remove", killedMid, rounds*len(victims))
}
