package nlbackend

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/internal/sandboxtest"
	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

// The hostile suite, ownership: which namespaces are ndst's, by an identity
// the kernel never reuses, and nothing done in one that is not. These run
// in the package's sandbox (sandbox_test.go): a private mount namespace
// with its own /run/netns and /run/ndst.

// needIP skips a test that drives iproute2.
func needIP(t *testing.T) {
	t.Helper()
	skipUnlessRoot(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (ip) is not installed: it plays the other program")
	}
}

// TestOwnershipSurvivesInodeReuse: a user's `ip netns del` of an ndst
// namespace and `ip netns add` of the same name, which often gets the same
// nsfs inode (3 of 3 tries on 6.18), must not make the new namespace
// ndst's: it is listed as foreign, netns del refuses it, reset leaves it,
// and the dangling record is dropped.
func TestOwnershipSurvivesInodeReuse(t *testing.T) {
	needIP(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	reused := 0
	for try := range 3 {
		r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Template: tmpl})
		if err != nil || r.Count != 1 {
			t.Fatalf("NetnsAdd(1) = %+v, %v", r, err)
		}
		name := tmpl.Name(1)
		before, _ := statID(nsPath(name))
		mustRun(t, "ip", "netns", "del", name)
		// The inode is free once the kernel's cleanup of the namespace
		// has run; the user's next namespace then takes it (the lowest
		// free number). Retried until it does, for a few seconds.
		var after nsID
		for deadline := time.Now().Add(5 * time.Second); ; {
			time.Sleep(100 * time.Millisecond)
			mustRun(t, "ip", "netns", "add", name)
			after, _ = statID(nsPath(name))
			if after == before || time.Now().After(deadline) {
				break
			}
			mustRun(t, "ip", "netns", "del", name)
		}
		if before == after {
			reused++
		}
		t.Logf("try %d: inode %d before, %d after the user's del and add", try, before.ino, after.ino)
		if kind := identityKind(); kind == kindInode && before == after {
			t.Skipf("this kernel has neither NS_GET_ID nor SO_NETNS_COOKIE, and the inode was reused: the degraded case, which says so")
		}
		list, err := b.NetnsList(ctx, ndst.NetnsListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range list {
			if n.Name == name && !n.Foreign {
				t.Errorf("try %d: NetnsList calls the user's %s ndst's", try, name)
			}
		}
		if r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, Template: tmpl}); !errors.Is(err, ndst.ErrNoNetns) {
			t.Errorf("try %d: NetnsDel over the user's namespace = %+v, %v; want ErrNoNetns", try, r, err)
		}
		if _, err := readRecord(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("try %d: the record of the deleted ndst namespace is still there (%v); want it dropped", try, err)
		}
		rep, err := ResetAll(ctx, Options{Netns: b.o.Netns + "-none"})
		if err != nil {
			t.Fatalf("ResetAll = %+v, %v", rep, err)
		}
		if _, err := os.Stat(nsPath(name)); err != nil {
			t.Fatalf("try %d: reset removed the user's %s: %v", try, name, err)
		}
		mustRun(t, "ip", "netns", "del", name)
		time.Sleep(300 * time.Millisecond) // its inode free again for the next try
	}
	t.Logf("the kernel gave the user's namespace the same inode %d of 3 times; identity kind %s", reused, identityKind())
	if reused == 0 {
		t.Logf("no inode was reused: the checks above ran on new inodes only")
	}
}

