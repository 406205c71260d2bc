#!/usr/bin/env bash
# trace-cni.sh: what a CNI DEL ('ndst netns del --cni') waits for on this
# kernel, from the scheduler's tracepoints, and when the namespace's cleanup
# comes after it.
#
#   scripts/trace-cni.sh [--count N] [--pairs K] [--churn RATE:SECONDS] [--out DIR]
#
# 1. K times (default 4): one pod (a namespace with lo up and a veth pair)
#    deleted with --cni, and one without; it prints the median of each
#    one's time from the delete's return to the cleanup's end. With --cni
#    the namespace's last reference is the netlink socket the DEL used,
#    freed in an RCU callback after its close (netlink_release's
#    deferred_put_nlk_sk), so its cleanup starts that much later.
# 2. N pods (default 30) deleted with --cni under `perf record -a -g` of
#    sched:sched_switch and sched:sched_waking. Each sleep of the deleting
#    thread inside its RTM_DELLINK (rtnl_dellink on the kernel stack) is
#    classed by where it slept: rcu_barrier()'s mutex
#    (rcu_state.barrier_mutex, held by another rcu_barrier caller), the
#    barrier's own completion (its callbacks), synchronize_rcu_expedited
#    (synchronize_net under RTNL), RTNL. It prints, per class, the sleeps,
#    their median and total (from the switch out to the switch back in),
#    and who released the barrier mutex to it (the kernel function that
#    called mutex_unlock, from the waker's stack: the namespace cleanup
#    worker's netdev_run_todo in default_device_exit_batch, or cleanup_net's
#    final rcu_barrier). For each waiter the barrier mutex was released to,
#    it then says how soon it ran again (and what its CPU ran just before:
#    the releasing worker, at a cond_resched or asleep, an idle CPU, another
#    task) and whether its own barrier then slept for callbacks, for the
#    waiters that ran within 100 us of the release and for the later ones.
# 3. With --churn RATE:SECONDS, a real pod churn ('ndst churn --netns')
#    under the same recording: each sleep of its creating threads (those
#    whose stacks show copy_net_ns or rtnl_newlink) classed by where it
#    slept: RTNL taken by a pernet init method of setup_net
#    (register_nexthop_notifier, for one), pernet_ops_rwsem, the grace
#    periods of the veth's veth_init_queues (synchronize_net, expedited
#    under RTNL, and the expedited funnel's lock), RTNL in rtnl_newlink or
#    rtnl_setlink (lo up), ndst's own file writes (ext4 and block I/O),
#    other; per class the sleeps, their median and the total a pod.
# Before each traced run it samples the RCU softirqs each CPU ran in 2 s
# (/proc/softirqs), ndst idle: a measure of the callbacks the machine's
# other work keeps queueing, which any barrier there also waits for.
#
# It needs root, perf (Debian: linux-perf), go and the ndst tree it is in;
# it builds ndst, takes /tmp/ndst-realkernel.lock for the real-kernel parts,
# and runs perf in a private mount namespace of its own (perf mounts tracefs
# where it is not mounted; the host's mount namespace is left alone). The
# namespaces are ndst's own ('ndst netns add'; 'ndst --backend netlink
# reset' removes any an interrupted run leaves). DIR (default: a temporary
# folder, removed at the end) keeps perf's text output (cni.perf.txt, and
# churn.perf.txt with --churn).
# Exit: 0 ok, 1 a step failed or not root, 2 usage, 3 a tool is missing.
set -euo pipefail
prog=trace-cni
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
	echo "$prog: $*  (see: $0 --help)" >&2
	exit 2
}
die() { echo "$prog: $*" >&2; exit 1; }

count=30 pairs=4 out="" churn=""
while [ $# -gt 0 ]; do
	case "$1" in
	--count | --pairs | --out | --churn)
		[ $# -ge 2 ] || usage "$1 needs a value"
		case "$1" in
		--count) count=$2 ;;
		--pairs) pairs=$2 ;;
		--out) out=$2 ;;
		--churn) churn=$2 ;;
		esac
		shift
		;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) usage "unknown argument '$1'" ;;
	esac
	shift
done
[[ $count =~ ^[1-9][0-9]{0,3}$ ]] && ((count <= 1000)) || usage "--count '$count': want pods from 1 to 1000"
[[ $pairs =~ ^[0-9]{1,2}$ ]] && ((pairs <= 50)) || usage "--pairs '$pairs': want 0 to 50"
churn_rate="" churn_for=""
if [ -n "$churn" ]; then
	[[ $churn =~ ^([1-9][0-9]{0,2}):([1-9][0-9]?)$ ]] && ((BASH_REMATCH[1] <= 200 && BASH_REMATCH[2] <= 60)) ||
		usage "--churn '$churn': want RATE:SECONDS, from 1 to 200 pods a second for 1 to 60 seconds"
	churn_rate=${BASH_REMATCH[1]} churn_for=${BASH_REMATCH[2]}
