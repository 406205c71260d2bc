//go:build linux

package hostknob

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadFromFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("/sys/kernel/rcu_expedited", "1\n")
	write("/sys/module/rcutree/parameters/use_softirq", "N\n")
	write("/sys/module/rcutree/parameters/jiffies_till_sched_qs", "18446744073709551615\n")
	write("/sys/module/rcutree/parameters/blimit", "banana\n")
	write("/sys/devices/system/cpu/nohz_full", "(null)\n")
	write("/proc/cmdline", "quiet rcu_nocbs=0-1 preempt=full rcu_nocbs=1 -- preempt=none\n")
	write("/proc/sys/kernel/osrelease", "6.18.0-test\n")
	write("/boot/config-6.18.0-test", "CONFIG_HZ=1000\n# CONFIG_RCU_LAZY is not set\nCONFIG_RCU_NOCB_CPU=y\n")
	old := root
	root = dir
	t.Cleanup(func() { root = old })
	got := map[string]Reading{}
	for _, r := range Read() {
		got[r.Name] = r
	}
	for name, want := range map[string]string{
		"rcupdate.rcu_expedited": "1", "rcutree.use_softirq": "0", "nohz_full": "none",
		"rcu_nocbs": "1", "preempt": "full", "CONFIG_HZ": "1000", "CONFIG_RCU_LAZY": "0", "CONFIG_RCU_NOCB_CPU": "1",
	} {
		if r := got[name]; r.Value != want || r.Missing != "" {
			t.Errorf("%s = %+v, want %s", name, r, want)
		}
	}
	for _, name := range []string{"rcutree.jiffies_till_sched_qs", "rcutree.blimit", "rcupdate.rcu_normal", "net.core.netdev_unregister_timeout_secs"} {
		if r := got[name]; r.Value != "" || r.Missing == "" {
			t.Errorf("%s = %+v, want no value and a reason", name, r)
		}
	}
}