// TestForeignHomeNamespaceRefused: --netns naming someone else's namespace
// (made by `ip netns add`, with a process in it and a veth whose peer is in
// a third namespace) is refused by add, del, netns add, netns del and
// reset, each saying how to proceed, and nothing there changes.
func TestForeignHomeNamespaceRefused(t *testing.T) {
	needIP(t)
	theirs, third := freshNS(t)+"-theirs", freshNS(t)+"-third"
	for _, n := range []string{theirs, third} {
		mustRun(t, "ip", "netns", "add", n)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", n).Run() })
	}
	mustRun(t, "ip", "-n", theirs, "link", "add", "theirveth", "type", "veth", "peer", "name", "peer0", "netns", third)
	sleeper := exec.Command("ip", "netns", "exec", theirs, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	ctx := context.Background()
	b, err := Open(ctx, Options{Netns: theirs, Kind: "ifb", KindExplicit: true})
	if err != nil {
		t.Fatalf("Open(%s) = %v; listing someone else's namespace is allowed", theirs, err)
	}
	defer b.Close()
	if _, err := b.List(ctx, ndst.ListRequest{}); err != nil {
		t.Errorf("List in someone else's namespace = %v, want it allowed", err)
	}
	tmpl := netnsTemplate(t)
	refusals := map[string]error{}
	_, refusals["add"] = b.Add(ctx, ndst.AddRequest{Count: 2})
	_, refusals["del"] = b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1 << 20})
	_, refusals["netns add"] = b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Template: tmpl, Veth: true})
	_, refusals["netns del"] = b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, Template: tmpl})
	_, refusals["reset"] = ResetAll(ctx, Options{Netns: theirs})
	for op, err := range refusals {
		if !ndst.IsUsage(err) || !strings.Contains(err.Error(), "was not created by ndst") || !strings.Contains(err.Error(), "pass --netns a name that does not exist yet") {
			t.Errorf("%s in someone else's namespace = %v; want a usage error saying it is not ndst's and what to do", op, err)
		}
	}
	if _, err := os.Stat(nsPath(theirs)); err != nil {
		t.Fatalf("their namespace is gone: %v", err)
	}
	out, _ := exec.Command("ip", "-n", theirs, "-o", "link", "show").CombinedOutput()
	if strings.Count(string(out), "\n") != 2 || !strings.Contains(string(out), "theirveth") {
		t.Errorf("their namespace's links changed:\n%s", out)
	}
	if out, err := exec.Command("ip", "-n", third, "link", "show", "peer0").CombinedOutput(); err != nil {
		t.Errorf("the veth's peer in the third namespace is gone: %v %s", err, out)
	}
	if sleeper.ProcessState != nil {
		t.Errorf("the process in their namespace ended")
	}
}

// TestResetKeepsForeignDevices: in ndst's own namespace, reset deletes
// ndst's links only; a veth someone added there, whose peer is in a third
// namespace, keeps the namespace (deleting it would take the peer), and
// the error names it and says what to do.
func TestResetKeepsForeignDevices(t *testing.T) {
	needIP(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 3})
	third := b.o.Netns + "-third"
	mustRun(t, "ip", "netns", "add", third)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", third).Run() })
	mustRun(t, "ip", "-n", b.o.Netns, "link", "add", "visitor", "type", "veth", "peer", "name", "peer0", "netns", third)
	b.Close()
	rep, err := ResetAll(context.Background(), Options{Netns: b.o.Netns})
	if err == nil || rep == nil || !rep.NamespaceKept || rep.Deleted != 3 || len(rep.Kept) != 1 || !strings.Contains(rep.Kept[0], "visitor") ||
		!strings.Contains(err.Error(), "ip -n "+b.o.Netns+" link del DEVICE") {
		t.Fatalf("ResetAll = %+v, %v; want ndst's 3 deleted and the namespace kept for visitor, saying what to do", rep, err)
	}
	if out, err := exec.Command("ip", "-n", third, "link", "show", "peer0").CombinedOutput(); err != nil {
		t.Errorf("the visitor's peer in the third namespace is gone: %v %s", err, out)
	}
}

