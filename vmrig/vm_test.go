package vmrig

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
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

// mustBoot runs one boot (bounded by 5 minutes) and fails the test, with
// the rig's stderr, when the rig itself fails.
func mustBoot(t *testing.T, what string, cfg Config, cmds [][]string) *Boot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	boot, err := Run(ctx, cfg, cmds...)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			t.Fatalf("Run(%s) error = %v\n%s", what, err, e.Stderr)
		}
		t.Fatalf("Run(%s) error = %v", what, err)
	}
	t.Logf("boot: %v wall (qemu %v), accel %s, kernel %s", time.Since(start).Round(time.Millisecond), boot.Wall(), boot.Host["accel"], boot.Host["release"])
	return boot
}

// listing is ndst's "list --json" output.
type listing struct {
	Count   int           `json:"count"`
	Devices []ndst.Device `json:"devices"`
}

// TestVMSmoke boots the stock kernel once (1 CPU, preempt=none) and runs
// ndst's netlink backend on 100 real dummy links: add, list, batched del,
// add again, one-by-one del, list.
func TestVMSmoke(t *testing.T) {
	cfg := needVM(t)
	cfg.CPUs, cfg.Preempt, cfg.Timeout = 1, "none", 150*time.Second
	cmds := [][]string{
		{"--json", "add", "100"},
		{"--json", "list"},
		{"--json", "del", "1", "1000000"},
		{"--json", "add", "100"},
		{"--json", "del", "1", "1000000", "--one-by-one"},
		{"--json", "list"},
	}
	boot := mustBoot(t, "smoke", cfg, cmds)
	if got := boot.Guest["cpus"]; got != "1" {
		t.Errorf("guest cpus = %q, want 1", got)
	}
	if got := boot.Guest["preempt"]; got != "none" {
		t.Errorf("guest preempt = %q, want none", got)
	}
	if boot.Module != "dummy loaded" {
		t.Errorf("module line = %q, want %q", boot.Module, "dummy loaded")
	}
	for i, c := range boot.Commands {
		if c.Exit != 0 {
			t.Fatalf("guest command %d (%s) exit = %d, want 0; stdout %q, stderr %q", i+1, c.Args, c.Exit, c.Stdout, c.Stderr)
		}
		// The netlink backend must find the dummy kind: no fallback note.
		if strings.Contains(c.Stderr, "no dummy") || strings.Contains(c.Stdout, "no dummy") {
			t.Errorf("guest command %d (%s) fell back from dummy: stdout %q, stderr %q", i+1, c.Args, c.Stdout, c.Stderr)
		}
	}
	result := func(i int, wantCount int, wantBatched bool) {
		t.Helper()
		var r ndst.Result
		if err := json.Unmarshal([]byte(boot.Commands[i].Stdout), &r); err != nil {
			t.Fatalf("command %d (%s): cannot decode %q: %v", i+1, boot.Commands[i].Args, boot.Commands[i].Stdout, err)
		}
		if r.Count != wantCount || r.Result != ndst.ResultOK || r.Backend != "netlink" || r.Kind != "dummy" || r.Batched != wantBatched {
			t.Errorf("command %d (%s) = count %d, result %q, backend %q, kind %q, batched %v; want %d, ok, netlink, dummy, %v",
				i+1, boot.Commands[i].Args, r.Count, r.Result, r.Backend, r.Kind, r.Batched, wantCount, wantBatched)
		}
		for _, n := range r.Notes {
			if strings.Contains(n, "dummy link type") {
				t.Errorf("command %d (%s) note %q: want no fallback from dummy", i+1, boot.Commands[i].Args, n)
			}
		}
	}
	list := func(i int, wantOwn int) {
		t.Helper()
		var l listing
		if err := json.Unmarshal([]byte(boot.Commands[i].Stdout), &l); err != nil {
			t.Fatalf("command %d (%s): cannot decode %q: %v", i+1, boot.Commands[i].Args, boot.Commands[i].Stdout, err)
		}
		own := 0
		for _, d := range l.Devices {
			if d.Foreign {
				continue
			}
			own++
			if d.Kind != "dummy" {
				t.Errorf("command %d (%s): device %s kind = %q, want dummy", i+1, boot.Commands[i].Args, d.Name, d.Kind)
			}
		}
		if own != wantOwn {
			t.Errorf("command %d (%s) = %d ndst devices, want %d", i+1, boot.Commands[i].Args, own, wantOwn)
		}
	}
	result(0, 100, false)
	list(1, 100)
	result(2, 100, true)
	result(3, 100, false)
	result(4, 100, false)
	list(5, 0)
}

