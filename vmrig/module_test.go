package vmrig

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

var (
	moduleOnce sync.Once
	moduleErr  error
)

// needModule is needVM plus the ndst module built against the kernel's
// headers (fetched once); it skips where the headers or the compiler cannot
// be had.
func needModule(t *testing.T) Config {
	t.Helper()
	cfg := needVM(t)
	moduleOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, moduleErr = Fetch(ctx, Config{Script: cfg.Script, Module: true})
	})
	if moduleErr != nil {
		if Skippable(moduleErr) {
			t.Skipf("cannot build the ndst module for the stock kernel: %v", moduleErr)
		}
		t.Fatalf("Fetch(module) error = %v", moduleErr)
	}
	cfg.Module = true
	return cfg
}

// The guest-side steps of TestVMModule, as a person would type them in the
// guest's busybox shell. The first two use ndst's module backend (in ndst's
// own namespace); the rest use the module's files in the guest's root
// namespace directly.
var moduleSteps = []string{
	// 1: ndst --backend module, the same contract as the other backends.
	`ndst --backend module --json add 20 && ndst --backend module --json list && ndst --backend module --json del 1 1000 --one-by-one && ndst --backend module --json add 5`,
	// 2: bad writes fail with EINVAL and change nothing; two writers at once are serialised.
	`cd /proc/sys/net/ndst && echo 3 > add && cat last && for w in abc 0 -1 +5 99999999999 32769 '1 x%d%d' '1 2 3' '1 a/%d'; do echo "$w" > add && echo "accepted add $w"; done; for w in '5 1' '0 3' '1' 'a b' '1 2 3' '1 99999999999'; do echo "$w" > del && echo "accepted del $w"; done; cat last; wc -l < devices; echo 30 > add & echo 30 > add & wait; wc -l < devices; cut -d' ' -f2 devices | sort -u | wc -l; cat last`,
	// 3: a hold on a foreign device (lo) or an unknown one is ENODEV; rtnetlink can neither delete nor create the module's devices.
	`cd /proc/sys/net/ndst && echo 1 1000 > hold; echo 99999 1000 > hold; i=$(head -n 1 devices | cut -d' ' -f1); n=$(head -n 1 devices | cut -d' ' -f2); ip link del "$n"; ip link add foo type ndst; grep -c . devices`,
	// 4: a held reference makes del wait, and the kernel says so.
	`echo 1 > /proc/sys/net/core/netdev_unregister_timeout_secs && cd /proc/sys/net/ndst && i=$(head -n 1 devices | cut -d' ' -f1) && echo "$i 2500" > hold && cat hold && echo "$i $i" > del && cat last`,
	// 5: deleting ndst's namespace with the module's devices in it (the module's namespace exit unregisters them).
	`ndst --backend netlink reset && ndst --backend module list; echo "list exit $?"; sleep 1; ndst --backend module --json add 2 && ndst --backend netlink reset`,
	// 6: unload with a hold pending: the hold is released first, every device goes.
	`cd /proc/sys/net/ndst && echo 2 > add && i=$(head -n 1 devices | cut -d' ' -f1) && echo "$i 60000" > hold && cd / && t0=$(cut -d' ' -f1 /proc/uptime) && rmmod ndst && echo "rmmod seconds $(awk "BEGIN{print $(cut -d' ' -f1 /proc/uptime) - $t0}")"; ls /proc/sys/net/ndst 2>&1; ls /sys/class/net`,
}

