package nlbackend

import (
	"os"
	"testing"

	"github.com/ndst-project/ndst/internal/sandboxtest"
)

// TestMain runs the tests, as root, in a sandbox of their own: a private
// mount namespace with a fresh /run, so that the network namespaces they
// make never appear in the machine's /run/netns (package sandboxtest).
func TestMain(m *testing.M) { os.Exit(sandboxtest.Run(m)) }
