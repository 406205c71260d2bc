package nlbackend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// initialNetnsPath returns a path to the initial network namespace: this
// process's when it runs there, else PID 1's when that is readable and is
// the initial one; "" when neither.
func initialNetnsPath() string {
	for _, p := range []string{"/proc/self/ns/net", "/proc/1/ns/net"} {
		if id, err := statID(p); err == nil && id.ino == procNetInitIno {
			return p
		}
	}
	return ""
}

// hostLinks lists the links of the namespace at path by name.
func hostLinks(t *testing.T, path string) []string {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		out = append(out, l.Attrs().Name)
	}
	slices.Sort(out)
	return out
}

// TestRootNamespaceByIdentity is `ip netns attach ndstx $$` run from a
// shell in the root namespace, then ndst started inside another namespace
// (`ip netns exec other ...`) and pointed at both names: the attached name
// is the host's root namespace whatever namespace ndst runs in (listing it
// is allowed, changing it is refused and changes nothing), and the
// namespace ndst runs in is not mistaken for the root.
func TestRootNamespaceByIdentity(t *testing.T) {
	if os.Getenv("NDST_NLBACKEND_ROOTCHILD") == "1" {
		rootNSChild(os.Getenv("NDST_ATTACHED"), os.Getenv("NDST_OTHER"))
		return
	}
	skipUnlessRoot(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (ip) is not installed: it runs the scenario (ip netns attach, ip netns exec)")
	}
	rootPath := initialNetnsPath()
	if rootPath == "" {
		t.Skip("neither this process nor PID 1 is in the initial network namespace (nsfs inode 4026531833), so the test has no handle on it")
	}
	suffix := fmt.Sprintf("%d-%x", os.Getpid(), rand.Uint32())
	attached := "ndst-netlink-attached-" + suffix
	other := freshNS(t)
	// ndst's, so that ndst may change it (a namespace of `ip netns add` is
	// refused as someone else's).
	if made, err := createNetns(other); err != nil || !made {
		t.Fatalf("createNetns(%s) = %v, %v", other, made, err)
	}

	// ip netns attach NAME PID bind-mounts /proc/PID/ns/net on the name.
	pid := fmt.Sprint(os.Getpid())
	if rootPath == "/proc/1/ns/net" {
		pid = "1"
	}
	mustRun(t, "ip", "netns", "attach", attached, pid)
	t.Cleanup(func() {
		if err := removeNetns(attached); err != nil { // unmounts the name only
			t.Errorf("cleanup: %v", err)
		}
	})
	before := hostLinks(t, rootPath)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", other, exe, "-test.run=^TestRootNamespaceByIdentity$", "-test.v")
	cmd.Env = append(os.Environ(), "NDST_NLBACKEND_ROOTCHILD=1", "NDST_ATTACHED="+attached, "NDST_OTHER="+other)
	out, err := cmd.CombinedOutput()
	t.Logf("child (running in %s):\n%s", other, out)
	if err != nil || !strings.Contains(string(out), "ROOTCHILD-OK") {
		t.Fatalf("child failed (%v); its output is above", err)
	}
	if _, err := os.Stat(nsPath(attached)); err != nil {
		t.Errorf("the refused reset removed %s: %v", nsPath(attached), err)
	}
	if after := hostLinks(t, rootPath); !slices.Equal(before, after) {
		t.Errorf("the host's links changed: before %v, after %v", before, after)
	}
}

