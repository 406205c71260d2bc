package vmrig

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// The guest-side steps of TestVMHeldReference, as typed in the guest's
// busybox shell.
var heldSteps = []string{
	// 1: a device whose reference a packet socket's send holds (--hold
	// socket@dummy0=forever) is deleted through the netlink backend; ndst
	// gives up after 4 s. The kernel warns every second here.
	`echo 1 > /proc/sys/net/core/netdev_unregister_timeout_secs && ndst --backend netlink --kind dummy add 3 >/dev/null && ` +
		`ndst --backend netlink --json --hold socket@dummy0=forever del 1 100 --one-by-one --give-up 4s --attribute; echo "exit $?"`,
	// 2: ndst has exited, so the hold is gone: the kernel finishes the
	// delete it was given, and its sender process ends.
	`sleep 2; ps | grep -c '[n]dst-sender'; ndst --backend netlink --json list`,
	// 3: the rest deletes as usual.
	`ndst --backend netlink --json del 1 100 --one-by-one`,
}

// TestVMHeldReference boots the stock kernel with two CPUs and checks the
// leak diagnosis against a genuine held reference: the delete of a device
// whose reference is held gives up, reports stuck with the kernel's own
// "waiting for dummy0 to become free" lines and the verdict leak (decided
// against membarrier's grace period), ndst exits although the kernel still
// works on the delete, and the delete finishes once the reference goes.
func TestVMHeldReference(t *testing.T) {
	cfg := needVM(t)
	cfg.CPUs, cfg.Preempt, cfg.Timeout, cfg.Shell = 2, "none", 200*time.Second, true
	cmds := make([][]string, len(heldSteps))
	for i, s := range heldSteps {
		cmds[i] = []string{s}
	}
	boot := mustBoot(t, "held reference", cfg, cmds)
	step := func(i int) CommandResult {
		t.Helper()
		c := boot.Commands[i-1]
		t.Logf("step %d stdout:\n%s\nstderr:\n%s\nkernel log:\n%s", i, c.Stdout, c.Stderr, strings.Join(c.KernelLog, "\n"))
		return c
	}

	c := step(1)
	out := strings.Split(strings.TrimSpace(c.Stdout), "\n")
	if len(out) != 2 || out[1] != "exit 1" {
		t.Fatalf("step 1 printed %q; want one JSON result and exit 1", out)
	}
	var r ndst.Result
	if err := json.Unmarshal([]byte(out[0]), &r); err != nil {
		t.Fatalf("step 1: %v: %q", err, out[0])
	}
	if r.Result != ndst.ResultStuck || r.Count != 0 || !strings.Contains(r.Error, "dummy0") {
		t.Errorf("step 1: result %q, count %d, error %q; want stuck on dummy0 with nothing deleted", r.Result, r.Count, r.Error)
	}
	v := r.Verdict
	if v == nil || v.Kind != ndst.VerdictLeak || v.KernelState != phase.WaitLoop || v.GracePeriodNS == nil || v.GracePeriodSamples == 0 ||
		v.Ratio < 100 || v.WaitedNS < int64(4*time.Second) || v.Waiting < 2 {
		t.Errorf("step 1: verdict %+v; want leak, from the wait loop, against a measured grace period, with the kernel's lines", v)
	}
	want := "unregister_netdevice: waiting for dummy0 to become free. Usage count = "
	inResult, inGuest := 0, 0
	for _, l := range r.KernelLog {
		if strings.Contains(l, want) {
			inResult++
		}
	}
	for _, l := range c.KernelLog {
		if strings.Contains(l, want) {
			inGuest++
		}
	}
	if inResult < 2 || inResult > inGuest {
		t.Errorf("step 1: %d of the guest's %d 'waiting for dummy0' lines in the result's kernel log %q; want them all, at least 2", inResult, inGuest, r.KernelLog)
	}
	if len(r.Stuck) != 1 || r.Stuck[0].Name != "dummy0" || r.Stuck[0].UsageCount < 2 {
		t.Errorf("step 1: stuck devices %+v; want dummy0 with its usage count", r.Stuck)
	}
	var loop int64
	for _, p := range r.Phases {
		if p.Name == phase.WaitLoop {
			loop = p.TotalNS()
		}
	}
	if loop < int64(3*time.Second) {
		t.Errorf("step 1: phases %+v; want most of the 4 s in %s", r.Phases, phase.WaitLoop)
	}

	c = step(2)
	lines := strings.SplitN(strings.TrimSpace(c.Stdout), "\n", 2)
	var l listing
	if len(lines) != 2 || lines[0] != "0" || json.Unmarshal([]byte(lines[1]), &l) != nil {
		t.Fatalf("step 2: stdout %q; want no sender process left and a listing", c.Stdout)
	}
	var names []string
	for _, d := range l.Devices {
		if !d.Foreign {
			names = append(names, d.Name)
		}
	}
	if strings.Join(names, " ") != "dummy1 dummy2" {
		t.Errorf("step 2: ndst's devices %q; want dummy0 gone once its reference went, dummy1 and dummy2 left", names)
	}

	c = step(3)
	var r3 ndst.Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(c.Stdout)), &r3); err != nil || r3.Result != ndst.ResultOK || r3.Count != 2 {
		t.Errorf("step 3: %q (%v); want the other two deleted", c.Stdout, err)
	}
}
