package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newCountersTopic) }

// counterDoc is one counter of a result (-v, --counters, --json): its key
// and what it counts. A key ending in * stands for a family.
type counterDoc struct{ key, what string }

// counterGroups is the legend of `ndst help counters`, by where the counters
// come from. TestCounterLegend checks that every counter a run prints is in
// it.
var counterGroups = []struct {
	title string
	docs  []counterDoc
}{
	{"RCU (emulated kernel)", []counterDoc{
		{"grace_periods", "grace periods completed"},
		{"grace_periods_begun", "grace periods started"},
		{"gp_time_ns", "the completed grace periods' lengths, summed"},
		{"expedited_gps", "expedited grace periods run (synchronize_rcu_expedited, and synchronize_net under RTNL on lines that expedite it)"},
		{"expedited_noops", "synchronize_rcu_expedited calls that returned at once (one CPU without preemptible RCU, or a line whose expedited call is only a cond_resched)"},
		{"synchronize_noops", "synchronize_rcu calls that returned without a grace period (Tiny RCU, or one CPU: rcu_blocking_is_gp)"},
		{"callbacks_queued", "call_rcu callbacks queued"},
		{"callbacks", "RCU callbacks invoked"},
		{"rcu_barriers", "rcu_barrier calls"},
		{"fqs_scans", "force-quiescent-state scans of the grace-period kthread"},
		{"fqs_resched", "CPUs a scan made reschedule (resched_cpu) to end a grace period"},
		{"urgent_qs", "rcu_urgent_qs flags a scan set on CPUs holding a grace period up"},
		{"tick_resched", "ticks that turned such a flag into a reschedule"},
		{"rcu_stalls", "RCU CPU stall warnings printed"},
		{"qs_context_switch", "quiescent states a grace period waited for, from a switch to another task"},
		{"qs_schedule", "... from a pass through schedule() that kept the CPU (nothing else runnable)"},
		{"qs_tick_idle", "... from a tick that found the CPU idle or in user mode"},
		{"qs_tick_preempt", "... from preemptible RCU's tick in kernel code outside any reader"},
		{"qs_cond_resched", "... from cond_resched()'s rcu_all_qs, without a schedule()"},
		{"qs_fqs_idle", "... from a force-quiescent-state scan that found the CPU idle, or passed through idle since its snapshot"},
		{"qs_gp_init", "... from the grace-period kthread's own CPU as the grace period starts (rcu_gp_init, lines 7.2 on)"},
		{"wake_from_gp_latched", "synchronize_rcu calls sent back to the callback wait by rcu_normal_wake_from_gp's latch (64 callers in flight, lines 7.2 on)"},
		{"lazy_callbacks", "callbacks held back in lazy RCU's bypass list (lines with CONFIG_RCU_LAZY)"},
		{"lazy_flushes", "bypass lists emptied into the callbacks"},
		{"lazy_timer_flushes", "... of them by lazy RCU's 10 s timer"},
	}},
	{"devices (emulated kernel)", []counterDoc{
		{"synchronize_net", "synchronize_net calls of the unregister path"},
		{"wait_checks", "passes of the wait loop (netdev_wait_allrefs[_any]) over its devices' refcounts"},
		{"sleeps", "sleeps of the wait loop (msleep, or the strategy's own)"},
		{"rebroadcasts", "NETDEV_UNREGISTER rebroadcasts of the wait loop (once a second while a device waits)"},
		{"warnings", "'unregister_netdevice: waiting for X to become free' warnings printed"},
		{"release_checks", "refcount checks made at a reference's release (the strategies that wake the loop on a release)"},
		{"devices_freed", "devices freed"},
		{"addr_ns", "the part of an add that set the new devices up with their addresses (--up, --addr4, --addr6), after every device was created; the netlink backend counts it too"},
		{"devices_registered", "devices registered (namespace runs: in every namespace)"},
		{"up_devices_unregistered", "devices that were up when unregistered (--up)"},
		{"last_ref_*", "devices made ready by this holder's release (last_ref_in_device, ...; --up runs)"},
		{"last_ref_nested_rcu", "... released from a callback that another RCU callback queued (a second grace period)"},
	}},
	{"namespaces (emulated kernel)", []counterDoc{
		{"namespaces_created", "namespaces created"},
		{"namespaces_queued", "namespaces whose last reference was dropped, queued for the cleanup work"},
		{"namespaces_freed", "namespaces the cleanup freed"},
		{"cleanup_batches", "runs of the cleanup work (cleanup_net), each taking every namespace queued so far"},
		{"cleanup_max_batch", "the most namespaces one cleanup run took"},
		{"pernet_lock_waits", "namespace creations that found the pernet lock held (by the cleanup)"},
		{"pernet_lock_wait_ns", "their time waiting for it"},
	}},
	{"scheduler (emulated kernel)", []counterDoc{
		{"context_switches", "switches between tasks (or to idle)"},
		{"wakeups", "tasks woken"},
		{"ticks", "scheduling-clock interrupts"},
		{"preemptions", "tasks preempted by another"},
		{"newidle_pulls", "tasks a CPU about to go idle took from another CPU's run queue (the scheduler's newly-idle balance)"},
		{"cpu_busy_ns", "CPU time in kernel, user and interrupt mode, all CPUs"},
		{"events", "events the emulator processed (its own work, not the kernel's)"},
	}},
	{"real kernel (--backend netlink)", []counterDoc{
		{"netlink_requests", "netlink requests sent"},
		{"batches", "requests that created or deleted several devices at once"},
		{"per_device_ns", "the kernel's time per device of an add (from the sender's timings)"},
		{"kernel_bytes_per_device", "kernel memory one device took, measured from /proc/meminfo over the add's first part (the memory bound)"},
		{"kernel_bytes_per_namespace", "kernel memory one namespace took, measured the same way over netns add's first 16 (never below the bound's floor)"},
		{"links_per_namespace", "links netns add created in each namespace besides lo (--links)"},
		{"group_delete_ns", "the wall time of the group deletes (RTM_DELLINK of an interface group)"},
		{"group_delete_cpu_ns", "the sending thread's CPU time in them"},
		{"moved", "devices moved to a group of their own to delete a range at once"},
		{"vanished", "devices gone before ndst deleted them (by someone else)"},
		{"veth_pairs", "veth pairs created (netns add --veth)"},
		{"namespaces_deleted", "namespaces deleted"},
		{"cleanup_runs", "runs of the kernel's cleanup_net that took them (workqueue tracepoints)"},
		{"stack_samples", "/proc/TID/stack samples of the deleting thread (--attribute)"},
		{"sampler_cpu_ns", "the sampler's own CPU time"},
	}},
	{"real kernel (--backend module)", []counterDoc{
		{"kernel_ns", "the module's in-kernel time of the operation (ktime)"},
	}},
}

