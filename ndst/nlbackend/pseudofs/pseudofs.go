// Package pseudofs reads files of the kernel's pseudo file systems that a
// machine need not have mounted: tracefs (the tracepoints' ids and record
// formats, which perf_event_open needs) and debugfs (sched/preempt, the
// preemption model a PREEMPT_DYNAMIC kernel runs in).
//
// Where the host has the file system mounted, its files are read there.
// Where it has not, and ndst may (root: CAP_SYS_ADMIN), a throwaway OS
// thread gives itself a mount namespace of its own (unshare(CLONE_NEWNS)),
// makes every mount in it private (MS_REC|MS_PRIVATE on /, so nothing it
// mounts propagates back to the host), mounts the file system there, reads
// the files and exits: the thread's namespace, and its mount, go with it.
// This is what perf's library does when tracefs is absent (tracefs__mount),
// except that perf mounts it in the host's namespace and leaves it there.
//
// Invariants: the host's mounts are exactly as they were, whatever happens
// (the thread that changed its namespace is never returned to Go's
// scheduler: it ends with its goroutine); a file is read only when it is a
// regular file on the file system asked for (fstatfs), without following
// links and without blocking; the answer (files, or why there are none) is
// kept for the process's lifetime, so the mount is made at most once per set
// of files; when the file system cannot be had (not root, not in the
// kernel) the error says which, for a note that the figure it was needed
// for cannot be measured.
package pseudofs

import "fmt"

// FS is a pseudo file system: its type, where hosts mount it (the first is
// where a private mount goes), and its statfs magic.
type FS struct {
	Type   string
	Mounts []string
	Magic  int64
	// Under is another FS in which this one appears as a subdirectory on
	// older kernels (tracefs as debugfs's tracing/, before 4.1); empty for
	// none.
	Under *FS
	// Sub is the subdirectory of Under.
	Sub string
}

// Debugfs is the kernel's debugging file system.
var Debugfs = &FS{Type: "debugfs", Mounts: []string{"/sys/kernel/debug"}, Magic: 0x64626720}

// Tracefs is the tracing file system (events/SYSTEM/NAME/{id,format}).
var Tracefs = &FS{Type: "tracefs", Mounts: []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}, Magic: 0x74726163, Under: Debugfs, Sub: "tracing"}

// Files are the contents of the files read, by their path relative to the
// file system's root; a file that does not exist is absent.
type Files map[string][]byte

// Unavailable says why a file system could not be read at all.
type Unavailable struct {
	FS     string
	Reason string
}

func (e *Unavailable) Error() string { return fmt.Sprintf("%s cannot be read: %s", e.FS, e.Reason) }
