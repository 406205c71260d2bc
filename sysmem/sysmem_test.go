//go:build linux

package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeSystem points the files sysmem reads at a scratch directory and
// returns a function that writes one of them.
func fakeSystem(t *testing.T) (dir string, write func(name, s string)) {
	dir = t.TempDir()
	write = func(name, s string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := [...]string{meminfoFile, statusFile, cgroupFile, cgroupRoot}
	t.Cleanup(func() { meminfoFile, statusFile, cgroupFile, cgroupRoot = old[0], old[1], old[2], old[3] })
	meminfoFile = filepath.Join(dir, "meminfo")
	statusFile = filepath.Join(dir, "status")
	cgroupFile = filepath.Join(dir, "cgroup")
	cgroupRoot = filepath.Join(dir, "cg")
	write("meminfo", "MemTotal:  8000 kB\nMemAvailable:   4000 kB\n")
	write("status", "VmSize:  100 kB\n")
	return dir, write
}

func TestAvailableIsTheSmallestLimit(t *testing.T) {
	_, write := fakeSystem(t)
	write("cgroup", "0::/a/b\n")
	write("cg/cgroup.controllers", "memory\n")
	write("cg/a/b/memory.max", "max\n")
	if got, ok := Available(); !ok || got != 4000*1024 {
		t.Errorf("Available() with no cgroup limit = %d, %v; want MemAvailable 4096000", got, ok)
	}
	write("cg/a/b/memory.max", "3000000\n")
	write("cg/a/b/memory.current", "1000000\n")
	if got, ok := Available(); !ok || got != 2000000 {
		t.Errorf("Available() under a cgroup limit = %d, %v; want memory.max - memory.current = 2000000", got, ok)
	}
	// An ancestor's limit binds its descendants.
	write("cg/a/memory.max", "1500000\n")
	write("cg/a/memory.current", "1000000\n")
	l := Read()
	if got, ok := Available(); !ok || got != 500000 || l.CgroupPath != cgroupRoot+"/a" {
		t.Errorf("Available() under a parent's limit = %d, %v (set by %s); want 500000 from /a", got, ok, l.CgroupPath)
	}
}

// TestCgroupV1: the memory controller of the v1 hierarchy (the layout of
// this project's machines, where cgroup v2 has no memory controller),
// "unlimited" read as no limit.
func TestCgroupV1(t *testing.T) {
	_, write := fakeSystem(t)
	write("meminfo", "MemTotal:  24000000 kB\nMemAvailable:   20000000 kB\n")
	write("cgroup", "9:name=systemd:/\n4:memory:/process_api/c461\n1:cpu:/\n0::/\n")
	write("cg/memory/process_api/c461/memory.limit_in_bytes", "9223372036854771712\n")
	write("cg/memory/process_api/c461/memory.usage_in_bytes", "304902144\n")
	if l := Read(); l.CgroupOK {
		t.Errorf("an unlimited v1 cgroup read as a limit: %+v", l)
	}
	write("cg/memory/process_api/memory.limit_in_bytes", "1073741824\n")
	write("cg/memory/process_api/memory.usage_in_bytes", "304902144\n")
	if got, ok := KernelAvailable(); !ok || got != 1073741824-304902144 {
		t.Errorf("KernelAvailable() under a v1 limit = %d, %v; want %d", got, ok, 1073741824-304902144)
	}
}

func TestAvailableOnThisHost(t *testing.T) {
	if got, ok := Available(); !ok || got == 0 {
		t.Errorf("Available() = %d, %v on Linux; want a figure", got, ok)
	}
	t.Logf("limits here: %+v", Read())
}
