package knobset

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ndst-project/ndst/knobset/knobsettest"
)

// stallTimeout is a real knob whose change perturbs no measurement: the
// seconds before an RCU CPU stall warning.
const stallTimeout = "/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout"

// On this machine's kernel: a process killed with a knob changed leaves it
// changed and recorded, and the next ApplyPending puts it back, as sysfs
// then reads.
func TestRealKnobKilledRestoredNext(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("changing a kernel knob needs root; running as uid %d", os.Geteuid())
	}
	if err := checkKnob(stallTimeout); err != nil {
		t.Skipf("no writable knob to test with: %v", err)
	}
	knobsettest.HoldRealKernelLock(t, 20*time.Minute)
	oldDir := Dir
	Dir = filepath.Join(t.TempDir(), "ndst")
	t.Cleanup(func() { Dir = oldDir })
	before := knob(t, stallTimeout)
	n, err := strconv.Atoi(before)
	if err != nil {
		t.Fatalf("%s reads %q", stallTimeout, before)
	}
	changed := strconv.Itoa(n + 1)
	t.Cleanup(func() { // whatever happens below, the knob ends as it was
		if v, _ := readKnob(stallTimeout); v != before {
			_ = writeKnob(stallTimeout, before)
		}
	})
	cmd := startHelper(t, "", stallTimeout+"="+changed)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := knob(t, stallTimeout); got != changed || !Pending() {
		t.Fatalf("after SIGKILL %s reads %s (record %v), want %s and a record", stallTimeout, got, Pending(), changed)
	}
	var notes []string
	if err := ApplyPending(func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }); err != nil {
		t.Fatal(err)
	}
	if got := knob(t, stallTimeout); got != before || Pending() {
		t.Errorf("after ApplyPending %s reads %s (record %v), want %s and no record", stallTimeout, got, Pending(), before)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "restored "+stallTimeout+" "+changed+" -> "+before) {
		t.Errorf("notes %q do not say what was restored", notes)
	}
}

// In a mount namespace whose /sys is read-only (as a container's is), a
// knob is refused as not writable, with the reason, and nothing is written.
func TestReadOnlySysRefused(t *testing.T) {
	if os.Getenv("NDST_KNOBSET_RO_CHILD") == "1" {
		Dir = os.Getenv("NDST_KNOBSET_RO_DIR")
		fmt.Println("check:", Check("/sys/kernel/rcu_normal"))
		s, err := Begin(Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Set("rcupdate.rcu_normal", "/sys/kernel/rcu_normal", "1")
		fmt.Println("set:", err, errors.Is(err, ErrNotWritable), "record:", Pending())
		s.Close()
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("needs root for a mount namespace; running as uid %d", os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) not found")
	}
	before := knob(t, "/sys/kernel/rcu_normal")
	script := `mount --bind /sys /sys && mount -o remount,bind,ro /sys && exec "$0" -test.run='^TestReadOnlySysRefused$' -test.v`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "NDST_KNOBSET_RO_CHILD=1", "NDST_KNOBSET_RO_DIR="+filepath.Join(t.TempDir(), "ndst"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child in a read-only /sys: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "check: /sys/kernel/rcu_normal: its file system is mounted read-only") {
		t.Errorf("Check in a read-only /sys said:\n%s\nwant the read-only reason", out)
	}
	if !strings.Contains(string(out), "set: /sys/kernel/rcu_normal: its file system is mounted read-only (a container's /sys or /proc?) true record: false") {
		t.Errorf("Set in a read-only /sys said:\n%s\nwant refused as not writable, with no record", out)
	}
	if got := knob(t, "/sys/kernel/rcu_normal"); got != before {
		t.Errorf("rcu_normal reads %s after the test, was %s", got, before)
	}
}

// On this kernel, rcu_cpu_stall_timeout written above its cap reads back as
// written and is capped at 300 when the next grace period checks it: the
// session puts it back all the same.
func TestRealKnobAdjustedByKernelRestored(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("changing a kernel knob needs root; running as uid %d", os.Geteuid())
	}
	if err := checkKnob(stallTimeout); err != nil {
		t.Skipf("no writable knob to test with: %v", err)
	}
	knobsettest.HoldRealKernelLock(t, 20*time.Minute)
	oldDir := Dir
	Dir = filepath.Join(t.TempDir(), "ndst")
	t.Cleanup(func() { Dir = oldDir })
	before := knob(t, stallTimeout)
	t.Cleanup(func() {
		if v, _ := readKnob(stallTimeout); v != before {
			_ = writeKnob(stallTimeout, before)
		}
	})
	var notes []string
	s, err := Begin(Options{Notef: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Set("rcupdate.rcu_cpu_stall_timeout", stallTimeout, "400"); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); knob(t, stallTimeout) != "300" && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	adjusted := knob(t, stallTimeout)
	if err := s.Undo(); err != nil {
		t.Fatal(err)
	}
	if got := knob(t, stallTimeout); got != before {
		t.Errorf("after Undo %s reads %s, want %s (it read %s before the undo)", stallTimeout, got, before, adjusted)
	}
	t.Logf("the kernel had adjusted 400 to %s; notes %q", adjusted, notes)
}

// A value the kernel refuses (EINVAL) is a knob that cannot be written, with
// the reason, and leaves no record and the knob as it was.
func TestRealKnobValueRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("writing a kernel knob needs root; running as uid %d", os.Geteuid())
	}
	const p = "/sys/kernel/rcu_expedited"
	if err := checkKnob(p); err != nil {
		t.Skipf("no writable knob to test with: %v", err)
	}
	knobsettest.HoldRealKernelLock(t, 20*time.Minute)
	oldDir := Dir
	Dir = filepath.Join(t.TempDir(), "ndst")
	t.Cleanup(func() { Dir = oldDir })
	before := knob(t, p)
	s, err := Begin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Set("rcupdate.rcu_expedited", p, "abc")
	if !errors.Is(err, ErrNotWritable) || !strings.Contains(err.Error(), `the kernel refused the value "abc" (EINVAL)`) {
		t.Errorf("Set(abc) = %v, want refused by the kernel, as not writable", err)
	}
	if Pending() || knob(t, p) != before {
		t.Errorf("after a refused write: record %v, %s reads %s (was %s)", Pending(), p, knob(t, p), before)
	}
}
