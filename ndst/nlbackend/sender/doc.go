// Package sender sends the kernel requests that may never return, a
// delete waiting for a device's last reference, from a process of their
// own, so that ndst can stop waiting, report, and exit.
//
// A thread inside netdev_wait_allrefs sleeps uninterruptibly until the
// reference goes; a process with such a thread cannot finish exiting, and
// the shell that waits for it hangs with it. So ndst hands each teardown
// request to a sender: normally a child process (this same program,
// re-executed with NDST_SENDER set, which init() of this package turns into
// the sender loop before main runs) that holds the descriptors the request
// needs (the namespace's netlink socket, the namespace itself, the module's
// file) and nothing else. When ndst gives up on a request, it closes the
// pipes and leaves the child to the kernel: the child ends by itself when
// the request returns. Where the child cannot be started, the same loop runs
// on a locked thread of ndst itself, and Sender.InProcess says so.
//
// Invariants:
//   - The sender enters the kernel from one OS thread only, locked for its
//     whole life (the child's main thread, or the in-process thread), whose
//     PID and TID Sender reports, so that its kernel stack can be sampled at
//     /proc/PID/task/TID/stack while it works.
//   - Every reply carries the sender's own CLOCK_MONOTONIC times around the
//     request and its CPU clock (Sender.CPUClock reads the same clock
//     from outside), so a request's time excludes the pipe between the two.
//   - Call never waits longer than its give-up time; a request given up on
//     stays with the kernel and the Sender refuses further requests.
//   - The child ignores SIGINT, SIGTERM and SIGHUP and runs in a process
//     group of its own: ndst decides when to stop, and a terminal's Ctrl-C
//     cannot kill it between two requests. It exits when its request pipe
//     closes.
package sender