// TestVMModule boots the stock kernel once with the ndst module built
// against its headers and checks the module's contract: the module backend's
// add/list/del, bad input, foreign devices, a held reference that makes del
// wait with the kernel's own warning, a namespace that goes away with the
// module's devices in it, and unload with a hold pending.
func TestVMModule(t *testing.T) {
	cfg := needModule(t)
	cfg.CPUs, cfg.Preempt, cfg.Timeout, cfg.Shell = 1, "none", 200*time.Second, true
	cmds := make([][]string, len(moduleSteps))
	for i, s := range moduleSteps {
		cmds[i] = []string{s}
	}
	boot := mustBoot(t, "module", cfg, cmds)
	if boot.Module != "dummy loaded" || boot.ModuleState("ndst") != "loaded" {
		t.Fatalf("module lines = %q, want dummy loaded first and ndst loaded", boot.Modules)
	}
	step := func(i int) CommandResult {
		t.Helper()
		c := boot.Commands[i-1]
		t.Logf("step %d stdout:\n%s\nstderr:\n%s\nkernel log:\n%s", i, c.Stdout, c.Stderr, strings.Join(c.KernelLog, "\n"))
		return c
	}

	// 1: the backend.
	c := step(1)
	if c.Exit != 0 {
		t.Fatalf("step 1 exit = %d, want 0", c.Exit)
	}
	out := strings.Split(strings.TrimSpace(c.Stdout), "\n")
	if len(out) != 4 {
		t.Fatalf("step 1 printed %d lines, want 4 JSON objects", len(out))
	}
	var add, del, add2 ndst.Result
	var list listing
	for i, v := range []any{&add, &list, &del, &add2} {
		if err := json.Unmarshal([]byte(out[i]), v); err != nil {
			t.Fatalf("step 1 line %d: %v: %q", i+1, err, out[i])
		}
	}
	checkResult := func(what string, r ndst.Result, count int, batched bool) {
		t.Helper()
		k := r.Counters["kernel_ns"]
		if r.Backend != "module" || r.Kind != "ndst" || r.Result != ndst.ResultOK || r.Count != count || r.Batched != batched || r.VirtualNS != nil {
			t.Errorf("%s = backend %q kind %q result %q count %d batched %v virtual %v; want module, ndst, ok, %d, %v, null",
				what, r.Backend, r.Kind, r.Result, r.Count, r.Batched, r.VirtualNS, count, batched)
		}
		if k <= 0 || k > r.WallNS {
			t.Errorf("%s: kernel_ns %d, wall_ns %d; want 0 < kernel <= wall", what, k, r.WallNS)
		}
		if r.Latency == nil || r.Latency.MinNS <= 0 || r.Latency.MaxNS > k {
			t.Errorf("%s: latency %+v, want per-device times within the in-kernel total %d", what, r.Latency, k)
		}
	}
	checkResult("add 20", add, 20, false)
	checkResult("del --one-by-one", del, 20, false)
	checkResult("add 5", add2, 5, false)
	own := 0
	for _, d := range list.Devices {
		switch {
		case d.Name == "lo" && !d.Foreign:
			t.Errorf("list: lo not marked foreign")
		case !d.Foreign:
			own++
			if d.Kind != "ndst" || !d.Refcount.Known || d.Refcount.Value < 1 {
				t.Errorf("list: device %+v, want kind ndst and a refcount", d)
			}
		}
	}
	if own != 20 {
		t.Errorf("list: %d module devices, want 20", own)
	}

	// 2: bad input.
	c = step(2)
	if strings.Contains(c.Stdout, "accepted") {
		t.Errorf("step 2: the module accepted malformed writes:\n%s", c.Stdout)
	}
	lines := strings.Split(strings.TrimSpace(c.Stdout), "\n")
	if len(lines) != 6 || lines[0] != lines[1] || !strings.Contains(lines[0], "seq=1 op=add count=3 ") || lines[2] != "3" {
		t.Errorf("step 2: last before/after and device count = %q; want the same add of 3 twice, then 3", lines)
	}
	if len(lines) == 6 && (lines[3] != "63" || lines[4] != "63" || !strings.HasPrefix(lines[5], "seq=3 op=add count=30 ")) {
		t.Errorf("step 2: after two concurrent adds of 30: %q; want 63 devices with 63 names, and operation 3 an add of 30", lines[3:])
	}
	if n := strings.Count(c.Stderr, "Invalid argument"); n != 15 {
		t.Errorf("step 2: %d writes failed with EINVAL, want 15; stderr %q", n, c.Stderr)
	}

	// 3: foreign devices and rtnetlink.
	c = step(3)
	if n := strings.Count(c.Stderr, "No such device"); n != 2 {
		t.Errorf("step 3: %d holds failed with ENODEV, want 2 (lo, unknown); stderr %q", n, c.Stderr)
	}
	if n := strings.Count(c.Stderr, "Operation not supported"); n != 2 {
		t.Errorf("step 3: rtnetlink refused %d of del and add type ndst, want 2; stderr %q", n, c.Stderr)
	}
	if strings.TrimSpace(c.Stdout) != "63" {
		t.Errorf("step 3: %q module devices after ip link del, want 63", c.Stdout)
	}

	// 4: the held reference.
	c = step(4)
	m := regexp.MustCompile(`op=del count=1 skipped=0 ns=(\d+) err=0`).FindStringSubmatch(c.Stdout)
	if c.Exit != 0 || m == nil {
		t.Fatalf("step 4 exit %d, stdout %q: want a one-device del in last", c.Exit, c.Stdout)
	}
	if ns, _ := strconv.ParseInt(m[1], 10, 64); ns < int64(2400*time.Millisecond) || ns > int64(20*time.Second) {
		t.Errorf("step 4: del took %v in the kernel, want the 2.5 s hold (2.4 s .. 20 s)", time.Duration(ns))
	}
	waits := 0
	for _, l := range c.KernelLog {
		if strings.Contains(l, "unregister_netdevice: waiting for ") && strings.Contains(l, " to become free. Usage count = ") {
			waits++
		}
	}
	if waits == 0 {
		t.Errorf("step 4: no 'unregister_netdevice: waiting for ... to become free' line in the kernel log %q", c.KernelLog)
	}

	// 5: a namespace with the module's devices goes away.
	c = step(5)
	if c.Exit != 0 || len(regexp.MustCompile(`(?m)^reset: .*ndst deleted`).FindAllString(c.Stdout, -1)) != 2 || !strings.Contains(c.Stdout, "list exit 1") ||
		!strings.Contains(c.Stderr, "does not exist") || !strings.Contains(c.Stdout, `"count":2`) {
		t.Errorf("step 5: exit %d, stdout %q, stderr %q; want two resets, a list that finds no namespace, and a fresh add of 2", c.Exit, c.Stdout, c.Stderr)
	}
	for _, l := range c.KernelLog {
		if strings.Contains(l, "WARNING") || strings.Contains(l, "BUG") || strings.Contains(l, "waiting for") {
			t.Errorf("step 5: kernel log line %q", l)
		}
	}

	// 6: unload with a hold pending.
	c = step(6)
	m = regexp.MustCompile(`rmmod seconds ([0-9.]+)`).FindStringSubmatch(c.Stdout)
	if m == nil {
		t.Fatalf("step 6: rmmod failed: stdout %q, stderr %q", c.Stdout, c.Stderr)
	}
	if s, _ := strconv.ParseFloat(m[1], 64); s > 10 {
		t.Errorf("step 6: rmmod took %s s with a 60 s hold pending, want the hold released first (< 10 s)", m[1])
	}
	if out := strings.Split(strings.TrimSpace(c.Stdout), "\n"); !strings.Contains(c.Stdout, "/proc/sys/net/ndst: No such file or directory") || out[len(out)-1] != "lo" {
		t.Errorf("step 6: after rmmod, /proc/sys/net/ndst or a module device is still there: %q", c.Stdout)
	}
	unloaded := false
	for _, l := range c.KernelLog {
		unloaded = unloaded || strings.Contains(l, "ndst: unloaded")
	}
	if !unloaded {
		t.Errorf("step 6: no 'ndst: unloaded' in the kernel log %q", c.KernelLog)
	}
}
