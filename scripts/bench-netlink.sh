#!/usr/bin/env bash
# bench-netlink.sh: ndst's netlink backend against iproute2, ratios measured in
# one run on this machine.
#
# usage: scripts/bench-netlink.sh [-n N] [-r ROUNDS] [--strict]
#
# Two comparisons, both with N ifb devices (default 1000), medians of ROUNDS
# rounds (default 9):
#
#  1. In process (go test -bench BenchmarkRatios in ndst/nlbackend): the
#     backend's Add/Del calls against ip's wall time minus the cost of
#     starting ip and entering the namespace. Also one-by-one vs batched.
#  2. Process against process, the figures a person sees: the ndst binary
#     (`ndst --backend netlink --kind ifb add N`, `del 1 MAX`, and `list` for
#     the start-up alone) against `ip -batch`, `ip link del group` and `ip
#     link show`, each a whole command from fork to exit, in alternating order
#     with a pause before each; wall and CPU (user+sys) medians and ratios.
#
#  3. When perf is installed, where the time goes: CPU, context switches and
#     page faults of start-up alone (--help, ip -V), start-up with a listing,
#     and the create, for each tool.
#
# Targets: whole-process create ratio <= 1.0 and batched delete ratio <= 1.2
# (section 2), in-process create ratio <= 1.0, batched delete ratio <= 1.2 and
# batched delete at least 50x faster than --one-by-one (section 1). With
# --strict the exit status is 1 when a target is missed. Needs root; every
# namespace it makes is removed on exit.
set -euo pipefail

n=1000
rounds=9
settle=0.1
strict=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) n=$2; shift ;;
	-r) rounds=$2; shift ;;
	--strict) strict=1 ;;
	*) echo "usage: $0 [-n N] [-r ROUNDS] [--strict]" >&2; exit 2 ;;
	esac
	shift
