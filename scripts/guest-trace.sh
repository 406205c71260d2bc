#!/bin/sh
# guest-trace.sh: the guest half of scripts/vm-trace.sh, run by the VM rig's
# /init with busybox sh (vm-run.sh --trace-tools puts it and a static
# teardowntrace on the guest's PATH).
#
#   guest-trace MODE N
#
# MODE one: create N dummy links, then trace while one process deletes them
# one by one (one RTM_DELLINK sendmsg each); MODE batch: trace one
# RTM_DELLINK that deletes all N at once (their interface group). The trace
# is tracefs text (trace clock mono) with the sched, timer, irq, IPI, RCU and
# sendmsg tracepoints the kernel has, printed between "@@guest-trace begin"
# and "@@guest-trace end", followed by the ring buffer's per-CPU lost-event
# counters. Exit: 0 ok, 1 a step failed, 2 usage.
set -u
mode=${1:-}
n=${2:-}
case "$mode" in one | batch) ;; *) echo "usage: guest-trace one|batch N" >&2; exit 2 ;; esac
case "$n" in '' | *[!0-9]*) echo "usage: guest-trace one|batch N" >&2; exit 2 ;; esac
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T || { echo "guest-trace: cannot mount tracefs" >&2; exit 1; }
echo 0 >$T/tracing_on
echo mono >$T/trace_clock 2>/dev/null || echo "guest-trace: no mono trace clock, using $(cat $T/trace_clock)" >&2
echo 16384 >$T/buffer_size_kb
missing=""
for e in sched/sched_switch sched/sched_waking sched/sched_wakeup \
	syscalls/sys_enter_sendmsg syscalls/sys_exit_sendmsg \
	timer/hrtimer_expire_entry timer/hrtimer_expire_exit timer/timer_start timer/timer_expire_entry \
	timer/timer_expire_exit timer/timer_cancel timer/tick_stop \
	irq/softirq_raise irq/softirq_entry irq/softirq_exit \
	irq_vectors/local_timer_entry irq_vectors/local_timer_exit irq_vectors/reschedule_entry \
	irq_vectors/call_function_single_entry irq_vectors/call_function_entry \
	ipi/ipi_send_cpu ipi/ipi_send_cpumask ipi/ipi_raise \
	rcu/rcu_utilization rcu/rcu_grace_period rcu/rcu_fqs rcu/rcu_quiescent_state_report; do
	if [ -d $T/events/$e ]; then echo 1 >$T/events/$e/enable; else missing="$missing $e"; fi
done
[ -z "$missing" ] || echo "guest-trace: tracepoints this kernel lacks:$missing" >&2
teardowntrace links -add "$n" || exit 1
sleep 1
: >$T/trace
echo 1 >$T/tracing_on
echo "teardowntrace-pass name=guest-$mode links=$n" >$T/trace_marker
if [ "$mode" = one ]; then
	teardowntrace run -marker $T/trace_marker -timeout 600s -- teardowntrace links -del "$n"
else
	teardowntrace run -marker $T/trace_marker -timeout 600s -- teardowntrace links -del-group 7
fi
rc=$?
echo 0 >$T/tracing_on
echo "@@guest-trace begin"
cat $T/trace
echo "@@guest-trace end"
for c in $T/per_cpu/cpu*; do
	echo "@@guest-trace stats ${c##*/} $(grep -E '^(overrun|dropped events|commit overrun):' $c/stats | tr '\n' ' ')"
done
exit $rc
