// Package stacks attributes the real kernel's time to the phases of
// package phase by sampling the kernel stack of the thread that sends a
// request (/proc/PID/task/TID/stack) while the kernel works on it, so that
// a real teardown reads like an emulated one: how much was rcu_barrier(),
// synchronize_net() (expedited or not), the wait loop, RTNL, and CPU work.
//
// Invariants:
//   - A sample is the thread's stack at one instant, mapped to one phase
//     by its innermost known frame (Classify); an empty stack means the
//     thread was running on a CPU (the kernel does not walk the stack of a
//     task running elsewhere).
//   - Attribute splits each request's time exactly: its CPU time comes from
//     the thread's CPU clock, read at the request's start and end, and the
//     rest is waiting; the samples only decide how each is shared among
//     phases. The phases of a request sum to its duration.
//   - The sampler runs on an OS thread of its own, only between Start and
//     Stop, and reads the stack file through one descriptor (a bounded
//     pread per sample); it never blocks the thread it samples.
package stacks

import (
	"bytes"
	"strings"

	"github.com/ndst-project/ndst/phase"
)

// Frames parses the text of /proc/PID/stack ("[<0>] func+0xoff/0xlen"
// per line, innermost first) into function names.
func Frames(b []byte) []string {
	var out []string
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte{'\n'})
		b = rest
		if i := bytes.Index(line, []byte("] ")); i >= 0 {
			line = line[i+2:]
		}
		if i := bytes.IndexAny(line, "+ "); i >= 0 {
			line = line[:i]
		}
		if len(line) > 0 {
			out = append(out, string(line))
		}
	}
	return out
}

// Fold writes a stack read from /proc/TID/stack (innermost frame first) as
// one line of the folded format of flame graphs (flamegraph.pl, inferno,
// speedscope): outermost frame first, ";" between frames. A thread caught
// running, whose stack cannot be read, is "[running]".
func Fold(frames []string) string {
	if len(frames) == 0 {
		return "[running]"
	}
	var b strings.Builder
	for i := len(frames) - 1; i >= 0; i-- {
		b.WriteString(strings.ReplaceAll(frames[i], ";", ":"))
		if i > 0 {
			b.WriteByte(';')
		}
	}
	return b.String()
}

// maxStacks bounds the distinct stacks kept; the samples of any beyond it
// are counted under foldedOther.
const maxStacks = 10000

const foldedOther = "[other stacks]"

// frame maps the kernel functions ndst knows to phases. Lookups are exact
// names, then the prefixes in prefixes (for .constprop/.isra clones the
// names are cut at the first '.').
var frame = map[string]string{
	"rcu_barrier": phase.Barrier,

	"synchronize_rcu_expedited":   phase.SyncNetExp,
	"synchronize_sched_expedited": phase.SyncNetExp, // before 4.20
	"synchronize_rcu":             phase.SyncNet,
	"synchronize_rcu_normal":      phase.SyncNet,
	"synchronize_sched":           phase.SyncNet, // before 4.20
	"__wait_rcu_gp":               phase.SyncNet,
	"wait_rcu_gp":                 phase.SyncNet,

	"netdev_wait_allrefs":     phase.WaitLoop,
	"netdev_wait_allrefs_any": phase.WaitLoop,

	"rtnl_lock":               phase.RTNL,
	"rtnl_lock_killable":      phase.RTNL,
	"rtnl_lock_interruptible": phase.RTNL,
	"__rtnl_lock":             phase.RTNL,
	"rtnl_net_lock":           phase.RTNL,
	"rtnl_nets_lock":          phase.RTNL,

	"free_netdev":     phase.Free,
	"netdev_freemem":  phase.Free,
	"netdev_run_todo": phase.Free, // when not waiting in one of the above

	"unregister_netdevice_many":        phase.Unregister,
	"unregister_netdevice_many_notify": phase.Unregister,
	"unregister_netdevice_queue":       phase.Unregister,
	"rollback_registered":              phase.Unregister,
	"rollback_registered_many":         phase.Unregister,
	"dev_close_many":                   phase.Unregister,
	"rtnl_delete_link":                 phase.Unregister,
	"rtnl_dellink":                     phase.Unregister,
	"rtnl_group_dellink":               phase.Unregister,
	"default_device_exit_batch":        phase.Unregister,

	"register_netdevice": phase.Register,
	"rtnl_newlink":       phase.Register,
	"__rtnl_newlink":     phase.Register,
	"rtnl_create_link":   phase.Register,

	"cleanup_net": phase.NetnsCleanup,

	"rtnetlink_rcv_msg":              phase.Syscall,
	"netlink_rcv_skb":                phase.Syscall,
	"netlink_unicast":                phase.Syscall,
	"netlink_sendmsg":                phase.Syscall,
	"____sys_sendmsg":                phase.Syscall,
	"___sys_sendmsg":                 phase.Syscall,
	"__sys_sendmsg":                  phase.Syscall,
	"__sys_sendto":                   phase.Syscall,
	"do_syscall_64":                  phase.Syscall,
	"entry_SYSCALL_64":               phase.Syscall,
	"entry_SYSCALL_64_after_hwframe": phase.Syscall,
	"vfs_write":                      phase.Syscall,
	"ksys_write":                     phase.Syscall,
	"proc_sys_call_handler":          phase.Syscall,
}

// sleeps are the kernel's sleeping helpers: the wait loop's msleep() shows
// directly under netdev_run_todo() where netdev_wait_allrefs_any() is
// inlined into it.
var sleeps = map[string]bool{
	"msleep": true, "msleep_interruptible": true, "schedule_timeout": true,
	"schedule_timeout_uninterruptible": true, "usleep_range_state": true,
}

// Running is what Classify returns for an empty stack: the thread was on
// a CPU when sampled.
const Running = ""

// Classify maps a stack (innermost frame first) to the phase of its
// innermost frame that names one: a thread in rcu_barrier() called from
// netdev_run_todo() is in rcu_barrier, one in msleep() under
// netdev_wait_allrefs_any() is in the wait loop. A stack with no known
// frame is phase.Other; an empty one is Running.
func Classify(frames []string) string {
	if len(frames) == 0 {
		return Running
	}
	slept := false
	for _, f := range frames {
		if i := strings.IndexByte(f, '.'); i > 0 {
			f = f[:i]
		}
		if sleeps[f] {
			slept = true
			continue
		}
		if p, ok := frame[f]; ok {
			if p == phase.Free && slept && f == "netdev_run_todo" {
				return phase.WaitLoop
			}
			return p
		}
	}
	return phase.Other
}

// waits are the phases in which the thread sleeps: a sample there is
// waiting time. The others are CPU work (or a CPU-bound thread caught
// off its CPU).
var waits = map[string]bool{
	phase.Barrier: true, phase.SyncNet: true, phase.SyncNetExp: true,
	phase.WaitLoop: true, phase.RTNL: true, phase.NetnsCleanup: true,
}

// IsWait reports whether p is a phase the thread spends asleep.
func IsWait(p string) bool { return waits[p] }