fi
if [ -n "$out" ]; then
	[ -d "$out" ] || usage "--out '$out': no such folder"
fi
[ "$(id -u)" = 0 ] || die "needs root (real namespaces, perf -a); running as uid $(id -u)"
for tool in perf go unshare flock; do
	command -v "$tool" >/dev/null || { echo "$prog: $tool is missing" >&2; exit 3; }
done

work=$(mktemp -d)
cleanup() {
	local rc=$?
	trap - EXIT
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
[ -n "$out" ] || out=$work
(cd "$repo" && go build -o "$work/ndst" ./cmd/ndst)
nd=("$work/ndst" --backend netlink)
export XDG_STATE_HOME=$work/state

# num KEY: the integer KEY of a --json result on stdin.
num() { grep -o "\"$1\":[0-9]*" | head -n1 | cut -d: -f2; }
# median of the numbers on stdin (the lower middle one).
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# The median of a space-separated list, for both analyses' awk programs.
awk_median='function median(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n ? a[int((n + 1) / 2)] : 0
}
'
# rcu_rate: the RCU softirqs each CPU ran a second over 2 s, before a traced
# run (ndst idle): how busy the machine's other work keeps RCU.
rcu_rate() {
	local a b
	a=$(grep -E '^ *RCU:' /proc/softirqs) && sleep 2 && b=$(grep -E '^ *RCU:' /proc/softirqs) || return 0
	awk -v a="$a" -v b="$b" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); s = ""
		for (i = 2; i <= n; i++) s = s sprintf("%s%.0f", i > 2 ? ", " : "", (y[i] - x[i]) / 2)
		printf "RCU softirqs a second, per CPU, in the 2 s before the traced run: %s\n", s
	}'
}

echo "kernel $(uname -r), $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
if ((pairs > 0)); then
	: >"$work/cni" && : >"$work/alone"
	for ((i = 0; i < pairs; i++)); do
		for style in cni alone; do
			flag=() && [ "$style" = alone ] || flag=(--cni)
			j=$(flock /tmp/ndst-realkernel.lock sh -c '"$@" netns add 1 --veth --lo-up >/dev/null && "$@" --json netns del 1 1 '"${flag[*]:-}" sh "${nd[@]}" 2>"$work/err") ||
				die "one pod's add and delete ($style) failed: $j $(cat "$work/err")"
			r=$(num returned_ns <<<"$j") d=$(num done_ns <<<"$j")
			[ -n "$r" ] && [ -n "$d" ] || die "no returned or done time in: $j"
			echo $((d - r)) >>"$work/$style"
		done
	done
	ms() { awk '{ printf "%.1f ms", $1 / 1e6 }'; }
	echo "one pod, from the delete's return to the cleanup's end ($pairs each, median):" \
		"with --cni $(median <"$work/cni" | ms), the namespace alone $(median <"$work/alone" | ms)"
fi

# The traced run, in a private mount namespace (perf may mount tracefs).
rcu_rate
cat >"$work/traced.sh" <<'EOF'
set -eu
"$@" netns add "$COUNT" --veth --lo-up >/dev/null
perf record -o "$WORK/perf.data" -k mono -a -g -e sched:sched_switch -e sched:sched_waking -- \
	"$@" netns del 1 "$COUNT" --cni >"$WORK/del.txt"
perf script -i "$WORK/perf.data" --ns -F comm,tid,cpu,time,event,trace,ip,sym >"$WORK/perf.txt" 2>/dev/null
rm -f "$WORK/perf.data"
# ndst's own namespace is mounted in this mount namespace only: remove it
# here, before the mount goes with it and leaves an empty file behind.
"$@" reset >/dev/null
EOF
COUNT=$count WORK=$work flock /tmp/ndst-realkernel.lock unshare -m --propagation private bash "$work/traced.sh" "${nd[@]}" ||
	die "the traced delete of $count pods failed"
