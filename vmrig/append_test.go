package vmrig

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// --append is refused, with one line and before anything is fetched or
// booted, unless it is kernel parameters the rig can pass as they are.
func TestVMRunAppendBadInput(t *testing.T) {
	script, err := FindScript()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("rcutree.jiffies_till_first_fqs=1 ", 31) // 31 words, 1023 bytes with the leading spaces
	for _, tc := range []struct{ name, append, want string }{
		{"console", "console=ttyS1", "would override the rig's own console="},
		{"init", "rcu_nocbs=all init=/bin/sh", "only letters, digits, spaces"},
		{"init without a slash", "init=sh", "would override the rig's own init="},
		{"rdinit", "rdinit=sh", "would override the rig's own rdinit="},
		{"panic", "panic=0", "would override the rig's own panic="},
		{"preempt", "preempt=full", "give the preemption model with --preempt"},
		{"semicolon", "rcu_nocbs=all;reboot", "only letters, digits, spaces"},
		{"command substitution", "x=$(reboot)", "only letters, digits, spaces"},
		{"quote", `a="b c"`, "only letters, digits, spaces"},
		{"newline", "rcu_nocbs=all\nconsole=tty0", "only letters, digits, spaces"},
		{"tab", "rcu_nocbs=all\tx", "only letters, digits, spaces"},
		{"leading dash", "-- rcu_nocbs=all", "'--' is not a kernel parameter"},
		{"empty value", "rcu_nocbs=", "'rcu_nocbs=' is not a kernel parameter"},
		{"empty", " ", "--append: empty"},
		{"too many words", strings.Repeat("a ", 33), "33 parameters; at most 32"},
		{"too long", long + "rcu_nocbs=" + strings.Repeat("1", 40), "bytes of parameters; at most 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// NDST_QEMU points nowhere: were the check to pass, the rig would stop at the missing qemu instead.
			_, err := runScript(ctx, Config{Script: script, Env: []string{"NDST_QEMU=/nonexistent/qemu"}}, []string{"--append", tc.append, "--", "list"})
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindUsage || !strings.Contains(e.Msg, tc.want) || strings.Contains(e.Msg, "\n") {
				t.Errorf("vm-run.sh --append %q = %v, want one usage line containing %q", tc.append, err, tc.want)
			}
		})
	}
	// A good one passes the check (and stops at the missing qemu).
	_, err = runScript(context.Background(), Config{Script: script, Env: []string{"NDST_QEMU=/nonexistent/qemu"}},
		[]string{"--append", "rcu_nocbs=all rcupdate.rcu_normal_after_boot=0", "--append=nohz_full=0-1,3 threadirqs", "--", "list"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindHost {
		t.Errorf("vm-run.sh with good --append = %v, want it past the check (a host error: no qemu)", err)
	}
}

func TestParseCmdline(t *testing.T) {
	b, err := Parse(strings.NewReader("@@ndst-vm guest release=6.1.0-57-amd64 cpus=1 preempt=none uptime=2.1\n@@ndst-vm cmdline console=ttyS0 quiet panic=-1 no_timer_check preempt=none rcu_nocbs=all\n@@ndst-vm done\n"))
	if err != nil || b.Cmdline != "console=ttyS0 quiet panic=-1 no_timer_check preempt=none rcu_nocbs=all" {
		t.Errorf("Parse(cmdline) = %+v, %v; want the guest's command line in Cmdline", b, err)
	}
	got, err := Args(Config{CPUs: 2, Append: "rcu_nocbs=all"}, []string{"list"})
	if want := []string{"--cpus", "2", "--append", "rcu_nocbs=all", "--", "list"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Args(Append) = %q, %v; want %q", got, err, want)
	}
}

// A guest booted with --append has the parameters on its command line, and
// the kernel took them: rcutree.jiffies_till_first_fqs=0 reads back 0 from
// sysfs (its default at HZ=250 is 1).
func TestVMAppend(t *testing.T) {
	cfg := needVM(t)
	cfg.Append = "rcutree.jiffies_till_first_fqs=0"
	cfg.Shell = true
	boot := mustBoot(t, "--append", cfg, [][]string{{"cat", "/sys/module/rcutree/parameters/jiffies_till_first_fqs"}})
	if !strings.HasSuffix(boot.Cmdline, " rcutree.jiffies_till_first_fqs=0") {
		t.Errorf("guest command line %q does not end with the appended parameter", boot.Cmdline)
	}
	if len(boot.Commands) != 1 || strings.TrimSpace(boot.Commands[0].Stdout) != "0" {
		t.Errorf("guest's jiffies_till_first_fqs = %+v, want 0", boot.Commands)
	}
}

// vm-predict.sh --param refuses what no kernel command line or no knob of
// ndst's can be, exit 2 with the reason, before anything boots.
func TestVMPredictParamBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no value", []string{"--param", "rcu_nocbs"}, "--param 'rcu_nocbs': want NAME=VALUE"},
		{"empty value", []string{"--param", "rcu_nocbs="}, "want NAME=VALUE"},
		{"metacharacter", []string{"--param", "rcu_nocbs=all;reboot"}, "want NAME=VALUE"},
		{"missing", []string{"--param"}, "--param needs a value"},
		{"with netns", []string{"--netns", "--param", "rcu_nocbs=all"}, "--param and --netns"},
		{"runs zero", []string{"--param", "rcu_nocbs=all", "--runs", "0"}, "--runs '0': want runs of each delete per boot"},
		{"unknown knob", []string{"--param", "rcu_nocbz=all"}, `unknown knob "rcu_nocbz"`},
		{"out of range", []string{"--param", "rcutree.jiffies_till_first_fqs=-1"}, "rcutree.jiffies_till_first_fqs=-1: out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// No qemu: were a check to pass, the boot would fail with status 3 instead.
			out, errOut, code := runPredict(t, ctx, []string{"TMPDIR=" + dir, "NDST_QEMU=/nonexistent/qemu"}, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("vm-predict.sh %q = exit %d, stdout %q, stderr %q; want exit 2 and a message containing %q", tc.args, code, out, errOut, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("usage errors left %d entries in TMPDIR, want none", len(ents))
	}
}

// TestVMPredictParam checks a boot-time lever at its smallest (1 CPU, 20
// devices): two boots, the second with the parameter on its command line,
// and one JSON report comparing them row by row with the first boot's
// calibration.
func TestVMPredictParam(t *testing.T) {
	needVM(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	log := filepath.Join(dir, "t.log")
	out, errOut, code := runPredict(t, ctx, []string{"TMPDIR=" + dir}, "--param", "rcutree.jiffies_till_first_fqs=0", "--cpus", "1", "--count", "20", "--json", "--log", log)
	if code != 0 {
		t.Fatalf("vm-predict.sh --param = exit %d\n%s", code, errOut)
	}
	var lp struct {
		Lever   []string `json:"lever"`
		Cmdline []string `json:"cmdline"`
		Rows    []struct {
			Count             int
			Batch             string
			MeasuredBeforeNS  int64 `json:"measured_before_ns"`
			MeasuredAfterNS   int64 `json:"measured_after_ns"`
			PredictedBeforeNS int64 `json:"predicted_before_ns"`
			PredictedAfterNS  int64 `json:"predicted_after_ns"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &lp); err != nil {
		t.Fatalf("vm-predict.sh --param --json: %v\n%s", err, out)
	}
	if len(lp.Rows) != 2 || len(lp.Cmdline) != 2 || !strings.HasSuffix(lp.Cmdline[1], " rcutree.jiffies_till_first_fqs=0") || strings.Contains(lp.Cmdline[0], "fqs") {
		t.Fatalf("vm-predict.sh --param report = %+v; want two rows, the second boot's command line with the parameter and the first's without", lp)
	}
	for _, r := range lp.Rows {
		if r.Count != 20 || r.MeasuredBeforeNS <= 0 || r.MeasuredAfterNS <= 0 || r.PredictedBeforeNS <= 0 || r.PredictedAfterNS <= 0 {
			t.Errorf("row %+v: want 20 devices, every time measured and predicted", r)
		}
	}
	for _, f := range []string{log, log + ".with"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("transcript %s not kept: %v", f, err)
		}
	}
}