// TestRecordFailuresReported: a record that cannot be written fails the
// namespace's creation (nothing mounted), and one that cannot be removed
// fails the delete that needed it, saying so; neither is ignored. The
// records' directory is made read-only by a bind mount in the sandbox.
func TestRecordFailuresReported(t *testing.T) {
	skipUnlessRoot(t)
	if !sandboxtest.In() {
		t.Skip("needs the package's sandbox (a private mount namespace) for a read-only bind mount")
	}
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Template: tmpl}); err != nil || r.Count != 1 {
		t.Fatalf("NetnsAdd(1) = %+v, %v", r, err)
	}
	readOnly(t, ownerDir)
	r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Template: tmpl})
	if err == nil || !strings.Contains(err.Error(), "ownership record") || r.Count != 0 {
		t.Errorf("NetnsAdd with the records read-only = %+v, %v; want a failure naming the record", r, err)
	}
	if _, err := os.Stat(nsPath(tmpl.Name(2))); !os.IsNotExist(err) {
		t.Errorf("a namespace without a record was mounted: %v", err)
	}
	r, err = b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, Template: tmpl})
	if err == nil || !strings.Contains(err.Error(), "remove the ownership record") {
		t.Errorf("NetnsDel with the records read-only = %+v, %v; want a failure naming the record", r, err)
	}
	unix.Unmount(ownerDir, 0)
	if r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 10, Template: tmpl}); err == nil {
		t.Logf("after the records are writable again: %+v", r)
	}
	if _, err := ResetAll(ctx, Options{Netns: b.o.Netns + "-none"}); err != nil {
		t.Errorf("ResetAll once writable = %v", err)
	}
	if ents, _ := os.ReadDir(ownerDir); len(ents) > 1 { // b's own record
		t.Errorf("records left: %v", ents)
	}
}

// readOnly bind-mounts dir read-only over itself until the test ends.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		unix.Unmount(dir, 0)
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, 0) })
}

// TestConcurrentNetnsDelRescans: two netns del of one range at once; the
// second waits for the first's locks and then finds nothing left, instead
// of deleting from a stale list.
func TestConcurrentNetnsDelRescans(t *testing.T) {
	skipUnlessRoot(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true, WaitLock: time.Minute})
	b2, err := Open(context.Background(), Options{Netns: b.o.Netns, Kind: "ifb", KindExplicit: true, WaitLock: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 20, Template: tmpl, LoUp: true}); err != nil || r.Count != 20 {
		t.Fatalf("NetnsAdd(20) = %+v, %v", r, err)
	}
	type out struct {
		r   *ndst.Result
		err error
	}
	res := make(chan out, 2)
	for _, x := range []*Backend{b, b2} {
		go func() {
			r, err := x.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 20, Template: tmpl})
			res <- out{r, err}
		}()
	}
	a, c := <-res, <-res
	deleted := 0
	nothing := 0
	for _, o := range []out{a, c} {
		switch {
		case o.err == nil:
			deleted += o.r.Count
		case errors.Is(o.err, ndst.ErrNoNetns):
			nothing++
		default:
			t.Errorf("a netns del failed: %v", o.err)
		}
	}
	if deleted != 20 || nothing != 1 {
		t.Errorf("two netns del of one range: %d deleted, %d found nothing (%+v / %+v); want 20 by one, the other none", deleted, nothing, a, c)
	}
}

// TestIdentityKinds: the namespace id (NS_GET_ID) and cookie
// (SO_NETNS_COOKIE) of a namespace agree where the kernel has both (6.18:
// one ns_common.ns_id), each kind makes records that the same kind reads
// back as ndst's, and on a kernel with neither, every command that judges
// ownership says it works by inode.
func TestIdentityKinds(t *testing.T) {
	skipUnlessRoot(t)
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	real := identityKind()
	t.Cleanup(func() { identityKind = func() string { return real } })
	if real == kindNsid {
		nsid, _ := ioctlNsID(fd)
		identityKind = func() string { return kindCookie }
		cookie, err := identityOf(fd)
		if err != nil || cookie.ID != nsid || nsid == 0 {
			t.Errorf("cookie %+v (%v), NS_GET_ID %d: want them equal and not 0", cookie, err, nsid)
		}
	}
	for _, kind := range []string{kindNsid, kindCookie, kindInode} {
		if kind == kindNsid && real != kindNsid || kind == kindCookie && real == kindInode {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			identityKind = func() string { return kind }
			b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
			tmpl := netnsTemplate(t)
			ctx := context.Background()
			r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 2, Template: tmpl})
			if err != nil || r.Count != 2 {
				t.Fatalf("NetnsAdd = %+v, %v", r, err)
			}
			rec, err := readRecord(tmpl.Name(1))
			if err != nil || rec.id.Kind != kind {
				t.Errorf("record = %+v, %v; want kind %s", rec, err, kind)
			}
			warned := strings.Contains(strings.Join(r.Notes, "\n"), "by nsfs inode only")
			if warned != (kind == kindInode) {
				t.Errorf("kind %s: notes %q; the inode note must appear exactly when ownership is by inode", kind, r.Notes)
			}
			d, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 2, Template: tmpl})
			if err != nil || d.Count != 2 {
				t.Errorf("NetnsDel = %+v, %v", d, err)
			}
		})
	}
}

