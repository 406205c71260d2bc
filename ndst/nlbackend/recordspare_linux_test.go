package nlbackend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

// useOwnerDir points the records at a directory of the test's own.
func useOwnerDir(t *testing.T) {
	t.Helper()
	was := ownerDir
	ownerDir = filepath.Join(t.TempDir(), "netns")
	t.Cleanup(func() { ownerDir = was })
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func spareCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(spareDir())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}

// TestRecordSpares: a removed record's file is the next record's, with
// the next record's content; no more than maxSpares are kept, and the
// rest are removed.
func TestRecordSpares(t *testing.T) {
	useOwnerDir(t)
	id := func(n uint64) nsIdentity { return nsIdentity{Kind: kindNsid, ID: n, Ino: nsID{1, n}} }
	if err := writeRecord("a", id(1)); err != nil {
		t.Fatal(err)
	}
	ino := inodeOf(t, ownerPath("a"))
	if err := removeRecord("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ownerPath("a")); !os.IsNotExist(err) {
		t.Fatalf("the record is still there after removeRecord: %v", err)
	}
	if n := spareCount(t); n != 1 {
		t.Fatalf("%d spares after one remove, want 1", n)
	}
	if err := writeRecord("b", id(2)); err != nil {
		t.Fatal(err)
	}
	if got := inodeOf(t, ownerPath("b")); got != ino {
		t.Errorf("the next record got inode %d, want the spare's %d", got, ino)
	}
	r, err := readRecord("b")
	if err != nil || r.id != id(2) {
		t.Errorf("readRecord(b) = %+v, %v; want identity %+v", r, err, id(2))
	}
	if n := spareCount(t); n != 0 {
		t.Errorf("%d spares after the take, want 0", n)
	}
	if err := removeRecord("b"); err != nil {
		t.Fatal(err)
	}

	was := maxSpares
	maxSpares = 2
	t.Cleanup(func() { maxSpares = was })
	for i := range uint64(5) {
		if err := writeRecord("c"+string(rune('0'+i)), id(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if err := removeRecord("c" + string(rune('0'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := spareCount(t); n != 2 {
		t.Errorf("%d spares after five removes with maxSpares 2, want 2", n)
	}
	if ents, _ := os.ReadDir(ownerDir); len(ents) != 0 {
		t.Errorf("records left: %v", ents)
	}
	if err := removeRecord("never-written"); err != nil {
		t.Errorf("removeRecord of a record that is gone = %v, want nil", err)
	}
	if n, err := dropSpares(); n != 2 || err != nil {
		t.Errorf("dropSpares() = %d, %v; want 2, nil", n, err)
	}
	if _, err := os.Lstat(spareDir()); !os.IsNotExist(err) {
		t.Errorf("spareDir is still there after dropSpares: %v", err)
	}
}

// TestRecordSparesStrangeEntries: what is not a regular file in spareDir
// is never written to, and a spare replaced by a FIFO after it was listed
// neither hangs the write nor stops the record from being written.
func TestRecordSparesStrangeEntries(t *testing.T) {
	useOwnerDir(t)
	id := nsIdentity{Kind: kindNsid, ID: 3, Ino: nsID{1, 3}}
	if err := writeRecord("x", id); err != nil {
		t.Fatal(err)
	}
	if err := removeRecord("x"); err != nil { // one spare, listed
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(spareDir())
	if len(ents) != 1 {
		t.Fatalf("spares: %v, want one", ents)
	}
	spare := filepath.Join(spareDir(), ents[0].Name())
	os.Remove(spare)
	if err := unix.Mkfifo(spare, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(spareDir(), "dir"), 0o755)
	os.Symlink("/dev/null", filepath.Join(spareDir(), "link"))
	done := make(chan error, 1)
	go func() { done <- writeRecord("y", id) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writeRecord beside a FIFO spare = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("writeRecord hung on a FIFO in spareDir")
	}
	if r, err := readRecord("y"); err != nil || r.id != id {
		t.Errorf("readRecord(y) = %+v, %v", r, err)
	}
	var st unix.Stat_t
	if unix.Lstat("/dev/null", &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Errorf("/dev/null changed")
	}
	// Relisted by a process that starts now: only regular files.
	spares.mu.Lock()
	spares.listed = false
	spareList()
	names := append([]string(nil), spares.names...)
	spares.mu.Unlock()
	if len(names) != 0 {
		t.Errorf("listed as spares: %v, want none (a directory and a link)", names)
	}
	if _, err := dropSpares(); err != nil {
		t.Errorf("dropSpares() = %v", err)
	}
}

// TestRecordSparesHardLink: a spare that is another file's second name is
// never written: that file keeps its content and the record is whole.
func TestRecordSparesHardLink(t *testing.T) {
	useOwnerDir(t)
	id := nsIdentity{Kind: kindNsid, ID: 4, Ino: nsID{1, 4}}
	if err := os.MkdirAll(spareDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(ownerDir), "other")
	if err := os.WriteFile(other, []byte("not ndst's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(other, filepath.Join(spareDir(), "1-1")); err != nil {
		t.Skipf("no hard link beside the records: %v", err)
	}
	spares.mu.Lock()
	spares.listed = false
	spares.mu.Unlock()
	if err := writeRecord("z", id); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "not ndst's\n" {
		t.Errorf("the linked file reads %q, %v; want it untouched", b, err)
	}
	if r, err := readRecord("z"); err != nil || r.id != id {
		t.Errorf("readRecord(z) = %+v, %v", r, err)
	}
	// A record with a second name is removed, not kept as a spare.
	if err := os.Link(ownerPath("z"), filepath.Join(filepath.Dir(ownerDir), "z2")); err != nil {
		t.Fatal(err)
	}
	if err := removeRecord("z"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(spareDir()); len(ents) != 0 {
		t.Errorf("spares after removing a record with two names: %v, want none", ents)
	}
}

// TestRecordSparesConcurrent: records written and removed on several
// threads at once, from the spares, each with its own content.
func TestRecordSparesConcurrent(t *testing.T) {
	useOwnerDir(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := "w" + string(rune('a'+w))
				id := nsIdentity{Kind: kindNsid, ID: uint64(w*1000 + i), Ino: nsID{1, uint64(i)}}
				if err := writeRecord(name, id); err != nil {
					errs <- err
					return
				}
				if r, err := readRecord(name); err != nil || r.id != id {
					errs <- fmt.Errorf("readRecord(%s) = %+v, %v; want identity %+v", name, r, err, id)
					return
				}
				if err := removeRecord(name); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%v", err)
	}
	if n := spareCount(t); n < 1 || n > 8 {
		t.Errorf("%d spares after 8 threads each kept one record at a time, want 1..8", n)
	}
}

// TestResetRemovesSpares: after namespaces are made and deleted, their
// records' files are spares, and reset removes them.
func TestResetRemovesSpares(t *testing.T) {
	skipUnlessRoot(t)
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	tmpl := netnsTemplate(t)
	ctx := context.Background()
	if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 3, Template: tmpl}); err != nil || r.Count != 3 {
		t.Fatalf("NetnsAdd(3) = %+v, %v", r, err)
	}
	if r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 3, Template: tmpl}); err != nil || r.Count != 3 {
		t.Fatalf("NetnsDel(1, 3) = %+v, %v", r, err)
	}
	if n := spareCount(t); n < 3 {
		t.Fatalf("%d spares after deleting 3 namespaces, want at least 3", n)
	}
	b.Close()
	if _, err := ResetAll(ctx, Options{Netns: b.o.Netns}); err != nil {
		t.Fatalf("ResetAll = %v", err)
	}
	if _, err := os.Lstat(spareDir()); !os.IsNotExist(err) {
		t.Errorf("%s is still there after reset: %v", spareDir(), err)
	}
}
