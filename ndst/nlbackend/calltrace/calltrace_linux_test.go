package calltrace

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"golang.org/x/sys/unix"
)

// TestReturns: two calls of one system call on this thread are recorded in
// order, each between the user-space times before and after it, and a call
// of another system call is not.
func TestReturns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tracepoints need root")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, err := Open(unix.Gettid(), unix.SYS_UMOUNT2)
	if err != nil {
		t.Skipf("cannot trace system calls here: %v", err)
	}
	defer w.Close()
	var before, after [2]int64
	for i := range 2 {
		before[i] = sender.Monotonic()
		// Fails (EINVAL: not a mount point), returns all the same.
		_ = unix.Unmount(t.TempDir(), unix.MNT_DETACH)
		after[i] = sender.Monotonic()
		unix.Getpid()
	}
	var times, rets []int64
	for deadline := time.Now().Add(5 * time.Second); len(times) < 2 && time.Now().Before(deadline); {
		times, rets = w.Returns()
		time.Sleep(time.Millisecond)
	}
	if len(times) != 2 {
		t.Fatalf("recorded %d returns (lost %d), want 2", len(times), w.Lost())
	}
	for i := range 2 {
		if times[i] < before[i] || times[i] > after[i] {
			t.Errorf("return %d at %d, outside its call (%d..%d)", i, times[i], before[i], after[i])
		}
		if rets[i] != -int64(unix.EINVAL) {
			t.Errorf("return %d: ret %d, want -EINVAL", i, rets[i])
		}
	}
}
