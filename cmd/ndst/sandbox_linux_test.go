package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The hostile tests that need root run their commands in a sandbox: a shell
// in private mount and UTS namespaces whose /run is a fresh tmpfs, so that
// the namespaces they create (bind-mounted under the sandbox's own
// /run/netns, with ndst's records under its own /run/ndst) are invisible to
// the machine, whatever a test or a killed ndst leaves; the kernel frees
// them when the sandbox's mount namespace goes. Its host name is
// "ndst-sandbox", so a write that reached /proc/sys/kernel/hostname would
// show there and change nothing outside.

// sandboxPrelude prepares the sandbox before the test's script.
const sandboxPrelude = `mount -t tmpfs -o mode=0755,size=64m ndst-sandbox /run
hostname ndst-sandbox
`

// sandbox runs script with sh -eu in a fresh sandbox, with NDST set to the
// ndst binary and T to a scratch directory outside /run, and returns its
// combined output and exit code. It skips the test unless it runs as root
// with unshare(1); a script that outlives timeout is killed and fails the
// test.
func sandbox(t *testing.T, timeout time.Duration, script string) (string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root for private mount and UTS namespaces (uid %d)", os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1)")
	}
	bin := buildNdst(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--uts", "--propagation", "private", "--fork", "--kill-child",
		"sh", "-euc", sandboxPrelude+script)
	cmd.Env = append(os.Environ(), "NDST="+bin, "T="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sandbox script did not finish within %v:\n%s", timeout, out.String())
	}
	return out.String(), exitOf(err)
}
