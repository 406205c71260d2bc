// Package sysmem says how much memory this process may still use before the
// system refuses it or kills it, so that commands can refuse work that
// cannot fit instead of dying of it.
//
// Invariants:
//   - Available is the smallest of the limits it can read (on Linux: the
//     kernel's MemAvailable; the memory cgroup's limit less its usage, for
//     this process's cgroup and each of its ancestors, cgroup v2 memory.max
//     and memory.current or v1 memory.limit_in_bytes and
//     memory.usage_in_bytes; RLIMIT_AS less the address space in use); ok
//     is false only when none can be read (on other systems, always).
//   - KernelAvailable leaves out RLIMIT_AS, which bounds this process's
//     address space but not the kernel memory its requests allocate (the
//     devices and namespaces it creates), which the kernel charges to the
//     memory cgroup (GFP_KERNEL_ACCOUNT, SLAB_ACCOUNT).
//   - Every file is read through package safefile (regular files only,
//     bounded), so a strange /proc or /sys cannot hang it.
package sysmem

// Limits are the limits sysmem reads, in bytes; a limit that cannot be
// read, or that is unlimited, has its ok false.
type Limits struct {
	MemAvailable   uint64 // /proc/meminfo MemAvailable
	MemAvailableOK bool
	// Cgroup is the smallest headroom (limit less usage) of this
	// process's memory cgroup and its ancestors; CgroupPath names the
	// cgroup that sets it.
	Cgroup      uint64
	CgroupLimit uint64 // that cgroup's limit
	CgroupOK    bool
	CgroupPath  string
	// AS is RLIMIT_AS less the address space in use.
	AS   uint64
	ASOK bool
}

// Read reads the limits.
func Read() Limits { return read() }

// Available returns the memory this process may still allocate, in bytes,
// and whether any limit could be read.
func Available() (bytes uint64, ok bool) {
	l := Read()
	return l.min(true)
}

// KernelAvailable returns the memory the kernel may still allocate for this
// process's requests (all but RLIMIT_AS), and whether any limit could be
// read.
func KernelAvailable() (bytes uint64, ok bool) {
	l := Read()
	return l.min(false)
}

func (l Limits) min(as bool) (uint64, bool) {
	var v uint64
	var ok bool
	if l.MemAvailableOK {
		v, ok = minOK(v, ok, l.MemAvailable)
	}
	if l.CgroupOK {
		v, ok = minOK(v, ok, l.Cgroup)
	}
	if as && l.ASOK {
		v, ok = minOK(v, ok, l.AS)
	}
	return v, ok
}

// minOK folds one more limit into (cur, ok).
func minOK(cur uint64, ok bool, v uint64) (uint64, bool) {
	if !ok || v < cur {
		return v, true
	}
	return cur, true
}
