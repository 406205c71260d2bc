#!/usr/bin/env bash
# trace-one-by-one.sh: trace one-by-one link deletes on this kernel and explain,
# on the tick grid, what each delete waits for.
#
# usage: scripts/trace-one-by-one.sh [-k K] [--first-fqs LIST] [--recorder tracefs|perf|both]
#          [--no-stacks] [--stack-interval-us N] [--wait-idle SECS] [--out DIR]
#
# For each value in LIST of /sys/module/rcutree/parameters/jiffies_till_first_fqs
# ("current", the default, leaves it alone; e.g. --first-fqs current,0 also runs
# with 0, the value being restored right after, and on every exit path), and
# each recorder, it runs one pass:
#   1. a throwaway network namespace ndst-trace-PID-N with K ifb links (ip -batch);
#   2. recording starts: a tracefs instance of its own under
#      /sys/kernel/tracing/instances/ (trace clock mono), or
#      `perf record -a -k mono`, with the scheduler, timer, softirq, RCU, tick
#      and sendmsg tracepoints this kernel has;
#   3. one `ip -batch` deletes the K links one by one (one RTM_DELLINK each);
#   4. recording stops, the namespace is deleted.
# A third pass per value (tracefs, unless --no-stacks) also samples the deleting
# task's /proc/PID/stack every N us into the instance's trace_marker: the
# sampler runs on a CPU too, so that pass is kept apart from the clean one.
# Each trace is then explained by `go run ./scripts/teardowntrace`.
#
# The shape depends on what the other CPUs do (an idle CPU with its tick
# stopped is reported differently from a busy one), so before each pass the
# script measures every CPU's idle share over half a second and records it;
# --wait-idle SECS first waits, up to SECS, for all CPUs to be at least 90%
# idle for two seconds (it goes on, and says so, if they never are).
#
# Output: DIR (default /tmp/ndst-trace-DATE-PID) holds meta.txt (kernel,
# parameters, load, lost-event counts), PASS.trace (tracefs text) or
# PASS.perf.txt (perf script --ns), and PASS.txt (the full analysis: per-delete
# lines, summaries per end jiffy, timelines). The summaries are also printed.
#
# Everything it creates (network namespaces, the tracefs instance, perf's
# data file, temporary files) is removed on every exit path, and
# jiffies_till_first_fqs is put back. It runs in a private mount namespace of
# its own: tracefs is mounted there if the host has not mounted it (perf would
# otherwise mount it on the host), and the namespace names live in a private
# /run/netns (so the host's `ip netns list` does not see them, and a killed
# run leaves no namespace behind). A run killed with SIGKILL leaves its tracefs
# instance and possibly the changed parameter (noted in /run/ndst-trace-fqs-PID);
# the next run removes and restores them. It installs nothing.
#
# Exit: 0 ok, 1 a step failed (or not root), 2 usage, 3 a needed tool is missing
# (perf: Debian package linux-perf; go: the Go toolchain; ip: iproute2).
set -euo pipefail