// TestRecordFormat: records round-trip; anything else, an older ndst's
// inode-only record above all, is not taken for ndst's.
func TestRecordFormat(t *testing.T) {
	r := record{id: nsIdentity{Kind: kindNsid, ID: 4097, Ino: nsID{4, 4026532316}}, dir: 25, pid: 1234, start: 98765}
	got, err := parseRecord(r.encode())
	if err != nil || got != r {
		t.Fatalf("parseRecord(encode(%+v)) = %+v, %v", r, got, err)
	}
	for _, bad := range []string{"", "4 4026532316\n", "ndst netns owner 2\nid nsid 1\ninode 4 5\n", "ndst netns owner 3\nid nsid 1\ninode 4 5\ndir 1\ncreator 1 2\n",
		"ndst netns owner 1\nid nsid 1\ninode 4 5\ncreator 1 2\n",
		"ndst netns owner 2\nid uuid 1\ninode 4 5\ndir 1\ncreator 1 2\n", "ndst netns owner 2\nid nsid 01\ninode 4 5\ndir 1\ncreator 1 2\n",
		"ndst netns owner 2\nid nsid 1\ninode 4 5\ndir 1\ncreator 1 2\nextra\n"} {
		if _, err := parseRecord([]byte(bad)); err == nil {
			t.Errorf("parseRecord(%q) = nil error, want a refusal", bad)
		}
	}
	if _, err := parseRecord([]byte("4 4026532316\n")); !errors.Is(err, errLegacyRecord) {
		t.Errorf("an inode-only record: %v, want errLegacyRecord", err)
	}
}

// TestLeftoversOfAKilledNdst builds, one by one, every state an ndst
// killed at some point of a namespace's creation or deletion can leave
// (see netnsown_linux.go), beside the look-alikes that are someone else's,
// and checks that one reset removes exactly ndst's: a record without its
// namespace, an empty file with a record, a half-written record, and a
// mounted namespace whose creator is gone; an empty file without a record
// (an `ip netns add` in progress) and a namespace without one stay.
func TestLeftoversOfAKilledNdst(t *testing.T) {
	needIP(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 3, Template: tmpl}); err != nil || r.Count != 3 {
		t.Fatalf("NetnsAdd(3) = %+v, %v", r, err)
	}
	// 1: killed before its mount: a record, no file.
	if err := writeRecord(tmpl.Name(11), nsIdentity{Kind: identityKind(), ID: 7, Ino: nsID{1, 2}}); err != nil {
		t.Fatal(err)
	}
	// 2: killed between the file and the mount, or after the unmount of
	// a delete: an empty file with a record.
	os.WriteFile(nsPath(tmpl.Name(12)), nil, 0o444)
	writeRecord(tmpl.Name(12), nsIdentity{Kind: identityKind(), ID: 8, Ino: nsID{1, 3}})
	// 3: killed while writing a record.
	os.WriteFile(ownerPath(".tmp-123456"), []byte("ndst netns ow"), 0o644)
	// 4: a whole namespace whose creator is gone: namespace 1, its
	// record rewritten as a dead process's.
	rec, err := readRecord(tmpl.Name(1))
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	dead.Run()
	rec.pid, rec.start = dead.Process.Pid, 1
	os.WriteFile(ownerPath(tmpl.Name(1)), rec.encode(), 0o644)
	// Someone else's look-alikes: an empty file without a record, and a
	// namespace of `ip netns add`.
	os.WriteFile(nsPath(tmpl.Name(21)), nil, 0o444)
	mustRun(t, "ip", "netns", "add", tmpl.Name(22))
	t.Cleanup(func() { os.Remove(nsPath(tmpl.Name(21))); exec.Command("ip", "netns", "del", tmpl.Name(22)).Run() })

	// Listed as what they are: the leftover as ndst's, the look-alike
	// as someone else's.
	list, err := b.NetnsList(ctx, ndst.NetnsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		switch n.Name {
		case tmpl.Name(12):
			if !n.Leftover || n.Foreign {
				t.Errorf("the leftover of a killed ndst is listed as %+v, want ndst's leftover", n)
			}
		case tmpl.Name(21), tmpl.Name(22):
			if !n.Foreign || n.Leftover {
				t.Errorf("someone else's %s is listed as %+v", n.Name, n)
			}
		}
	}
	rep, err := ResetAll(ctx, Options{Netns: b.o.Netns + "-none"})
	if err != nil {
		t.Fatalf("ResetAll = %+v, %v", rep, err)
	}
	text := strings.Join(rep.Lines(), "\n")
	t.Logf("reset:\n%s", text)
	for _, want := range []string{"dropped 1 ownership record", "removed 1 empty file", "removed 1 temporary file", "deleted 1 other namespace of ndst's: " + tmpl.Name(1)} {
		if !strings.Contains(text, want) {
			t.Errorf("reset's report lacks %q", want)
		}
	}
	if !strings.Contains(text, tmpl.Name(2)) || !strings.Contains(text, "still runs") {
		t.Errorf("reset's report does not name the namespaces of this live process as in use")
	}
	for k, want := range map[int]bool{1: false, 2: true, 3: true, 11: false, 12: false, 21: true, 22: true} {
		_, err := os.Lstat(nsPath(tmpl.Name(k)))
		if got := err == nil; got != want {
			t.Errorf("%s exists = %v after reset, want %v", tmpl.Name(k), got, want)
		}
	}
	for _, name := range []string{tmpl.Name(1), tmpl.Name(11), tmpl.Name(12), ".tmp-123456"} {
		if _, err := os.Lstat(ownerPath(name)); err == nil {
			t.Errorf("record %s is left", name)
		}
	}
	if r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 30, Template: tmpl}); err != nil || r.Count != 2 || r.Skipped != 2 {
		t.Errorf("NetnsDel after reset = %+v, %v; want ndst's 2 deleted, the 2 others skipped", r, err)
	}
}

