// Package sysmem says how much memory this process may still use before the
// system refuses it or kills it, so that commands can refuse work that
// cannot fit instead of dying of it.
//
// Invariants:
//   - Available is the smallest of the limits it can read (on Linux: the
//     kernel's MemAvailable; the cgroup v2 memory.max less memory.current of
//     this process's cgroup; RLIMIT_AS less the address space in use); ok is
//     false only when none can be read (on other systems, always).
//   - Every file is read through package safefile (regular files only,
//     bounded), so a strange /proc or /sys cannot hang it.
package sysmem

// Available returns the memory this process may still allocate, in bytes,
// and whether any limit could be read.
func Available() (bytes uint64, ok bool) { return available() }

// minOK folds one more limit into (cur, ok).
func minOK(cur uint64, ok bool, v uint64) (uint64, bool) {
	if !ok || v < cur {
		return v, true
	}
	return cur, true
}