done
[[ $n =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-netlink: N and ROUNDS must be positive integers" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
	echo "bench-netlink: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid $(id -u)" >&2
	exit 1
fi
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
nsA=ndst-bench-$$
nsB=ndst-bench-ip-$$
cleanup() {
	[[ -x $tmp/ndst ]] && "$tmp/ndst" --backend netlink --netns "$nsA" reset >/dev/null 2>&1 || true
	ip netns del "$nsA" 2>/dev/null || true
	ip netns del "$nsB" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

missed=0
check() { # value op target label
	if awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { exit !((op == "<=") ? v <= t : v >= t) }'; then
		echo ok
	else
		missed=1
		echo MISSED
	fi
}

echo "== 1. in process: go test -bench BenchmarkRatios (N=$n, $rounds rounds)"
NDST_BENCH_N=$n NDST_BENCH_ROUNDS=$rounds go test -count=1 -run '^$' -bench '^BenchmarkRatios$' -benchtime 1x -v ./ndst/nlbackend/ >"$tmp/bench.out" 2>&1 || {
	cat "$tmp/bench.out" >&2
	exit 1
}
grep -E 'bench_linux_test|create_ratio' "$tmp/bench.out" | sed 's/^ *bench_linux_test.go:[0-9]*: /  /'
grep -q 'MISSED' "$tmp/bench.out" && missed=1

echo
echo "== 2. process against process: the ndst binary vs ip (N=$n, $rounds rounds)"
# Whole commands from fork to exit, as a person runs them: both pay their
# start-up and their namespace entry. The order alternates between rounds
# (ndst first in even rounds, ip first in odd ones), and every timed command
# starts after a pause of $settle s: the kernel frees deleted devices from
# RCU callbacks and work queues after `del` returns, and that work must not
# land in whichever command comes next. CPU is user+sys of the process
# (bash's time), which the machine's other load disturbs less than wall.
go build -o "$tmp/ndst" ./cmd/ndst
ip netns add "$nsB"
for ((i = 0; i < n; i++)); do echo "link add name b$i group 4242 type ifb"; done >"$tmp/add"
nd() { "$tmp/ndst" --backend netlink --netns "$nsA" --kind ifb --name 'nd%d' "$@"; }
# timed NAME CMD...: runs CMD once after the pause; appends its wall and CPU
# time (ns) to the arrays NAME_wall and NAME_cpu.
timed() {
	local name=$1 t0 t1 cpu
	shift
	sleep "$settle"
	t0=$(date +%s%N)
	cpu=$({ TIMEFORMAT='%3U %3S'; time "$@" >/dev/null 2>"$tmp/err"; } 2>&1) || { cat "$tmp/err" >&2; echo "bench-netlink: $* failed" >&2; exit 1; }
	t1=$(date +%s%N)
	eval "${name}_wall+=($((t1 - t0)))"
	eval "${name}_cpu+=($(awk -v u="${cpu% *}" -v s="${cpu#* }" 'BEGIN { printf "%.0f", (u + s) * 1e9 }'))"
}
declare -a ndstart_wall ndstart_cpu ipstart_wall ipstart_cpu ndadd_wall ndadd_cpu ipadd_wall ipadd_cpu nddel_wall nddel_cpu ipdel_wall ipdel_cpu
nd add 1 >/dev/null && nd del 1 2147483647 >/dev/null # the namespace exists from here on
for ((r = 0; r < rounds; r++)); do
	if ((r % 2 == 0)); then
		timed ndstart nd list; timed ipstart ip -n "$nsB" link show
		timed ndadd nd add "$n"; timed ipadd ip -n "$nsB" -batch "$tmp/add"
		timed nddel nd del 1 2147483647; timed ipdel ip -n "$nsB" link del group 4242
	else
		timed ipstart ip -n "$nsB" link show; timed ndstart nd list
		timed ipadd ip -n "$nsB" -batch "$tmp/add"; timed ndadd nd add "$n"
		timed ipdel ip -n "$nsB" link del group 4242; timed nddel nd del 1 2147483647
	fi
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# row LABEL ND IP IPLABEL TARGET: one line of medians and ratios; TARGET
# "-" for none.
row() {
	local label=$1 nd=$2 ip=$3 iplabel=$4 target=$5 nw nc iw ic rw rc verdict=""
	eval "nw=\$(med \"\${${nd}_wall[@]}\"); nc=\$(med \"\${${nd}_cpu[@]}\")"
	eval "iw=\$(med \"\${${ip}_wall[@]}\"); ic=\$(med \"\${${ip}_cpu[@]}\")"
	rw=$(ratio "$nw" "$iw"); rc=$(ratio "$nc" "$ic")
	if [[ $target != - ]]; then
		verdict="(want <= $target) $(check "$rw" '<=' "$target")"
		[[ $(check "$rw" '<=' "$target") == ok ]] || missed=1
	fi
	awk -v l="$label" -v nw="$nw" -v nc="$nc" -v il="$iplabel" -v iw="$iw" -v ic="$ic" -v rw="$rw" -v rc="$rc" -v v="$verdict" \
		'BEGIN { printf "  %-12s ndst %7.1f ms (cpu %6.1f)   %-18s %7.1f ms (cpu %6.1f)   ratio %s, cpu %s %s\n", l, nw / 1e6, nc / 1e6, il, iw / 1e6, ic / 1e6, rw, rc, v }'
}
row "start-up:" ndstart ipstart "ip link show" -
row "create:" ndadd ipadd "ip -batch" 1.0
row "batched del:" nddel ipdel "ip link del group" 1.2
rounds_ms() { eval "printf '%s ' \"\${${1}_wall[@]}\"" | awk '{ for (i = 1; i <= NF; i++) printf "%.0f ", $i / 1e6 }'; }
echo "  (start-up: the whole of \`ndst list\` and \`ip link show\` on a namespace holding only lo)"
echo "  rounds, wall ms: ndst add $(rounds_ms ndadd)| ip add $(rounds_ms ipadd)"
echo "                   ndst del $(rounds_ms nddel)| ip del $(rounds_ms ipdel)"

if command -v perf >/dev/null 2>&1; then
	echo
	echo "== 3. where the time goes: perf stat, median of 5 (CPU in ms; context switches; page faults)"
	# pstat NAME CMD...: appends "task-clock cs faults" of one run to NAME_p.
	pstat() {
		local name=$1
		shift
		sleep "$settle"
		perf stat -x, -o "$tmp/perf" -e task-clock,context-switches,page-faults -- "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
		eval "${name}_p+=(\"$(awk -F, '$3 ~ /task-clock/ { c = $1 } $3 ~ /context-switches/ { s = $1 } $3 ~ /page-faults/ { f = $1 } END { print c, s, f }' "$tmp/perf")\")"
	}
	declare -a ndhelp_p iphelp_p ndlist_p iplist_p ndmk_p ipmk_p
	for ((r = 0; r < 5; r++)); do
		pstat ndhelp "$tmp/ndst" --help
		pstat iphelp ip -V
		pstat ndlist "$tmp/ndst" --backend netlink --netns "$nsA" list
		pstat iplist ip -n "$nsB" link show
		pstat ndmk "$tmp/ndst" --backend netlink --netns "$nsA" --kind ifb --name 'nd%d' add "$n"
		"$tmp/ndst" --backend netlink --netns "$nsA" del 1 2147483647 >/dev/null
		pstat ipmk ip -n "$nsB" -batch "$tmp/add"
		ip -n "$nsB" link del group 4242
	done
	# prow LABEL NAME: the median of each column.
	prow() {
		local label=$1 name=$2
		eval "printf '%s\n' \"\${${name}_p[@]}\"" | awk -v l="$label" '
			{ c[NR] = $1; s[NR] = $2; f[NR] = $3 }
			function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int((n + 1) / 2)] }
			END { printf "  %-34s cpu %7.2f ms   %5d context switches   %5d page faults\n", l, med(c, NR), med(s, NR), med(f, NR) }'
	}
	prow "ndst --help (start-up alone)" ndhelp
	prow "ip -V" iphelp
	prow "ndst list (start-up + netns + dump)" ndlist
	prow "ip -n NS link show" iplist
	prow "ndst add $n" ndmk
	prow "ip -batch ($n creates)" ipmk
fi

if ((missed)); then
	echo "bench-netlink: a target was missed (see MISSED above)"
	((strict)) && exit 1
fi
exit 0
