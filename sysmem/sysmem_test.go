//go:build linux

package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAvailableIsTheSmallestLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := [...]string{meminfoFile, statusFile, cgroupFile, cgroupRoot}
	t.Cleanup(func() { meminfoFile, statusFile, cgroupFile, cgroupRoot = old[0], old[1], old[2], old[3] })
	meminfoFile = write("meminfo", "MemTotal:  8000 kB\nMemAvailable:   4000 kB\n")
	statusFile = write("status", "VmSize:  100 kB\n")
	cgroupFile = write("cgroup", "0::/a/b\n")
	cgroupRoot = dir + "/cg"
	write("cg/a/b/memory.max", "max\n")
	if got, ok := Available(); !ok || got != 4000*1024 {
		t.Errorf("Available() with no cgroup limit = %d, %v; want MemAvailable 4096000", got, ok)
	}
	write("cg/a/b/memory.max", "3000000\n")
	write("cg/a/b/memory.current", "1000000\n")
	if got, ok := Available(); !ok || got != 2000000 {
		t.Errorf("Available() under a cgroup limit = %d, %v; want memory.max - memory.current = 2000000", got, ok)
	}
	meminfoFile = filepath.Join(dir, "missing")
	cgroupFile = filepath.Join(dir, "missing")
	if _, ok := available(); ok {
		// RLIMIT_AS is set in this environment; nothing to check.
		t.Log("RLIMIT_AS is limited here")
	}
}

func TestAvailableOnThisHost(t *testing.T) {
	if got, ok := Available(); !ok || got == 0 {
		t.Errorf("Available() = %d, %v on Linux; want a figure", got, ok)
	}
}