// TestInterruptedDeleteCountsWhatIsGone: a one-by-one delete cancelled in
// the middle (most of its time is inside the kernel's requests, so the
// cancel lands on one in flight) reports exactly the devices that are gone
// afterwards, the request in flight included; it once reported one fewer.
func TestInterruptedDeleteCountsWhatIsGone(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	for try := range 3 {
		mustAdd(t, b, ndst.AddRequest{Count: 300})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(150+100*try)*time.Millisecond, cancel)
		r, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1 << 30, OneByOne: true})
		cancel()
		if !errors.Is(err, context.Canceled) || r == nil {
			t.Fatalf("try %d: Del cancelled = %+v, %v; want the interruption", try, r, err)
		}
		owned, _ := names(mustList(t, b))
		if r.Count != 300-len(owned) {
			t.Errorf("try %d: the interrupted delete reports %d deleted, but %d of 300 are gone (notes %q)", try, r.Count, 300-len(owned), r.Notes)
		}
		t.Logf("try %d: %d deleted before the interruption; notes %q", try, r.Count, r.Notes)
		if len(owned) > 0 {
			if _, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1 << 30}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestInterruptedBatchDeleteIsTrue: a batched delete interrupted while the
// kernel works on it (it does not stop a batch half way, and holds RTNL,
// so not even a listing answers) says that the request in flight goes on,
// naming it, instead of reporting its devices as not deleted; when the
// batch ends within the interruption's grace, the count is exact.
func TestInterruptedBatchDeleteIsTrue(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	const n = 10000
	mustAdd(t, b, ndst.AddRequest{Count: n})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err := b.Del(ctx, ndst.DelRequest{Start: 1, Stop: 1 << 30})
	cancel()
	if err == nil {
		t.Skipf("the batch of %d ended before the interruption (%+v)", n, r)
	}
	b.Close()
	b2, oerr := Open(context.Background(), Options{Netns: b.o.Netns, NoCreate: true})
	if oerr != nil {
		t.Fatal(oerr)
	}
	defer b2.Close()
	owned, _ := names(mustList(t, b2))
	gone := n - len(owned)
	t.Logf("interrupted: %v; %d of %d gone afterwards", err, gone, n)
	if r.Count != gone && !strings.Contains(err.Error(), "the request in flight, 10000 devices in one batch") {
		t.Errorf("an interrupted batch reported %d deleted (%v), but %d are gone; want the count exact or the request in flight named", r.Count, err, gone)
	}
}

