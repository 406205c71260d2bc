package sysmem

import (
	"bufio"
	"bytes"
	"path"
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

func read() Limits {
	var l Limits
	l.MemAvailable, l.MemAvailableOK = procField(meminfoFile, "MemAvailable:")
	l.Cgroup, l.CgroupLimit, l.CgroupPath, l.CgroupOK = cgroupHeadroom()
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_AS, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		used, _ := procField(statusFile, "VmSize:")
		if rl.Cur > used {
			l.AS = rl.Cur - used
		}
		l.ASOK = true
	}
	return l
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

// unlimitedV1 is the smallest value cgroup v1 prints for "no limit"
// (PAGE_COUNTER_MAX pages, rounded: 9223372036854771712 on 4 KiB pages).
const unlimitedV1 = 1 << 62

// cgroupHeadroom is the smallest limit-less-usage of this process's memory
// cgroup and its ancestors, v2 (the "0::PATH" line of /proc/self/cgroup,
// memory.max and memory.current) or v1 (the line whose controllers include
// memory, memory.limit_in_bytes and memory.usage_in_bytes under the memory
// hierarchy), with the cgroup that sets it. A limit is hierarchical: a
// child may not use more than any ancestor allows.
func cgroupHeadroom() (head, limit uint64, where string, ok bool) {
	b, err := safefile.ReadKernelFile(cgroupFile)
	if err != nil {
		return 0, 0, "", false
	}
	var best, bestLimit uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") || strings.Contains(f[2], "..") {
			continue
		}
		var base, limitFile, usageFile string
		switch {
		case f[0] == "0" && f[1] == "":
			base, limitFile, usageFile = cgroupRoot, "memory.max", "memory.current"
			if _, err := safefile.ReadKernelFile(cgroupRoot + "/cgroup.controllers"); err != nil {
				base = cgroupRoot + "/unified" // the hybrid layout
			}
		case hasController(f[1], "memory"):
			base, limitFile, usageFile = cgroupRoot+"/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		for dir := path.Clean(f[2]); ; dir = path.Dir(dir) {
			if v, lim, ok2 := headroom(base+dir, limitFile, usageFile); ok2 {
				if !ok || v < best {
					best, bestLimit, where = v, lim, base+dir
				}
				ok = true
			}
			if dir == "/" {
				break
			}
		}
	}
	return best, bestLimit, where, ok
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// headroom is one cgroup's limit less its usage; false when it has no
// limit (v2 "max", v1 unlimitedV1 or more) or none can be read.
func headroom(dir, limitFile, usageFile string) (head, limit uint64, ok bool) {
	readNum := func(name string) (uint64, bool) {
		b, err := safefile.ReadKernelFile(dir + "/" + name)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil
	}
	limit, ok = readNum(limitFile) // "max" when unlimited: not a number
	if !ok || limit >= unlimitedV1 {
		return 0, 0, false
	}
	cur, _ := readNum(usageFile)
	if cur >= limit {
		return 0, limit, true
	}
	return limit - cur, limit, true
}
