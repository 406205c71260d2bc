package knobset

import (
	"fmt"
	"os"
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