// TestRecordsOfAnotherRunNetns: a process in a mount namespace with a
// /run/netns of its own (a tmpfs) but the machine's /run/ndst writes its
// records beside the machine's: the machine's ndst neither prunes them nor
// judges its namespaces by them, and the other way round.
func TestRecordsOfAnotherRunNetns(t *testing.T) {
	skipUnlessRoot(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 1, Template: tmpl}); err != nil || r.Count != 1 {
		t.Fatalf("NetnsAdd(1) = %+v, %v", r, err)
	}
	other := netnsDirDev() + 1
	write := func(name string, r record) {
		t.Helper()
		if err := os.WriteFile(ownerPath(name), r.encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Another /run/netns's record of a name this one lacks: kept.
	write("elsewhere1", record{id: nsIdentity{Kind: identityKind(), ID: 99, Ino: nsID{1, 1}}, dir: other, pid: 1, start: 1})
	t.Cleanup(func() { os.Remove(ownerPath("elsewhere1")) })
	// Ndst's namespace here, its record rewritten as another /run/netns's:
	// not ndst's here.
	rec, err := readRecord(tmpl.Name(1))
	if err != nil {
		t.Fatal(err)
	}
	good := rec
	rec.dir = other
	write(tmpl.Name(1), rec)
	if n := judgeEntry(tmpl.Name(1)); n.Ours || !strings.Contains(n.Why, "another /run/netns") {
		t.Errorf("a namespace judged by another /run/netns's record: %+v", n)
	}
	if _, err := ResetAll(ctx, Options{Netns: b.o.Netns + "-none"}); err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord("elsewhere1"); err != nil {
		t.Errorf("reset pruned another /run/netns's record: %v", err)
	}
	if _, err := os.Stat(nsPath(tmpl.Name(1))); err != nil {
		t.Errorf("reset deleted a namespace by another /run/netns's record: %v", err)
	}
	write(tmpl.Name(1), good)
	if r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 1, Template: tmpl}); err != nil || r.Count != 1 {
		t.Errorf("NetnsDel once the record is this /run/netns's again = %+v, %v", r, err)
	}
}

// TestStrangeEntriesUnderRunNetns: a FIFO, a device node, a directory and a
// link under /run/netns, with records of their names, are judged from
// their lstat alone (nothing is opened, nothing blocks), never ndst's, and
// reset leaves them.
func TestStrangeEntriesUnderRunNetns(t *testing.T) {
	skipUnlessRoot(t)
	if err := ensureNetnsDir(); err != nil {
		t.Fatal(err)
	}
	names := []string{"strange-fifo", "strange-dev", "strange-dir", "strange-link"}
	t.Cleanup(func() {
		for _, n := range names {
			os.RemoveAll(nsPath(n))
			os.Remove(ownerPath(n))
		}
	})
	if err := unix.Mkfifo(nsPath(names[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(nsPath(names[1]), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(nsPath(names[2]), 0o700)
	os.Symlink("/proc/1/ns/net", nsPath(names[3]))
	for _, n := range names {
		if err := writeRecord(n, nsIdentity{Kind: identityKind(), ID: 5, Ino: nsID{1, 9}}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan []namespace, 1)
	go func() {
		var out []namespace
		for _, n := range names {
			out = append(out, judgeEntry(n))
		}
		done <- out
	}()
	select {
	case judged := <-done:
		for _, n := range judged {
			if n.Ours || n.Leftover {
				t.Errorf("%s judged %+v, want someone else's", n.Name, n)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("judging the strange entries blocked")
	}
	if _, err := ResetAll(context.Background(), Options{Netns: "strange-none"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := os.Lstat(nsPath(n)); err != nil {
			t.Errorf("reset removed %s: %v", n, err)
		}
	}
}
