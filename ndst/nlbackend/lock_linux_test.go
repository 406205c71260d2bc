package nlbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

func TestParseLockHolder(t *testing.T) {
	id := nsID{dev: unix.Mkdev(0, 4), ino: 4026532177}
	locks := `1: POSIX  ADVISORY  WRITE 700 00:19:4026532177 0 EOF
2: FLOCK  ADVISORY  WRITE 29185 00:04:4026532178 0 EOF
2: -> FLOCK  ADVISORY  WRITE 31000 00:04:4026532177 0 EOF
3: FLOCK  ADVISORY  WRITE 29186 00:04:4026532177 0 EOF
`
	if got := parseLockHolder(strings.NewReader(locks), id); got != 29186 {
		t.Errorf("parseLockHolder = %d, want 29186 (the FLOCK holder, not the POSIX lock, another inode or a waiter)", got)
	}
	if got := parseLockHolder(strings.NewReader("garbage\n\n1: FLOCK\n"), id); got != 0 {
		t.Errorf("parseLockHolder(garbage) = %d, want 0", got)
	}
}

// TestLockWait holds a namespace's lock from a second descriptor (as
// another process would) and checks that add and del wait for it within
// WaitLock, fail after it naming the holder and changing nothing, and
// succeed once it is released.
func TestLockWait(t *testing.T) {
	name := freshNS(t)
	b := openFresh(t, Options{Netns: name, Kind: "ifb", KindExplicit: true, WaitLock: 100 * time.Millisecond})
	mustAdd(t, b, ndst.AddRequest{Count: 3})
	fd, err := unix.Open(nsPath(name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	unlock, err := lockNetns(context.Background(), fd, name, 0)
	if err != nil {
		t.Fatalf("lockNetns = %v", err)
	}
	t0 := time.Now()
	r, err := b.Add(context.Background(), ndst.AddRequest{Count: 2})
	waited := time.Since(t0)
	if r != nil || !errors.Is(err, errNetnsLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), "--wait-lock") {
		t.Errorf("Add while locked = %+v, %v; want a lock error naming pid %d and --wait-lock", r, err, os.Getpid())
	}
	if waited < 100*time.Millisecond || waited > 10*time.Second {
		t.Errorf("Add waited %v for the lock, want about WaitLock (100ms)", waited)
	}
	if r, err := b.Del(context.Background(), ndst.DelRequest{Start: 1, Stop: 1 << 30}); r != nil || !errors.Is(err, errNetnsLocked) {
		t.Errorf("Del while locked = %+v, %v; want a lock error", r, err)
	}
	if rep, err := ResetNamespace(context.Background(), Options{Netns: name}); rep != nil || !errors.Is(err, errNetnsLocked) {
		t.Errorf("ResetNamespace while locked = %+v, %v; want a lock error", rep, err)
	}
	if owned, _ := names(mustList(t, b)); len(owned) != 3 { // listing takes no lock
		t.Errorf("while locked, %d owned devices, want the 3 from before", len(owned))
	}
	// Cancelling stops the wait at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := openFresh(t, Options{Netns: name, WaitLock: time.Hour})
	if _, err := long.Add(ctx, ndst.AddRequest{Count: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Add with a cancelled context = %v, want Canceled", err)
	}
	// Released within the wait: the add goes ahead.
	go func() {
		time.Sleep(50 * time.Millisecond)
		unlock()
	}()
	long.o.WaitLock = 30 * time.Second
	if r, err := long.Add(context.Background(), ndst.AddRequest{Count: 2}); err != nil || r.Count != 2 {
		t.Errorf("Add after the lock was released = %+v, %v; want 2 created", r, err)
	}
}

// childOp runs one backend operation in a child process (the test binary
// started again), printing its Result as JSON on a line "RESULT: ...".
func childOp() {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("NDST_CHILD_N"))
	o := Options{Netns: os.Getenv("NDST_CHILD_NS"), Kind: "ifb", KindExplicit: true, WaitLock: time.Minute}
	if os.Getenv("NDST_CHILD_OP") != "add" {
		o.NoCreate = true
	}
	b, err := Open(ctx, o)
	if err != nil {
		fmt.Printf("ERROR: %v\n", err)
		return
	}
	defer b.Close()
	// All children start their request together.
	if at, err := strconv.ParseInt(os.Getenv("NDST_CHILD_AT"), 10, 64); err == nil {
		time.Sleep(time.Until(time.Unix(0, at)))
	}
	var r *ndst.Result
	switch os.Getenv("NDST_CHILD_OP") {
	case "add":
		tm, _ := ndst.ParseTemplate(os.Getenv("NDST_CHILD_TEMPLATE"))
		r, err = b.Add(ctx, ndst.AddRequest{Count: n, Template: tm})
	case "del":
		stop, _ := strconv.Atoi(os.Getenv("NDST_CHILD_STOP"))
		r, err = b.Del(ctx, ndst.DelRequest{Start: n, Stop: stop})
	}
	if err != nil {
		fmt.Printf("ERROR: %v\n", err)
	}
	j, _ := json.Marshal(r)
	fmt.Printf("RESULT: %s\n", j)
}

// runChildren starts one child per env set at the same moment and returns
// their Results.
func runChildren(t *testing.T, envs [][]string) []*ndst.Result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(300 * time.Millisecond).UnixNano()
	results := make([]*ndst.Result, len(envs))
	var wg sync.WaitGroup
	for i, env := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^TestConcurrentProcesses$")
			cmd.Env = append(append(os.Environ(), "NDST_CHILD=1", fmt.Sprintf("NDST_CHILD_AT=%d", at)), env...)
			out, err := cmd.CombinedOutput()
			s := string(out)
			if err != nil || strings.Contains(s, "ERROR:") {
				t.Errorf("child %v: %v\n%s", env, err, s)
			}
			for _, line := range strings.Split(s, "\n") {
				if j, ok := strings.CutPrefix(line, "RESULT: "); ok {
					if err := json.Unmarshal([]byte(j), &results[i]); err != nil {
						t.Errorf("child %v: bad result %q: %v", env, j, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	return results
}

// TestConcurrentProcesses runs ndst operations in several processes at once
// on one namespace: three adds all succeed with distinct names (the lock
// serialises them), and a batched del racing an add deletes exactly the
// devices that were in its range, never the add's.
func TestConcurrentProcesses(t *testing.T) {
	if os.Getenv("NDST_CHILD") == "1" {
		childOp()
		return
	}
	name := freshNS(t)
	b := openFresh(t, Options{Netns: name, Kind: "ifb", KindExplicit: true})
	const n = 300 // more than one window, so the adds would interleave
	env := func(kv ...string) []string { return append([]string{"NDST_CHILD_NS=" + name}, kv...) }
	res := runChildren(t, [][]string{
		env("NDST_CHILD_OP=add", "NDST_CHILD_N=300", "NDST_CHILD_TEMPLATE=c%d"),
		env("NDST_CHILD_OP=add", "NDST_CHILD_N=300", "NDST_CHILD_TEMPLATE=c%d"),
		env("NDST_CHILD_OP=add", "NDST_CHILD_N=300", "NDST_CHILD_TEMPLATE=c%d"),
	})
	for i, r := range res {
		if r == nil || r.Count != n || r.Result != ndst.ResultOK {
			t.Errorf("concurrent add #%d = %+v, want %d created", i, r, n)
		}
	}
	owned, _ := names(mustList(t, b))
	slices.Sort(owned)
	if len(owned) != 3*n || len(slices.Compact(slices.Clone(owned))) != 3*n {
		t.Fatalf("after 3 concurrent adds of %d: %d owned devices, want %d with distinct names", n, len(owned), 3*n)
	}

	// A batched del of the lower part racing an add. Both orders can
	// happen; in both the del takes exactly the devices of its range that
	// existed before (new devices get higher ifindexes) and the add's
	// devices all survive.
	for round := range 3 {
		devs := mustList(t, b)
		var ours []ndst.Device
		for _, d := range devs {
			if !d.Foreign {
				ours = append(ours, d)
			}
		}
		stop := ours[len(ours)/2].Ifindex
		inRange := 0
		for _, d := range ours {
			if d.Ifindex <= stop {
				inRange++
			}
		}
		tmpl := fmt.Sprintf("r%d_%%d", round)
		res := runChildren(t, [][]string{
			env("NDST_CHILD_OP=del", "NDST_CHILD_N=1", fmt.Sprintf("NDST_CHILD_STOP=%d", stop)),
			env("NDST_CHILD_OP=add", "NDST_CHILD_N=300", "NDST_CHILD_TEMPLATE="+tmpl),
		})
		if res[0] == nil || res[0].Count != inRange {
			t.Errorf("round %d: del 1 %d racing an add = %+v, want exactly the %d devices in range deleted", round, stop, res[0], inRange)
		}
		if res[1] == nil || res[1].Count != n {
			t.Errorf("round %d: add racing a del = %+v, want %d created", round, res[1], n)
		}
		after := mustList(t, b)
		left := map[string]bool{}
		for _, d := range after {
			left[d.Name] = true
		}
		for _, d := range ours {
			if d.Ifindex > stop && !left[d.Name] {
				t.Errorf("round %d: %s (ifindex %d, above the range) was deleted", round, d.Name, d.Ifindex)
			}
		}
		for i := range n {
			if nm := fmt.Sprintf(tmpl, i); !left[nm] {
				t.Errorf("round %d: the racing add's %s was deleted", round, nm)
				break
			}
		}
	}
}

// TestDeleteTakesOnlyWhatItListed adds links between a batched del's
// listing and its requests, as a process that does not take the lock
// would: neither the whole-group delete nor the move-and-delete takes them.
func TestDeleteTakesOnlyWhatItListed(t *testing.T) {
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) {
			b := openFresh(t, Options{Kind: "ifb", KindExplicit: true, NameExplicit: true})
			mustAdd(t, b, ndst.AddRequest{Count: 20})
			lo, hi := ownedRange(mustList(t, b))
			if partial {
				hi = lo + 9
			}
			links, err := b.dump()
			if err != nil {
				t.Fatal(err)
			}
			other := freeGroup(links) // a group no link has
			t.Cleanup(func() { testHook = nil })
			testHook = func(event string, _ int) {
				if event != "del-listed" {
					return
				}
				// Another add's links: a group of their own, as every add
				// makes, and also one in the shared group of older ndst.
				var m msg
				want := map[uint32]int{}
				for i, g := range []uint32{other, GroupOwned} {
					seq := b.c.nextSeq()
					appendNewLink(&m, seq, "ifb", fmt.Sprintf("late%d", i), "", g)
					want[seq] = i
				}
				if err := b.c.send(m.b); err != nil {
					t.Errorf("send: %v", err)
				}
				if err := b.c.barrier(want, time.Now().Add(10*time.Second), func(i int, err error) {
					t.Errorf("create late%d: %v", i, err)
				}); err != nil {
					t.Errorf("barrier: %v", err)
				}
			}
			r, err := b.Del(context.Background(), ndst.DelRequest{Start: lo, Stop: hi})
			testHook = nil
			want := 20
			if partial {
				want = 10
			}
			if err != nil || r.Count != want {
				t.Fatalf("Del(%d, %d) = %+v, %v; want %d deleted", lo, hi, r, err, want)
			}
			owned, _ := names(mustList(t, b))
			if !slices.Contains(owned, "late0") || !slices.Contains(owned, "late1") || len(owned) != 20-want+2 {
				t.Errorf("after Del: owned %v, want late0, late1 and the %d outside the range", owned, 20-want)
			}
		})
	}
}