// TestVMBadModule boots the stock kernel with a dummy.ko that does not load:
// the rig must name the cause and fail as a kernel problem.
func TestVMBadModule(t *testing.T) {
	cfg := needVM(t)
	dir := t.TempDir()
	img, err := os.ReadFile(fetchKernel.Vmlinuz)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kernel = filepath.Join(dir, "vmlinuz")
	if err := os.WriteFile(cfg.Kernel, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dummy.ko"), []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.GuestBin, cfg.Timeout = "/bin/busybox", 120*time.Second
	cfg.Env = []string{"TMPDIR=" + dir}
	_, err = Run(context.Background(), cfg, []string{"true"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindKernel || !strings.Contains(e.Msg, "insmod dummy.ko failed") {
		t.Errorf("Run(bad dummy.ko) error = %v, want a kernel error containing %q", err, "insmod dummy.ko failed")
	}
	if left := ownProcesses(t, dir); len(left) > 0 {
		t.Errorf("after Run: processes left running: %q, want none", left)
	}
}

// netnsResult decodes a guest command's ndst result; it fails the test on
// a non-zero exit or an undecodable output.
func netnsResult(t *testing.T, c CommandResult) ndst.Result {
	t.Helper()
	if c.Exit != 0 {
		t.Fatalf("guest command %d (%s) exit = %d, want 0; stdout %q, stderr %q", c.Index, c.Args, c.Exit, c.Stdout, c.Stderr)
	}
	var r ndst.Result
	if err := json.Unmarshal([]byte(c.Stdout), &r); err != nil {
		t.Fatalf("guest command %d (%s): cannot decode %q: %v", c.Index, c.Args, c.Stdout, err)
	}
	if r.Result != ndst.ResultOK {
		t.Errorf("guest command %d (%s) result = %q (%s), want ok", c.Index, c.Args, r.Result, r.Error)
	}
	return r
}

// TestVMVeth boots the stock kernel (1 CPU) and checks that the guest makes
// veth pairs: the rig loads the kernel's veth.ko, and ndst's netlink backend
// adds namespaces with lo up and a veth pair each (the outer end in ndst's
// namespace) and deletes them, all at once and one at a time, seeing the
// devices gone and the cleanup done.
func TestVMVeth(t *testing.T) {
	cfg := needVM(t)
	if fetchKernel.Veth == "none" {
		t.Skipf("kernel %s has no veth: %s", fetchKernel.Release, fetchKernel.VethWhy)
	}
	cfg.CPUs, cfg.Preempt, cfg.Timeout = 1, "none", 150*time.Second
	boot := mustBoot(t, "veth", cfg, [][]string{
		{"--json", "netns", "add", "5", "--veth", "--lo-up"},
		{"--json", "netns", "del", "1", "5"},
		{"--json", "netns", "add", "3", "--veth", "--lo-up"},
		{"--json", "netns", "del", "1", "3", "--one-by-one"},
	})
	want := "loaded"
	if fetchKernel.Veth == "builtin" {
		want = "built in"
	}
	if got := boot.ModuleState("veth"); got != want {
		t.Errorf("guest's veth module line = %q, want %q (fetch found %q)", got, want, fetchKernel.Veth)
	}
	for i, n := range []int{5, 3} {
		add := netnsResult(t, boot.Commands[2*i])
		if add.Counters["namespaces_created"] != int64(n) || add.Counters["veth_pairs"] != int64(n) {
			t.Errorf("guest command %d (%s) counters = %v, want %d namespaces and %d veth pairs", 2*i+1, boot.Commands[2*i].Args, add.Counters, n, n)
		}
		del := netnsResult(t, boot.Commands[2*i+1])
		style := []string{ndst.StyleAllAtOnce, ndst.StyleOneByOne}[i]
		if nt := del.Netns; nt == nil || nt.Namespaces != n || nt.Style != style || nt.GoneNS == nil || nt.DoneNS == nil || *nt.DoneNS < *nt.GoneNS {
			t.Errorf("guest command %d (%s) netns times = %+v, want %d namespaces deleted %s with their devices' end and the cleanup's end seen", 2*i+2, boot.Commands[2*i+1].Args, nt, n, style)
		}
	}
}

// TestVMNoVeth boots the stock kernel as a bare vmlinuz with dummy.ko beside
// it and neither veth.ko nor a config: the guest must say it has no veth and
// why, run what needs no veth, and fail the veth namespaces with an error
// that names the veth pair, the rig itself succeeding.
func TestVMNoVeth(t *testing.T) {
	cfg := needVM(t)
	if fetchKernel.Module == "builtin" {
		t.Skip("the stock kernel has dummy built in; this test stages dummy.ko beside a bare vmlinuz")
	}
	dir := t.TempDir()
	for src, dst := range map[string]string{fetchKernel.Vmlinuz: "vmlinuz", fetchKernel.Module: "dummy.ko"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Kernel = filepath.Join(dir, "vmlinuz")
	cfg.CPUs, cfg.Preempt, cfg.Timeout = 1, "none", 120*time.Second
	cfg.Env = []string{"TMPDIR=" + dir}
	boot := mustBoot(t, "no veth", cfg, [][]string{
		{"--json", "netns", "add", "2", "--lo-up"},
		{"--json", "netns", "add", "1", "--veth", "--lo-up"},
	})
	if got := boot.ModuleState("veth"); !strings.HasPrefix(got, "absent: ") || !strings.Contains(got, "no veth.ko") {
		t.Errorf("guest's veth module line = %q, want absent with the reason", got)
	}
	netnsResult(t, boot.Commands[0])
	if c := boot.Commands[1]; c.Exit == 0 || !strings.Contains(c.Stdout+c.Stderr, "veth") {
		t.Errorf("guest command 2 (%s) exit = %d, stdout %q, stderr %q; want a failure naming the veth pair", c.Args, c.Exit, c.Stdout, c.Stderr)
	}
	if left := ownProcesses(t, dir); len(left) > 0 {
		t.Errorf("after Run: processes left running: %q, want none", left)
	}
}
