#!/usr/bin/env bash
# trace-pods.sh: trace pods (network namespaces with a veth pair) deleted one
# at a time on this kernel, each waited for until its cleanup is done, and
# say how many grace periods each of cleanup_net's rcu_barrier() waits took.
#
# usage: scripts/trace-pods.sh [-n N] [--first-fqs LIST] [--out DIR]
#
# For each value in LIST of /sys/module/rcutree/parameters/jiffies_till_first_fqs
# ("current", the default, leaves it alone; e.g. --first-fqs current,0), one
# pass:
#   1. ndst --backend netlink netns add N --veth (ndst's own namespaces);
#   2. the value is set, and a tracefs instance of this script's own records
#      the sched_switch, sched_wakeup, timer, tick and workqueue tracepoints
#      (trace clock mono);
#   3. ndst --backend netlink netns del 1 N --one-by-one;
#   4. recording stops, the value is put back, ndst reset removes what is left.
# Each trace is then read by `go run ./scripts/teardowntrace barriers`: per
# cleanup_net run, the CPUs its worker ran on, and per rcu_barrier() wait the
# grace-period kthread's wakeups (2: one grace period; 3-4: two).
#
# Output: DIR (default /tmp/ndst-trace-pods-DATE-PID) holds meta.txt (kernel,
# parameters, load, ring-buffer overruns), PASS.trace (tracefs text),
# PASS.ndst.txt (ndst's report) and PASS.txt (the analysis); the summaries are
# also printed.
#
# It runs in a private mount namespace of its own, where tracefs is mounted if
# it is not, so the host's mount table is not touched. The parameter is put
# back and the tracefs instance removed on every exit path; only ndst's own
# namespaces are created and deleted. Exit: 0 ok, 1 a step failed (or not
# root), 2 usage, 3 a needed tool is missing (go).
set -euo pipefail

prog=trace-pods
usage() {
	sed -n '6p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
die() { echo "$prog: $*" >&2; exit 1; }

n=20 fqs_list=current out=""
while (($#)); do
	case $1 in
	-n | --first-fqs | --out)
		(($# >= 2)) || usage
		case $1 in
		-n) n=$2 ;;
		--first-fqs) fqs_list=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	-h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage ;;
	esac
done
[[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 1000)) || { echo "$prog: -n $n: want 1..1000 pods" >&2; exit 2; }
for v in ${fqs_list//,/ }; do
	[[ $v == current || $v =~ ^[0-9]+$ ]] || { echo "$prog: --first-fqs: $v is not a number or current" >&2; exit 2; }
done
((EUID == 0)) || die "needs root (it deletes namespaces on the real kernel and writes an RCU parameter)"
command -v go >/dev/null || { echo "$prog: needs the Go toolchain" >&2; exit 3; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
knob=/sys/module/rcutree/parameters/jiffies_till_first_fqs
[[ -w $knob ]] || die "$knob is not writable here"
old=$(<"$knob")
out=${out:-/tmp/ndst-trace-pods-$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$out"
bin=$(mktemp -d)
cleanup() {
	echo "$old" >"$knob" 2>/dev/null || true
	[[ -x $bin/ndst ]] && "$bin/ndst" --backend netlink reset >/dev/null 2>&1 || true
	rm -rf "$bin"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
(cd "$repo" && go build -o "$bin/ndst" ./cmd/ndst && go build -o "$bin/teardowntrace" ./scripts/teardowntrace) || die "build failed"
{
	echo "kernel: $(uname -r)"
	echo "jiffies_till_first_fqs before: $old; passes: $fqs_list; pods: $n"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/meta.txt"

for v in ${fqs_list//,/ }; do
	pass=fqs-$v
	"$bin/ndst" --backend netlink netns add "$n" --veth >/dev/null || die "netns add failed"
	[[ $v == current ]] || echo "$v" >"$knob"
	unshare -m --propagation private bash -s "$bin/ndst" "$n" "$out/$pass" <<'EOF' || die "pass $pass failed"
set -euo pipefail
ndst=$1 n=$2 base=$3
T=/sys/kernel/tracing
grep -qs " $T tracefs " /proc/mounts || mount -t tracefs nodev "$T"
I=$T/instances/ndst-trace-pods-$$
mkdir "$I"
trap 'echo 0 > "$I/tracing_on" 2>/dev/null; rmdir "$I" 2>/dev/null || true' EXIT
echo mono >"$I/trace_clock"
echo 20000 >"$I/buffer_size_kb"
for e in sched/sched_switch sched/sched_wakeup sched/sched_waking timer/timer_expire_entry \
	timer/hrtimer_expire_entry timer/tick_stop irq/softirq_entry workqueue/workqueue_execute_start \
	workqueue/workqueue_execute_end; do
	[[ -e $I/events/$e/enable ]] && echo 1 >"$I/events/$e/enable"
done
echo 1 >"$I/tracing_on"
rc=0
"$ndst" --backend netlink netns del 1 "$n" --one-by-one >"$base.ndst.txt" 2>&1 || rc=$?
echo 0 >"$I/tracing_on"
cat "$I/trace" >"$base.trace"
echo "$(basename "$base") overruns: $(grep -h '^overrun' "$I"/per_cpu/cpu*/stats | awk '{s+=$2} END {print s+0}')" >>"$(dirname "$base")/meta.txt"
exit $rc
EOF
	echo "$old" >"$knob"
	"$bin/ndst" --backend netlink reset >/dev/null 2>&1 || true
	"$bin/teardowntrace" barriers "$out/$pass.trace" >"$out/$pass.txt"
	echo "== $pass (jiffies_till_first_fqs=${v/current/$old})"
	grep -E '^per namespace, delete to cleanup done' "$out/$pass.ndst.txt" || true
	tail -4 "$out/$pass.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
echo "$prog: traces and analyses in $out"