[ "$out" = "$work" ] || cp "$work/perf.txt" "$out/cni.perf.txt"
grep -E '^per pod|^returned' "$work/del.txt" || true
awk -v pods="$count" "$awk_median"'
# A record: a header line, then its stack, innermost first, one frame a line.
# prevc is the pid of the task the waiter'"'"'s CPU switched from, prevn its
# name, prevst its state and prevf its stack ("" when unknown).
function woke(p, prevc, prevn, prevst, prevf,   r, b) {
	d = (t - since[p]) * 1000
	cls = class[p]
	cnt[cls]++; tot[cls] += d; lst[cls] = lst[cls] " " d
	if ((p in pend) && cls ~ /its callbacks/) {
		# The barrier of its own that a released waiter then ran slept.
		if (pend[p] <= 100) { oq++; oql = oql " " d } else { os++; osl = osl " " d }
	}
	delete pend[p]
	if (p in waker) {
		r = (t - waker[p]) * 1e6
		nrel++; rel = rel " " r
		if (r <= 100) nq++; else ns++
		pend[p] = r
		# What the CPU ran just before the waiter (perf records the
		# switched-out task'"'"'s stack with the switch).
		if (prevc == "") b = "unknown (the switch record was lost)"
		else if (prevc == 0) b = "an idle CPU"
		else if (prevc == wtid[p] && prevf ~ /cond_resched/) b = "the releasing worker, at a cond_resched"
		else if (prevc == wtid[p] && prevst ~ /^D/) { b = prevf; sub(/<.*/, "", b); b = "the releasing worker, asleep in " b }
		else if (prevc == wtid[p]) b = "the releasing worker, preempted"
		else { b = prevn; sub(/[-\/:].*/, "", b); b = "another task (" b ")" }
		before[b]++
	}
	delete since[p]; delete waker[p]
}
function flush() {
	if (ev == "") return
	# A sleep ends when its thread is switched in, or, if perf lost that
	# record, at the first event of the thread itself.
	if (tid in since) woke(tid, "", "", "", "")
	if (ev == "sched:sched_switch") {
		if (match(args, /next_pid=[0-9]+/)) {
			np = substr(args, RSTART + 9, RLENGTH - 9)
			st = args; sub(/.*prev_state=/, "", st)
			pp = args; sub(/.*prev_pid=/, "", pp); sub(/ .*/, "", pp)
			if (np in since) woke(np, pp + 0, comm, st, frames)
			# The grace-period kthread sleeps either waiting for a request
			# (rcu_gp_kthread: no grace period in progress) or inside one
			# (rcu_gp_fqs_loop); woken from the first, it starts one.
			if (args ~ /^prev_comm=rcu_(preempt|sched) /) {
				gpk = pp + 0
				if (gpst == "") gpfrom = t
				if (st ~ /^[SDI]/ && frames ~ /^rcu_gp_kthread</) { if (gpst != "idle") { gpst = "idle"; idlesince = t; nidle++ } }
				else if (gpst == "") gpst = "gp"
			}
			if (np + 0 == gpk && gpk > 0 && gpst == "idle") { idletot += t - idlesince; gpst = "gp" }
		}
		# Another task'"'"'s barrier began: the worker (or any caller) sleeps
		# on its completion once its callbacks are entrained. Was a grace
		# period in progress then (callbacks queued after it need the next)?
		if (comm !~ /^ndst/ && args ~ /prev_state=D/ && frames ~ /^wait_for_completion<rcu_barrier</) { barstart = t; bargp = gpst }
		if (comm ~ /^ndst/ && args ~ /prev_state=D/ && frames ~ /<rtnl_dellink/) {
			# The veth pair'"'"'s RCU frees are queued by the unregister
			# notifiers, just before the second synchronize_net.
			if (frames ~ /synchronize_rcu_expedited<unregister_netdevice_many/) lastsync[tid] = t
			# Sleeping on the barrier mutex: when were this DEL'"'"'s frees
			# queued, against the start of the barrier it waits for?
			if (frames ~ /^__mutex_lock[^<]*<rcu_barrier</ && (tid in lastsync) && barstart > 0) {
				o = (lastsync[tid] - barstart) * 1000; nord++; ord = ord " " o; if (o > 0) nafter++
			}
			if (frames ~ /^__mutex_lock[^<]*<rcu_barrier</ && barstart > 0 && bargp != "") bgp[tid] = bargp
			# A released waiter whose next sleep is not its barrier'"'"'s
			# callbacks: its own barrier did not sleep.
			if ((tid in pend) && !(frames ~ /^wait_for_completion<rcu_barrier</)) { if (pend[tid] <= 100) oqn++; else osn++; delete pend[tid] }
			c = "other"
			if (frames ~ /^(__mutex_lock[^<]*<)?rcu_barrier</ && frames ~ /^__mutex_lock/) c = "rcu_barrier: waiting for its mutex (another caller'"'"'s barrier)"
			else if (frames ~ /^wait_for_completion<rcu_barrier</) c = "rcu_barrier: waiting for its callbacks"
			else if (frames ~ /^[^<]*synchronize_rcu_expedited</ || frames ~ /^synchronize_rcu_expedited/) c = "synchronize_rcu_expedited (synchronize_net)"
			else if (frames ~ /rtnl_lock/) c = "RTNL"
			since[tid] = t; class[tid] = c
		}
	} else if (ev == "sched:sched_waking" && match(args, /pid=[0-9]+/)) {
		p = substr(args, RSTART + 4, RLENGTH - 4)
		if ((p in since) && class[p] ~ /mutex/ && !(p in waker)) {
			w = frames; sub(/^.*__mutex_unlock_slowpath[^<]*</, "", w); split(w, f, "<")
			by = comm; sub(/[-\/].*/, "", by)
			holder[by " in " f[1] (f[2] != "" ? " (from " f[2] ")" : "")]++
			if (p in bgp) { k = (f[1] " " f[2]) ~ /cleanup_net/ ? "cleanup_net'"'"'s final barrier" : (f[1] " " f[2]) ~ /netdev_run_todo/ ? "the worker'"'"'s netdev_run_todo" : "another caller"; gpn[k]++; if (bgp[p] == "gp") gpy[k]++; delete bgp[p] }
			waker[p] = t; wtid[p] = tid + 0
			tc = args; sub(/.*target_cpu=0*/, "", tc)
			if (tc + 0 == cpu + 0) samecpu++
		}
	}
}
/^[^\t]/ {
	flush()
	ev = ""; frames = ""
	if (!match($0, /\] +[0-9]+\.[0-9]+: +[a-z_]+:[a-z_]+:/)) next
	hdr = substr($0, 1, RSTART - 1); rest = substr($0, RSTART)
	# comm may hold spaces: the tid is the last word before the [cpu].
	cpu = hdr; sub(/^.*\[/, "", cpu); sub(/ *\[[0-9]+$/, "", hdr); tid = hdr; sub(/^.* /, "", tid); comm = hdr; sub(/ +[0-9]+$/, "", comm); sub(/^ +/, "", comm)
	split(rest, r, " "); t = r[2] + 0; ev = r[3]; sub(/:$/, "", ev)
	args = rest; sub(/^[^:]+: +[^ ]+ /, "", args)
	next
}
/^[ \t]+[0-9a-f]+ / {
	fn = $2; sub(/\+0x.*/, "", fn)
	if (fn ~ /^(__schedule|schedule|schedule_timeout|schedule_preempt_disabled|preempt_schedule_common|io_schedule)$/) next
	frames = frames (frames == "" ? "" : "<") fn
	next
}
END {
	flush()
	printf "%d pods: the deleting thread'"'"'s sleeps inside its RTM_DELLINK (perf sched_switch, switch out to switch in):\n", pods
	for (c in cnt) printf "  %-62s %4d sleeps, median %7.2f ms, total %8.1f ms (%.2f ms a pod)\n", c, cnt[c], median(lst[c]), tot[c], tot[c] / pods
	for (hh in holder) printf "  the barrier mutex was released to it by %s: %d times\n", hh, holder[hh]
	if (nrel) printf "  from that release to running again: median %.0f us (%d of %d woken on the releasing CPU)\n", median(rel), samecpu, nrel
	for (b in before) printf "  what its CPU ran just before it: %s: %d times\n", b, before[b]
	if (nord) printf "  the DEL'"'"'s veth frees (queued just before its second synchronize_net) came after the start of the barrier it then waited for %d of %d times, a median %.2f ms after it\n", nafter, nord, median(ord)
	for (k in gpn) printf "  released by %s: the barrier it had waited for began with a grace period in progress %d of %d times\n", k, gpy[k], gpn[k]
	if (gpk) {
		if (gpst == "idle") idletot += t - idlesince
		printf "  the grace-period kthread waited for a request (no grace period in progress) %.0f%% of the %.0f ms traced (%d times)\n", 100 * idletot / (t - gpfrom), (t - gpfrom) * 1000, nidle
	}
	if (nq) printf "  of the %d that ran within 100 us of the release, %d then slept for their own barrier'"'"'s callbacks (median %.2f ms), %d did not\n", nq, oq, median(oql), oqn
	if (ns) printf "  of the %d that ran later, %d then slept for their own barrier'"'"'s callbacks (median %.2f ms), %d did not\n", ns, os, median(osl), osn
}' "$work/perf.txt"

[ -n "$churn" ] || exit 0
# 3. The churn, traced the same way.
cat >"$work/churn.sh" <<'CHURN'
set -eu
perf record -o "$WORK/churn.data" -k mono -a -g -e sched:sched_switch -e sched:sched_waking -- \
	"$@" churn --netns --rate "$RATE" --for "${FOR}s" >"$WORK/churn.txt"
perf script -i "$WORK/churn.data" --ns -F comm,tid,cpu,time,event,trace,ip,sym >"$WORK/churn.perf.txt" 2>/dev/null
rm -f "$WORK/churn.data"
"$@" reset >/dev/null
CHURN
echo "churn of $churn_rate pods a second for $churn_for s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
rcu_rate
RATE=$churn_rate FOR=$churn_for WORK=$work flock /tmp/ndst-realkernel.lock unshare -m --propagation private bash "$work/churn.sh" "${nd[@]}" ||
	die "the traced churn failed: $(cat "$work/churn.txt" 2>/dev/null)"
[ "$out" = "$work" ] || cp "$work/churn.perf.txt" "$out/churn.perf.txt"
grep -E '^(create|backlog|cleanup):' "$work/churn.txt" || true
awk -v pods="$((churn_rate * churn_for))" "$awk_median"'
function woke(p) {
	d = (t - since[p]) * 1000
	k = p SUBSEP class[p]
	cnt[k]++; tot[k] += d; lst[k] = lst[k] " " d
	delete since[p]
}
function flush() {
	if (ev == "") return
	if (tid in since) woke(tid)
	if (ev != "sched:sched_switch") return
	if (match(args, /next_pid=[0-9]+/)) {
		np = substr(args, RSTART + 9, RLENGTH - 9)
		if (np in since) woke(np)
	}
	if (comm !~ /^ndst/ || args !~ /prev_state=D/) return
	# A creating thread is one that ever sleeps creating a namespace or a link.
	if (frames ~ /<(copy_net_ns|rtnl_newlink)</) creator[tid] = 1
	c = "other"
	if (frames ~ /^__mutex_lock[^<]*<[^<]*<ops_init<setup_net</ || frames ~ /^__mutex_lock[^<]*<(rtnl_lock<)?[^<]*<ops_init</) c = "RTNL taken by a pernet init method of setup_net"
	else if (frames ~ /^rwsem_down_read[^<]*<down_read[^<]*<copy_net_ns/) c = "pernet_ops_rwsem (copy_net_ns)"
	else if (frames ~ /<veth_init_queues</) c = "veth_init_queues: synchronize_net (expedited) and its funnel lock"
	else if (frames ~ /^__mutex_lock[^<]*<rtnl_newlink</) c = "RTNL in rtnl_newlink (the veth)"
	else if (frames ~ /^__mutex_lock[^<]*<rtnl_setlink</) c = "RTNL in rtnl_setlink (lo up)"
	else if (frames ~ /ext4|submit_bio|blkdev_|fsync|folio_wait|__wait_on_bit/) c = "file writes (ext4, block I/O)"
	else { c = frames; sub(/<.*/, "", c); c = "other: " c }
	since[tid] = t; class[tid] = c
}
/^[^\t]/ {
	flush()
	ev = ""; frames = ""
	if (!match($0, /\] +[0-9]+\.[0-9]+: +[a-z_]+:[a-z_]+:/)) next
	hdr = substr($0, 1, RSTART - 1); rest = substr($0, RSTART)
	sub(/ *\[[0-9]+$/, "", hdr); tid = hdr; sub(/^.* /, "", tid); comm = hdr; sub(/ +[0-9]+$/, "", comm); sub(/^ +/, "", comm)
	split(rest, r, " "); t = r[2] + 0; ev = r[3]; sub(/:$/, "", ev)
	args = rest; sub(/^[^:]+: +[^ ]+ /, "", args)
	next
}
/^[ \t]+[0-9a-f]+ / {
	fn = $2; sub(/\+0x.*/, "", fn); sub(/\.(isra|constprop|part)\..*/, "", fn)
	if (fn ~ /^(__schedule|schedule|schedule_timeout|schedule_preempt_disabled|preempt_schedule_common|io_schedule|__wait_for_common|wait_for_completion)$/) next
	frames = frames (frames == "" ? "" : "<") fn
	next
}
END {
	flush()
	for (k in cnt) { split(k, x, SUBSEP); if (x[1] in creator) { c = x[2]; n[c] += cnt[k]; s[c] += tot[k]; l[c] = l[c] lst[k] } }
	printf "%d pods: the creating threads'"'"' sleeps (perf sched_switch, switch out to switch in):\n", pods
	for (c in n) printf "  %-66s %5d sleeps, median %7.2f ms, total %8.1f ms (%.2f ms a pod)\n", c, n[c], median(l[c]), s[c], s[c] / pods
}' "$work/churn.perf.txt"
