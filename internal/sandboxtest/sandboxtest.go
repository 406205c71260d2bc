// Package sandboxtest runs a package's tests, when they run as root, in a
// private mount namespace whose /run is a fresh tmpfs: the network
// namespaces they create are mounted under the sandbox's own /run/netns,
// ndst's records go to its own /run/ndst, and neither the machine's
// namespaces nor its records are ever seen or touched. Whatever a failed or
// killed test leaves there goes when the sandbox's mount namespace does
// (the kernel then frees the namespaces). Network namespaces and devices
// themselves are not virtualised: the tests still create their own and
// clean them up.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(sandboxtest.Run(m)) }
package sandboxtest

import (
	"os"
	"testing"
)

// Env is set in the sandbox, to the sandbox's description.
const Env = "NDST_TEST_SANDBOX"

// Run runs m in the sandbox (re-executing the test binary there) when the
// tests run as root and are not in one yet, and returns their exit status.
// Unprivileged, or where the sandbox cannot be made (no unshare(1)), the
// tests run here: those that need root skip.
func Run(m *testing.M) int {
	if code, ok := reexec(); ok {
		return code
	}
	return m.Run()
}

// In reports whether the tests run in the sandbox.
func In() bool { return os.Getenv(Env) != "" }
