package sysmem

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// Files read; tests point them elsewhere.
var (
	meminfoFile = "/proc/meminfo"
	statusFile  = "/proc/self/status"
	cgroupFile  = "/proc/self/cgroup"
	cgroupRoot  = "/sys/fs/cgroup"
)

func available() (uint64, bool) {
	var avail uint64
	var ok bool
	if v, found := procField(meminfoFile, "MemAvailable:"); found {
		avail, ok = minOK(avail, ok, v)
	}
	if v, found := cgroupHeadroom(); found {
		avail, ok = minOK(avail, ok, v)
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_AS, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		used, _ := procField(statusFile, "VmSize:")
		free := uint64(0)
		if rl.Cur > used {
			free = rl.Cur - used
		}
		avail, ok = minOK(avail, ok, free)
	}
	return avail, ok
}

// procField returns the value of a "Name:   123 kB" line, in bytes.
func procField(path, name string) (uint64, bool) {
	b, err := safefile.ReadKernelFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name {
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, false
			}
			if len(f) >= 3 && f[2] == "kB" {
				v *= 1024
			}
			return v, true
		}
	}
	return 0, false
}

// cgroupHeadroom is memory.max less memory.current of this process's cgroup
// (v2), when it has a limit.
func cgroupHeadroom() (uint64, bool) {
	b, err := safefile.ReadKernelFile(cgroupFile)
	if err != nil {
		return 0, false
	}
	var dir string
	for _, line := range strings.Split(string(b), "\n") {
		if p, found := strings.CutPrefix(line, "0::"); found {
			dir = p
		}
	}
	if dir == "" || strings.Contains(dir, "..") {
		return 0, false
	}
	read := func(name string) (uint64, bool) {
		b, err := safefile.ReadKernelFile(cgroupRoot + dir + "/" + name)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil
	}
	limit, ok := read("memory.max") // "max" when unlimited: not a number
	if !ok {
		return 0, false
	}
	cur, _ := read("memory.current")
	if cur >= limit {
		return 0, true
	}
	return limit - cur, true
}
