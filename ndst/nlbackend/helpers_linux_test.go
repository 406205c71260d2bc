package nlbackend

import (
	"context"
	"fmt"
	"golang.org/x/sys/unix"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// skipUnlessRoot skips tests that need to create namespaces and links.
func skipUnlessRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("netlink tests need root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid %d", os.Geteuid())
	}
}

// freshNS returns the name of a namespace that does not exist yet and is
// removed (with everything in it) when the test ends.
func freshNS(t testing.TB) string {
	t.Helper()
	skipUnlessRoot(t)
	name := fmt.Sprintf("ndst-test-%d-%x", os.Getpid(), rand.Uint32())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rep, err := ResetNamespace(ctx, Options{Netns: name})
		if err != nil && rep != nil && rep.NamespaceKept {
			// The test put devices of someone else's there: reset
			// keeps the namespace for them, and the test deletes it.
			err = removeNetns(name)
		}
		if err != nil {
			t.Errorf("cleanup: Reset(%s) = %v", name, err)
		}
		if _, err := os.Stat(nsPath(name)); !os.IsNotExist(err) {
			t.Errorf("cleanup: %s still exists (stat err %v)", nsPath(name), err)
		}
	})
	return name
}

// openFresh opens a backend on a fresh namespace; closed at cleanup.
func openFresh(t testing.TB, o Options) *Backend {
	t.Helper()
	skipUnlessRoot(t)
	if o.Netns == "" {
		o.Netns = freshNS(t)
	}
	b, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open(%+v) = %v, want nil error", o, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// testHandle is a library handle in the backend's namespace, closed at
// cleanup.
func testHandle(t testing.TB, b *Backend) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(b.ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}
