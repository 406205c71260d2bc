package vmrig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	fetchOnce   sync.Once
	fetchKernel *Kernel
	fetchErr    error
)

// needVM skips the test unless this host can boot the rig: root, qemu, a
// static busybox, go, and a stock kernel (fetched once into the cache).
func needVM(t *testing.T) Config {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a VM: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (the VM rig fetches a kernel package and boots qemu); run scripts/ci-deps.sh and go test as root")
	}
	if err := HostReady(nil); err != nil {
		t.Skipf("cannot boot a VM here: %v", err)
	}
	script, err := FindScript()
	if err != nil {
		t.Fatal(err)
	}
	fetchOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		fetchKernel, fetchErr = Fetch(ctx, Config{Script: script})
	})
	if fetchErr != nil {
		if Skippable(fetchErr) {
			t.Skipf("cannot get the stock kernel: %v", fetchErr)
		}
		t.Fatalf("Fetch() error = %v", fetchErr)
	}
	return Config{Script: script}
}

// ownProcesses lists the processes whose command line mentions dir (the
// rig's work folder lives there: qemu's -initrd and -pidfile paths).
func ownProcesses(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cl := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cl, dir) {
			found = append(found, e.Name()+": "+cl)
		}
	}
	return found
}

// TestVMStopped checks the two ways a boot is cut short: the rig's own
// timeout (a guest that does not power off in time) and a cancelled context.
// Both must report a guest failure and leave no qemu behind.
func TestVMStopped(t *testing.T) {
	cfg := needVM(t)
	cfg.GuestBin = "/bin/busybox"
	tests := []struct {
		name    string
		timeout time.Duration // the rig's
		ctxWait time.Duration // the caller's
		wantMsg string
	}{
		{"rig timeout", 3 * time.Second, time.Minute, "did not power off within 3s"},
		{"context cancelled", 5 * time.Minute, 3 * time.Second, "stopped: context deadline exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := cfg
			c.Timeout = tc.timeout
			c.Env = []string{"TMPDIR=" + dir}
			ctx, cancel := context.WithTimeout(context.Background(), tc.ctxWait)
			defer cancel()
			start := time.Now()
			_, err := Run(ctx, c, []string{"sleep", "600"})
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindGuest || !strings.Contains(e.Msg, tc.wantMsg) {
				t.Errorf("Run(sleep 600) error = %v, want a guest error containing %q", err, tc.wantMsg)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("Run(sleep 600) took %v, want it stopped within 30s", d)
			}
			if left := ownProcesses(t, dir); len(left) > 0 {
				t.Errorf("after Run: processes left running: %q, want none", left)
			}
		})
	}
}
