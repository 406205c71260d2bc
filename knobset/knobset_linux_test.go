package knobset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process: with NDST_KNOBSET_HELPER set, the test binary is a
// process that changes knobs and then waits to be killed (or signalled).
func TestMain(m *testing.M) {
	if spec := os.Getenv("NDST_KNOBSET_HELPER"); spec != "" {
		os.Exit(helper(spec))
	}
	os.Exit(m.Run())
}

// helper: spec is "DIR|ROOT|PATH=VALUE,..."; prints "ready" once every knob
// is set, then sleeps until killed.
func helper(spec string) int {
	parts := strings.SplitN(spec, "|", 3)
	Dir, sysRoot = parts[0], parts[1]
	s, err := Begin(Options{Command: "helper", Notef: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	for _, kv := range strings.Split(parts[2], ",") {
		path, value, _ := strings.Cut(kv, "=")
		if _, err := s.Set(path, path, value); err != nil {
			fmt.Println("error:", err)
			return 1
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	return 0
}

// startHelper runs the helper and waits for its "ready".
func startHelper(t *testing.T, root string, sets ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NDST_KNOBSET_HELPER="+Dir+"|"+root+"|"+strings.Join(sets, ","))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper said %q (%v), want ready", line, err)
	}
	go io.Copy(io.Discard, out)
	return cmd
}

// fakeKernel points the package at a folder of plain files standing for
// the knobs (mode 0644 unless listed in ro) and a folder for the record.
func fakeKernel(t *testing.T, knobs map[string]string, ro ...string) string {
	t.Helper()
	root := t.TempDir()
	for path, v := range knobs {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		for _, r := range ro {
			if r == path {
				mode = 0o444
			}
		}
		if err := os.WriteFile(p, []byte(v+"\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	oldRoot, oldDir, oldSettle := sysRoot, Dir, settle
	sysRoot, Dir, settle = root, filepath.Join(t.TempDir(), "ndst"), 0
	t.Cleanup(func() { sysRoot, Dir, settle = oldRoot, oldDir, oldSettle })
	return root
}

func knob(t *testing.T, path string) string {
	t.Helper()
	v, err := readKnob(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func setKnob(t *testing.T, path, v string) {
	t.Helper()
	if err := os.WriteFile(file(path), []byte(v+"\n"), 0); err != nil {
		t.Fatal(err)
	}
}

const (
	exp  = "/sys/kernel/rcu_expedited"
	fqs  = "/sys/module/rcutree/parameters/jiffies_till_first_fqs"
	blim = "/sys/module/rcutree/parameters/blimit"
)

func TestSetUndo(t *testing.T) {
	fakeKernel(t, map[string]string{exp: "0", fqs: "1"})
	var notes []string
	s, err := Begin(Options{Command: "test", Notef: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Set("rcupdate.rcu_expedited", exp, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set("rcutree.jiffies_till_first_fqs", fqs, "0"); err != nil {
		t.Fatal(err)
	}
	if got := knob(t, exp) + knob(t, fqs); got != "10" {
		t.Errorf("after Set: knobs %q, want 1 and 0", got)
	}
	r, err := loadRecord()
	if err != nil || r == nil || len(r.Changes) != 2 || r.Changes[0].Before != "0" || r.Changes[1].After != "0" {
		t.Fatalf("record after two changes = %+v, %v", r, err)
	}
	if err := s.Undo(); err != nil {
		t.Fatal(err)
	}
	if got := knob(t, exp) + knob(t, fqs); got != "01" {
		t.Errorf("after Undo: knobs %q, want 0 and 1", got)
	}
	if Pending() {
		t.Error("a record is left after Undo")
	}
	want := []string{
		"set rcupdate.rcu_expedited (/sys/kernel/rcu_expedited) 0 -> 1",
		"set rcutree.jiffies_till_first_fqs (/sys/module/rcutree/parameters/jiffies_till_first_fqs) 1 -> 0",
		"restored rcutree.jiffies_till_first_fqs (/sys/module/rcutree/parameters/jiffies_till_first_fqs) 0 -> 1",
		"restored rcupdate.rcu_expedited (/sys/kernel/rcu_expedited) 1 -> 0",
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
}

func TestSetRefusals(t *testing.T) {
	fakeKernel(t, map[string]string{exp: "0", blim: "10"}, blim)
	s, err := Begin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		path, value, want string
		notWritable       bool
	}{
		{blim, "20", "read-only at runtime (mode 0444)", true},
		{"/sys/module/rcutree/parameters/no_such_knob", "1", "this kernel has no such knob", true},
		{"/etc/passwd", "x", "not a knob ndst changes", false},
		{"/sys/kernel/../kernel/rcu_expedited", "1", "not a knob ndst changes", false},
		{exp, "1\nroot", "want a number or a word", false},
		{exp, "", "want a number or a word", false},
	} {
		_, err := s.Set(tc.path, tc.path, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNotWritable) != tc.notWritable {
			t.Errorf("Set(%s, %q) = %v, want %q (not writable: %v)", tc.path, tc.value, err, tc.want, tc.notWritable)
		}
	}
	if Pending() || knob(t, exp) != "0" {
		t.Errorf("a refused Set changed something: record %v, %s = %s", Pending(), exp, knob(t, exp))
	}
	c, err := s.Set("rcupdate.rcu_expedited", exp, "0")
	if err != nil || c.Wrote != "" || Pending() {
		t.Errorf("Set to the value it holds = %+v, %v (record %v), want nothing written", c, err, Pending())
	}
}

// A session puts a knob back even when it reads another value than the one
// written (the kernel adjusts some as it uses them), and says so.
func TestUndoRestoresAdjustedValue(t *testing.T) {
	fakeKernel(t, map[string]string{exp: "0"})
	var notes []string
	s, err := Begin(Options{Notef: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Set("rcupdate.rcu_expedited", exp, "1"); err != nil {
		t.Fatal(err)
	}
	setKnob(t, exp, "2")
	if err := s.Undo(); err != nil {
		t.Fatal(err)
	}
	if knob(t, exp) != "0" || !strings.Contains(strings.Join(notes, "\n"), "restored rcupdate.rcu_expedited (/sys/kernel/rcu_expedited) 2 -> 0 (it read 2, not the 1 ndst wrote)") {
		t.Errorf("knob %s, notes %q; want it put back to 0, and said", knob(t, exp), notes)
	}
}

// A killed ndst's record leaves a knob changed since as it is, and says so.
func TestPendingLeavesForeignValue(t *testing.T) {
	fakeKernel(t, map[string]string{exp: "0"})
	cmd := startHelper(t, sysRoot, exp+"=1")
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	setKnob(t, exp, "2")
	var notes []string
	if err := ApplyPending(func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }); err != nil {
		t.Fatal(err)
	}
	if knob(t, exp) != "2" || Pending() || !strings.Contains(strings.Join(notes, "\n"), "left /sys/kernel/rcu_expedited at 2") {
		t.Errorf("knob %s, record %v, notes %q; want it left at 2, the record applied, and said", knob(t, exp), Pending(), notes)
	}
}

func TestSecondSessionRefused(t *testing.T) {
	fakeKernel(t, map[string]string{exp: "0"})
	startHelper(t, sysRoot, exp+"=1")
	if _, err := Begin(Options{}); err == nil || !strings.Contains(err.Error(), "another ndst (pid") {
		t.Errorf("Begin while another session runs = %v, want refused", err)
	}
	// Its record is its own to restore while it lives.
	if err := ApplyPending(func(string, ...any) {}); err != nil || knob(t, exp) != "1" || !Pending() {
		t.Errorf("ApplyPending under a live owner = %v, knob %s, record %v: want nothing done", err, knob(t, exp), Pending())
	}
}

// SIGKILL leaves the record; the next ApplyPending restores and says so.
func TestKilledRestoredNext(t *testing.T) {
	fakeKernel(t, map[string]string{exp: "0", fqs: "1"})
	cmd := startHelper(t, sysRoot, exp+"=1", fqs+"=3")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if knob(t, exp) != "1" || knob(t, fqs) != "3" || !Pending() {
		t.Fatalf("after SIGKILL: %s=%s %s=%s record %v, want changed and recorded", exp, knob(t, exp), fqs, knob(t, fqs), Pending())
	}
	var notes []string
	if err := ApplyPending(func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }); err != nil {
		t.Fatal(err)
	}
	if knob(t, exp) != "0" || knob(t, fqs) != "1" || Pending() {
		t.Errorf("after ApplyPending: %s=%s %s=%s record %v, want restored and removed", exp, knob(t, exp), fqs, knob(t, fqs), Pending())
	}
	all := strings.Join(notes, "\n")
	for _, w := range []string{"ended with kernel knobs changed", "putting them back first", "restored /sys/kernel/rcu_expedited 1 -> 0"} {
		if !strings.Contains(all, w) {
			t.Errorf("notes %q lack %q", all, w)
		}
	}
}

// A record that is corrupt, names a file that is no knob, or that others
// could have written is never applied; one of another boot is dropped.
func TestPendingRecordChecked(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		want          string
		kept          bool
	}{
		{"corrupt", "{", 0o600, "not a restore record", true},
		{"foreign path", `{"format":"ndst-knob-restore/1","pid":1,"command":"x","boot_id":"","changes":[{"name":"x","path":"/etc/shadow","before":"x","wrote":"y"}]}`, 0o600, "not a knob ndst changes", true},
		{"world-writable", `{"format":"ndst-knob-restore/1","pid":1,"command":"x","boot_id":"","changes":[]}`, 0o666, "writable by others", true},
		{"other boot", `{"format":"ndst-knob-restore/1","pid":1,"command":"x","boot_id":"not-this-boot","changes":[{"name":"x","path":"/sys/kernel/rcu_expedited","before":"0","wrote":"1"}]}`, 0o600, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeKernel(t, map[string]string{exp: "1"})
			if err := ensureDir(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(recordPath(), []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(recordPath(), tc.mode); err != nil {
				t.Fatal(err)
			}
			var notes []string
			err := ApplyPending(func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("ApplyPending = %v, want %q", err, tc.want)
			}
			if Pending() != tc.kept || knob(t, exp) != "1" {
				t.Errorf("record kept %v (want %v), knob %s (want 1, untouched); notes %q", Pending(), tc.kept, knob(t, exp), notes)
			}
			if _, err := Begin(Options{}); tc.kept && err == nil {
				t.Error("Begin went ahead over a record it could not apply")
			}
		})
	}
}
