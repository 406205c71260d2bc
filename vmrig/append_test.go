package vmrig

import (
	"context"
	"errors"
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