// counterLegend finds a counter's entry.
func counterLegend(key string) (counterDoc, bool) {
	for _, g := range counterGroups {
		for _, d := range g.docs {
			if d.key == key || strings.HasSuffix(d.key, "*") && strings.HasPrefix(key, strings.TrimSuffix(d.key, "*")) {
				return d, true
			}
		}
	}
	return counterDoc{}, false
}

func newCountersTopic(g *globalOptions) *cobra.Command {
	var b strings.Builder
	b.WriteString("The counters of a result (-v, --counters, --json's \"counters\"), by where they come from.\nTimes (_ns) are virtual on the emulated kernel, wall or CPU time on the real one.\n")
	for _, grp := range counterGroups {
		fmt.Fprintf(&b, "\n%s:\n", grp.title)
		w := 0
		for _, d := range grp.docs {
			w = max(w, len(d.key))
		}
		for _, d := range grp.docs {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, d.key, d.what)
		}
	}
	return &cobra.Command{
		Use:   "counters",
		Short: "What each counter of a result counts (ndst help counters)",
		Long:  strings.TrimRight(b.String(), "\n"),
	}
}

// version is the build's version; a release build sets it with
// -ldflags "-X main.version=v1.2.3".
var version = ""

// versionString is what --version prints: the version (or the module's,
// else "devel"), the commit when the build recorded one, and the Go
// toolchain and platform.
func versionString() string {
	v, commit, dirty := version, "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	parts := []string{v}
	if commit != "" {
		c := commit[:min(12, len(commit))]
		if dirty {
			c += ", modified"
		}
		parts = append(parts, "commit "+c)
	}
	parts = append(parts, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return strings.Join(slices.Clip(parts), ", ")
}