// rootNSChild runs inside the namespace other and prints ROOTCHILD-OK when
// every check passed, else one FAIL line per failed check.
func rootNSChild(attached, other string) {
	failed := false
	fail := func(format string, args ...any) {
		failed = true
		fmt.Printf("FAIL: "+format+"\n", args...)
	}
	ctx := context.Background()
	if id, err := statID("/proc/self/ns/net"); err != nil || id.ino == procNetInitIno {
		fail("the child is not running in a namespace of its own (%v, %v)", id, err)
	}
	var warned []string
	warn := func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) }

	// The attached name is the host's root namespace.
	b, err := Open(ctx, Options{Netns: attached, NoCreate: true, Kind: "ifb", KindExplicit: true, Warnf: warn})
	if err != nil {
		fail("Open(%s) = %v, want the root namespace opened for listing", attached, err)
	} else {
		if !b.Root() {
			fail("Open(%s).Root() = false, want true", attached)
		}
		devs, err := b.List(ctx, ndst.ListRequest{})
		if err != nil || len(devs) == 0 || len(warned) != 1 || !strings.Contains(warned[0], "root namespace") {
			fail("List(%s) = %d devices, %v, warnings %q; want the host's devices and one warning", attached, len(devs), err, warned)
		}
		for _, d := range devs {
			if d.Name == "lo" && !d.Foreign {
				fail("List(%s) shows the host's lo as ndst's", attached)
			}
		}
		r, err := b.Add(ctx, ndst.AddRequest{Count: 1})
		if r != nil || !ndst.IsUsage(err) || !strings.Contains(err.Error(), "host's root namespace") || !strings.Contains(err.Error(), "initial") {
			fail("Add(1) in %s = %+v, %v; want a usage error naming the initial (root) namespace", attached, r, err)
		}
		r, err = b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1 << 30})
		if r != nil || !ndst.IsUsage(err) || !strings.Contains(err.Error(), "host's root namespace") {
			fail("Del in %s = %+v, %v; want a usage error naming the root namespace", attached, r, err)
		}
		b.Close()
	}
	if rep, err := ResetNamespace(ctx, Options{Netns: attached}); rep != nil || !ndst.IsUsage(err) || !strings.Contains(err.Error(), "host's root namespace") {
		fail("ResetNamespace(%s) = %+v, %v; want a usage error naming the root namespace", attached, rep, err)
	}
	// Opening it for add (not NoCreate) does not create anything either.
	if b, err := Open(ctx, Options{Netns: attached, Kind: "ifb", KindExplicit: true}); err != nil || b.Created() {
		fail("Open(%s) for add = %v, created %v; want it opened, not created", attached, err, b != nil && b.Created())
	} else {
		b.Close()
	}

	// The namespace this process runs in is an ordinary one.
	o, err := Open(ctx, Options{Netns: other, NoCreate: true, Kind: "ifb", KindExplicit: true})
	if err != nil {
		fail("Open(%s), the child's own namespace = %v, want it opened", other, err)
	} else {
		if o.Root() {
			fail("Open(%s).Root() = true: the child's own namespace taken for the root", other)
		}
		if r, err := o.Add(ctx, ndst.AddRequest{Count: 2}); err != nil || r.Count != 2 {
			fail("Add(2) in %s = %+v, %v; want 2 created", other, r, err)
		}
		if r, err := o.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1 << 30}); err != nil || r.Count != 2 {
			fail("Del in %s = %+v, %v; want 2 deleted", other, r, err)
		}
		o.Close()
	}
	if !failed {
		fmt.Println("ROOTCHILD-OK")
	}
}

// TestRootNamespaceRule checks the identity rule itself: the initial
// namespace's inode on the nsfs device, or PID 1's namespace; nothing else,
// and never this process's own namespace for being its own.
func TestRootNamespaceRule(t *testing.T) {
	dev, ok := nsfsDev()
	if !ok {
		t.Skip("/proc/self/ns/net cannot be read")
	}
	if root, why := rootNamespace(nsID{dev: dev, ino: procNetInitIno}); !root || !strings.Contains(why, "initial") {
		t.Errorf("rootNamespace(initial inode on nsfs) = %v %q, want the initial namespace", root, why)
	}
	if root, _ := rootNamespace(nsID{dev: dev + 1, ino: procNetInitIno}); root {
		t.Errorf("rootNamespace(initial inode on another device) = true, want false")
	}
	if root, _ := rootNamespace(nsID{dev: dev, ino: procNetInitIno + 100}); root {
		t.Errorf("rootNamespace(another inode) = true, want false")
	}
	// PID 1's namespace counts, whatever its inode: point the rule at a
	// namespace of the test's own.
	name := freshNS(t)
	if _, err := createNetns(name); err != nil {
		t.Fatal(err)
	}
	id, err := statID(nsPath(name))
	if err != nil {
		t.Fatal(err)
	}
	if root, _ := rootNamespace(id); root {
		t.Fatalf("rootNamespace(a fresh namespace) = true, want false")
	}
	old := pid1NetnsPath
	pid1NetnsPath = nsPath(name)
	t.Cleanup(func() { pid1NetnsPath = old })
	if root, why := rootNamespace(id); !root || !strings.Contains(why, "PID 1") {
		t.Errorf("rootNamespace(PID 1's namespace) = %v %q, want PID 1's", root, why)
	}
}