prog=trace-one-by-one
usage() {
	sed -n '5,6p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
die() { echo "$prog: $*" >&2; exit 1; }

args=("$@")
k=30
fqs_list=current
recorder=both
stacks=1
stack_us=500
wait_idle=0
out=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	-k | --links) [[ $# -ge 2 ]] || usage; k=$2; shift ;;
	--first-fqs) [[ $# -ge 2 ]] || usage; fqs_list=$2; shift ;;
	--first-fqs=*) fqs_list=${1#*=} ;;
	--recorder) [[ $# -ge 2 ]] || usage; recorder=$2; shift ;;
	--recorder=*) recorder=${1#*=} ;;
	--no-stacks) stacks=0 ;;
	--stack-interval-us) [[ $# -ge 2 ]] || usage; stack_us=$2; shift ;;
	--wait-idle) [[ $# -ge 2 ]] || usage; wait_idle=$2; shift ;;
	--out) [[ $# -ge 2 ]] || usage; out=$2; shift ;;
	--out=*) out=${1#*=} ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument $1" >&2; usage ;;
	esac
	shift
done
[[ $k =~ ^[1-9][0-9]*$ ]] && ((k <= 5000)) || { echo "$prog: -k wants 1..5000 links, got '$k'" >&2; exit 2; }
[[ $stack_us =~ ^[1-9][0-9]*$ ]] && ((stack_us >= 100 && stack_us <= 100000)) ||
	{ echo "$prog: --stack-interval-us wants 100..100000, got '$stack_us'" >&2; exit 2; }
[[ $wait_idle =~ ^[0-9]+$ ]] && ((wait_idle <= 3600)) || { echo "$prog: --wait-idle wants 0..3600 seconds, got '$wait_idle'" >&2; exit 2; }
case $recorder in tracefs | perf | both) ;; *) echo "$prog: --recorder wants tracefs, perf or both, got '$recorder'" >&2; exit 2 ;; esac
IFS=, read -r -a fqs_values <<<"$fqs_list"
((${#fqs_values[@]})) || { echo "$prog: --first-fqs wants a list such as current,0" >&2; exit 2; }
for v in "${fqs_values[@]}"; do
	[[ $v == current || $v =~ ^[0-9]$ ]] || { echo "$prog: --first-fqs values are 'current' or 0..9, got '$v'" >&2; exit 2; }
done

if [[ $(id -u) -ne 0 ]]; then
	die "needs root (network namespaces, tracefs, perf -a, /proc/PID/stack); running as uid $(id -u)"
fi
command -v ip >/dev/null || { echo "$prog: ip not found: install the Debian package iproute2" >&2; exit 3; }
command -v unshare >/dev/null || { echo "$prog: unshare not found: install the Debian package util-linux" >&2; exit 3; }
if [[ $recorder != tracefs ]] && ! command -v perf >/dev/null; then
	echo "$prog: perf not found: it is in the Debian package linux-perf (apt-get install linux-perf);" \
		"or run with --recorder tracefs" >&2
	exit 3
fi
gobin=$(command -v go || true)
[[ -n $gobin ]] || { [[ -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go; }
[[ -n $gobin ]] || { echo "$prog: go not found: the Go toolchain builds scripts/teardowntrace" >&2; exit 3; }
grep -qw tracefs /proc/filesystems || die "this kernel has no tracefs (CONFIG_TRACING)"

# Run the rest in a private mount namespace, so that mounting tracefs (when
# the host has not) and perf's own tracefs lookups leave the host's mounts alone.
if [[ -z ${NDST_TRACE_MNTNS:-} ]]; then
	export NDST_TRACE_MNTNS=1
	exec unshare --mount --propagation private -- bash "$0" "${args[@]}"
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
fqs_param=/sys/module/rcutree/parameters/jiffies_till_first_fqs
[[ -r $fqs_param ]] || die "$fqs_param not found (not Tree RCU?)"
fqs_orig=$(<"$fqs_param")
fqs_changed=0
fqs_note=/run/ndst-trace-fqs-$$
ns=""
inst=""
tmp=$(mktemp -d /tmp/ndst-trace-tmp.XXXXXX)
children=()
rc=0

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	for p in "${children[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${children[@]}"; do
		timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	if ((fqs_changed)); then
		if echo "$fqs_orig" >"$fqs_param"; then
			fqs_changed=0
			rm -f "$fqs_note"
		else
			echo "$prog: WARNING: could not restore $fqs_param to $fqs_orig" >&2
		fi
	fi
	if [[ -n $inst && -d $inst ]]; then
		echo 0 >"$inst/tracing_on" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			rmdir "$inst" 2>/dev/null && break
			sleep 0.2
		done
		[[ -d $inst ]] && echo "$prog: WARNING: could not remove the tracefs instance $inst" >&2
	fi
	if [[ -n $ns ]] && ip netns list | grep -qw "$ns"; then
		timeout 60 ip netns del "$ns" || echo "$prog: WARNING: could not delete network namespace $ns" >&2
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# The namespace's name lives in a /run/netns of this mount namespace only:
# the host's `ip netns list` never sees it, and if this script is killed
# outright the namespace goes away with the mount namespace.
mkdir -p /run/netns && mount -t tmpfs -o size=1m,mode=0755 ndst-trace /run/netns ||
	die "cannot mount a private /run/netns"
# ndst's ownership records of them, private the same way.
mkdir -p /run/ndst/netns && mount -t tmpfs -o size=1m,mode=0755 ndst-trace-records /run/ndst/netns ||
	die "cannot mount a private /run/ndst/netns"
if ! grep -q ' /sys/kernel/tracing tracefs ' /proc/self/mounts; then
	mount -t tracefs nodev /sys/kernel/tracing || die "cannot mount tracefs"
fi
tracing=/sys/kernel/tracing

# A run killed with SIGKILL cannot clean up: its tracefs instance stays, and
# jiffies_till_first_fqs may stay changed. Undo what such a run of this script
# left (named after its pid, which must no longer exist).
for d in "$tracing"/instances/ndst-trace-*; do
	[[ -d $d ]] || continue
	p=${d##*/ndst-trace-}
	p=${p%%-*}
	[[ $p =~ ^[0-9]+$ ]] && ! kill -0 "$p" 2>/dev/null || continue
	echo 0 >"$d/tracing_on" 2>/dev/null
	rmdir "$d" && echo "$prog: removed ${d##*/}, left by an earlier run that was killed" >&2
done
for f in /run/ndst-trace-fqs-*; do
	[[ -f $f ]] || continue
	p=${f##*-}
	[[ $p =~ ^[0-9]+$ ]] && ! kill -0 "$p" 2>/dev/null || continue
	read -r was set_to <"$f" || continue
	if [[ $(<"$fqs_param") == "$set_to" && $was =~ ^[0-9]+$ ]]; then
		echo "$was" >"$fqs_param" &&
			echo "$prog: restored jiffies_till_first_fqs=$was, left at $set_to by an earlier run that was killed" >&2
	fi
	rm -f "$f"
done
fqs_orig=$(<"$fqs_param") # after any such restore

# Tracepoints: the required ones, then those that help when present.
required=(sched/sched_switch sched/sched_waking syscalls/sys_enter_sendmsg syscalls/sys_exit_sendmsg
	timer/hrtimer_expire_entry timer/timer_start timer/timer_expire_entry irq/softirq_entry irq/softirq_exit)
optional=(sched/sched_wakeup timer/timer_expire_exit timer/timer_cancel timer/hrtimer_expire_exit timer/tick_stop
	irq/softirq_raise irq_vectors/local_timer_entry irq_vectors/local_timer_exit rcu/rcu_utilization
	rcu/rcu_grace_period rcu/rcu_fqs rcu/rcu_quiescent_state_report rcu/rcu_barrier rcu/rcu_invoke_callback
	rcu/rcu_batch_start rcu/rcu_batch_end)
events=()
missing=()
for e in "${required[@]}"; do
	[[ -d $tracing/events/$e ]] || die "tracepoint $e not found in $tracing/events (needed)"
	events+=("$e")
done
for e in "${optional[@]}"; do
	if [[ -d $tracing/events/$e ]]; then events+=("$e"); else missing+=("$e"); fi
done

if [[ -z $out ]]; then
	out=/tmp/ndst-trace-$(date +%Y%m%d-%H%M%S)-$$
fi
if [[ -e $out ]] && [[ -n $(ls -A "$out" 2>/dev/null) ]]; then
	echo "$prog: $out exists and is not empty" >&2
	exit 2
fi
mkdir -p "$out" || die "cannot create $out"

echo "$prog: building scripts/teardowntrace" >&2
(cd "$repo" && timeout 300 "$gobin" build -o "$tmp/teardowntrace" ./scripts/teardowntrace) || die "go build ./scripts/teardowntrace failed"
tool=$tmp/teardowntrace

for ((i = 0; i < k; i++)); do echo "link add ifb$i type ifb"; done >"$tmp/add.batch"
for ((i = 0; i < k; i++)); do echo "link del ifb$i"; done >"$tmp/del.batch"
limit=$((60 + k)) # seconds any one ip -batch may take

{
	echo "kernel: $(uname -r) ($(uname -v))"
	echo "cpus: $(nproc) online: $(cat /sys/devices/system/cpu/online)"
	cfg=/boot/config-$(uname -r)
	[[ -r $cfg ]] && grep -E '^CONFIG_(HZ|PREEMPT[A-Z_]*|NO_HZ[A-Z_]*|RCU_[A-Z_]*)=' "$cfg" | tr '\n' ' ' && echo
	echo "cmdline: $(cat /proc/cmdline)"
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	printf 'rcutree:'
	for f in /sys/module/rcutree/parameters/*; do
		v=$(cat "$f" 2>/dev/null) && printf ' %s=%s' "${f##*/}" "$v"
	done
	echo
	echo "links: $k ifb, deleted one by one by one ip -batch"
	echo "tracepoints: ${events[*]}"
	echo "not on this kernel: ${missing[*]:-none}"
} >"$out/meta.txt"

# bounded CMD...: run CMD in the background and wait for it, so that a
# signal reaches the trap at once (the cleanup then stops CMD); every CMD
# given here has its own time limit. Sets rc.
bounded() {
	"$@" &
	children+=($!)
	rc=0
	wait "$!" || rc=$?
	unset 'children[-1]'
}

set_fqs() { # value
	local v=$1
	[[ $v == current ]] && return 0
	fqs_changed=1
	echo "$fqs_orig $v" >"$fqs_note" # for a later run, should this one be killed
	echo "$v" >"$fqs_param" || die "cannot write $v to $fqs_param"
	[[ $(<"$fqs_param") == "$v" ]] || die "$fqs_param reads $(<"$fqs_param") after writing $v"
}
restore_fqs() {
	if ((fqs_changed)); then
		echo "$fqs_orig" >"$fqs_param" || die "cannot restore $fqs_param to $fqs_orig"
		fqs_changed=0
		rm -f "$fqs_note"
	fi
}

make_links() { # pass
	ns=ndst-trace-$$-$1
	ip netns add "$ns" || die "ip netns add $ns failed"
	timeout -k 5 "$limit" ip -n "$ns" -batch "$tmp/add.batch" || die "creating $k ifb links in $ns failed"
}
drop_links() {
	timeout 60 ip netns del "$ns" || die "ip netns del $ns failed"
	ns=""
}

# tracefs_pass NAME INTERVAL_US(0 = no stack sampling)
tracefs_pass() {
	local name=$1 us=$2
	inst=$tracing/instances/ndst-trace-$$-$name
	mkdir "$inst" || die "cannot create tracefs instance $inst"
	echo 0 >"$inst/tracing_on"
	echo mono >"$inst/trace_clock"
	echo 32768 >"$inst/buffer_size_kb"
	for e in "${events[@]}"; do echo 1 >"$inst/events/$e/enable"; done
	: >"$inst/trace"
	local interval=0
	((us > 0)) && interval=${us}us
	echo 1 >"$inst/tracing_on"
	echo "teardowntrace-pass name=$name first_fqs=$(<"$fqs_param")" >"$inst/trace_marker"
	bounded "$tool" run -marker "$inst/trace_marker" -stack-interval "$interval" -timeout "${limit}s" -- \
		ip -n "$ns" -batch "$tmp/del.batch"
	echo 0 >"$inst/tracing_on"
	((rc == 0)) || die "the delete batch failed (exit $rc)"
	timeout 60 cat "$inst/trace" >"$out/$name.trace" || die "reading $inst/trace failed"
	{
		echo "[$name] first_fqs=$(<"$fqs_param") load: $(cut -d' ' -f1-3 /proc/loadavg)"
		for c in "$inst"/per_cpu/cpu*; do
			echo "  ${c##*/}: $(grep -E '^(overrun|dropped events|commit overrun):' "$c/stats" | tr '\n' ' ')"
		done
	} >>"$out/meta.txt"
	rmdir "$inst" || die "cannot remove tracefs instance $inst"
	inst=""
	trace_file=$out/$name.trace
}

perf_pass() {
	local name=$1 spec
	spec=$(printf '%s,' "${events[@]/\//:}")
	bounded timeout -s INT -k 15 $((limit + 30)) perf record -a -k mono -m 16M -e "${spec%,}" -o "$tmp/perf.data" -- \
		ip -n "$ns" -batch "$tmp/del.batch" 2>"$tmp/perf.err"
	((rc == 0)) || { cat "$tmp/perf.err" >&2; die "perf record failed (exit $rc)"; }
	timeout 300 perf script --header --ns -i "$tmp/perf.data" >"$out/$name.perf.txt" 2>"$tmp/perf-script.err" ||
		{ cat "$tmp/perf-script.err" >&2; die "perf script failed"; }
	{
		echo "[$name] first_fqs=$(<"$fqs_param") load: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "  perf record: $(grep -i -E 'lost|wakeup|error' "$tmp/perf.err" | tr '\n' ' ')"
		echo "  perf lost samples: $(timeout 60 perf report -i "$tmp/perf.data" --stats 2>/dev/null | grep -i -E 'LOST' | tr -s ' ' | tr '\n' ' ')"
	} >>"$out/meta.txt"
	rm -f "$tmp/perf.data"
	trace_file=$out/$name.perf.txt
}

# cpu_idle: every CPU's idle share (idle+iowait) over 0.5 s, e.g. "cpu0 97% cpu1 99%";
# sets min_idle to the lowest.
cpu_idle() {
	local -a a b
	mapfile -t a < <(grep -E '^cpu[0-9]+ ' /proc/stat)
	sleep 0.5
	mapfile -t b < <(grep -E '^cpu[0-9]+ ' /proc/stat)
	local i out="" x y tot idl p
	min_idle=100
	for i in "${!a[@]}"; do
		read -r -a x <<<"${a[i]}"
		read -r -a y <<<"${b[i]}"
		tot=0
		for f in 1 2 3 4 5 6 7 8; do tot=$((tot + y[f] - x[f])); done
		idl=$((y[4] - x[4] + y[5] - x[5]))
		p=100
		((tot > 0)) && p=$((100 * idl / tot))
		((p < min_idle)) && min_idle=$p
		out+="${x[0]} $p% "
	done
	idle_line=${out% }
}

# wait_for_idle: with --wait-idle, wait (bounded) until every CPU was at
# least 90% idle in four half-second readings in a row.
wait_for_idle() {
	local deadline=$((SECONDS + wait_idle)) calm=0
	cpu_idle
	while ((wait_idle > 0 && SECONDS < deadline)); do
		if ((min_idle >= 90)); then calm=$((calm + 1)); else calm=0; fi
		((calm >= 4)) && break
		cpu_idle
	done
	if ((wait_idle > 0 && calm < 4)); then
		echo "$prog: the CPUs were not all 90% idle within ${wait_idle}s ($idle_line); tracing anyway" >&2
	fi
}

passes=()
# run_pass FQS RECORDER STACK_US: jiffies_till_first_fqs is set only for the
# recording itself, after the links exist and the CPUs are idle enough.
run_pass() {
	local v=$1 rec=$2 us=$3 name
	[[ $v == current ]] && v=$fqs_orig
	name=fqs$v-$rec
	((us > 0)) && name+=-stacks
	make_links "$name"
	wait_for_idle
	echo "$prog: pass $name (CPU idle before: $idle_line)" >&2
	echo "[$name] CPU idle share in the 0.5 s before: $idle_line" >>"$out/meta.txt"
	[[ $v == "$fqs_orig" ]] || set_fqs "$v"
	case $rec in
	tracefs) tracefs_pass "$name" "$us" ;;
	perf) perf_pass "$name" ;;
	esac
	restore_fqs
	drop_links
	"$tool" -expect "$k" -timelines 3 "$trace_file" >"$out/$name.txt" ||
		{ cat "$out/$name.txt" >&2; die "analysis of $trace_file failed"; }
	passes+=("$name")
}

for v in "${fqs_values[@]}"; do
	[[ $recorder == perf ]] || run_pass "$v" tracefs 0
	[[ $recorder == tracefs ]] || run_pass "$v" perf 0
	if ((stacks)); then run_pass "$v" tracefs "$stack_us"; fi
done

for name in "${passes[@]}"; do
	echo
	echo "################ $name"
	grep -F "[$name]" "$out/meta.txt" || true
	# header, histogram and the summaries; the per-delete lines and timelines are in the file.
	awk '/^== per delete/{skip=1} /^== summary/{skip=0} /^== timeline/{skip=1} /^== \/proc/{skip=0} !skip' "$out/$name.txt"
done
echo
echo "$prog: results in $out (meta.txt, the traces, and the full analyses *.txt)"
