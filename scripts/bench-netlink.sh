#!/usr/bin/env bash
# bench-netlink.sh: ndst's netlink backend against iproute2, ratios measured in
# one run on this machine.
#
# usage: scripts/bench-netlink.sh [-n N] [-r ROUNDS] [--strict]
#
# Two comparisons, both with N ifb devices (default 1000), medians of ROUNDS
# alternating rounds (default 5):
#
#  1. In process (go test -bench BenchmarkRatios in ndst/nlbackend): the
#     backend's Add/Del calls against ip's wall time minus the cost of
#     starting ip and entering the namespace. Also one-by-one vs batched.
#  2. Process against process: the ndst binary (`ndst --backend netlink add N`,
#     `del 1 MAX`) against `ip -batch` and `ip link del group`, each a whole
#     command from fork to exit, so both pay their start-up.
#
# Targets: create ratio <= 1.0, batched delete ratio <= 1.2, batched delete at
# least 50x faster than --one-by-one. With --strict the exit status is 1 when
# a target is missed. Needs root; every namespace it makes is removed on exit.
set -euo pipefail

n=1000
rounds=5
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
echo "== 2. process against process: ndst binary vs ip (N=$n, $rounds rounds)"
go build -o "$tmp/ndst" ./cmd/ndst
ip netns add "$nsB"
for ((i = 0; i < n; i++)); do echo "link add name b$i group 4242 type ifb"; done >"$tmp/add"
now() { date +%s%N; }
nd() { "$tmp/ndst" --backend netlink --netns "$nsA" --kind ifb --name 'nd%d' "$@" >/dev/null; }
nd list # creates the namespace outside the timings
declare -a ndadd ipadd nddel ipdel
for ((r = 0; r < rounds; r++)); do
	t0=$(now); nd add "$n"; t1=$(now); ndadd+=($((t1 - t0)))
	t0=$(now); ip -n "$nsB" -batch "$tmp/add"; t1=$(now); ipadd+=($((t1 - t0)))
	t0=$(now); nd del 1 2147483647; t1=$(now); nddel+=($((t1 - t0)))
	t0=$(now); ip -n "$nsB" link del group 4242; t1=$(now); ipdel+=($((t1 - t0)))
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ma=$(med "${ndadd[@]}"); ia=$(med "${ipadd[@]}"); md=$(med "${nddel[@]}"); id=$(med "${ipdel[@]}")
ra=$(awk -v a="$ma" -v b="$ia" 'BEGIN { printf "%.2f", a / b }')
rd=$(awk -v a="$md" -v b="$id" 'BEGIN { printf "%.2f", a / b }')
awk -v a="$ma" -v b="$ia" -v r="$ra" -v v="$(check "$ra" '<=' 1.0)" 'BEGIN { printf "  create:      ndst %8.1f ms   ip -batch          %8.1f ms   ratio %s (want <= 1.0) %s\n", a / 1e6, b / 1e6, r, v }'
awk -v a="$md" -v b="$id" -v r="$rd" -v v="$(check "$rd" '<=' 1.2)" 'BEGIN { printf "  batched del: ndst %8.1f ms   ip link del group  %8.1f ms   ratio %s (want <= 1.2) %s\n", a / 1e6, b / 1e6, r, v }'
# check runs in a subshell above; evaluate again for the exit status.
[[ $(check "$ra" '<=' 1.0) == ok && $(check "$rd" '<=' 1.2) == ok ]] || missed=1
echo "  rounds (ms): ndst add $(printf '%s ' "${ndadd[@]}" | awk '{ for (i = 1; i <= NF; i++) printf "%.0f ", $i / 1e6 }')| ip add $(printf '%s ' "${ipadd[@]}" | awk '{ for (i = 1; i <= NF; i++) printf "%.0f ", $i / 1e6 }')"
echo "               ndst del $(printf '%s ' "${nddel[@]}" | awk '{ for (i = 1; i <= NF; i++) printf "%.0f ", $i / 1e6 }')| ip del $(printf '%s ' "${ipdel[@]}" | awk '{ for (i = 1; i <= NF; i++) printf "%.0f ", $i / 1e6 }')"

if ((missed)); then
	echo "bench-netlink: a target was missed (see MISSED above)"
	((strict)) && exit 1
fi
exit 0
