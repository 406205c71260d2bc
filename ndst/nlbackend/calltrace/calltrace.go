// Package calltrace records when one thread's calls of one system call
// returned, as the kernel saw it: the raw_syscalls:sys_exit tracepoint,
// stamped on CLOCK_MONOTONIC when the call's work is done and before the
// thread's return to user space runs its pending task work (where, for
// umount2, the last reference of an unmounted namespace is dropped:
// mntput_no_expire defers cleanup_mnt to task_work_add, fs/namespace.c;
// syscall_exit_work runs trace_sys_exit before exit_to_user_mode_prepare,
// include/linux/entry-common.h, 6.18). A time read in user space after the
// call can be late by however long the thread waited for a CPU, which on a
// busy machine is longer than the kernel needs to begin the work the call
// queued.
//
// Invariants: like package wqtrace, it changes nothing on the host, needs
// root, and never blocks; a record the kernel dropped is counted in Lost.
package calltrace
