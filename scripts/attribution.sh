#!/usr/bin/env bash
# attribution.sh: what `ndst --backend netlink del --attribute` shows on this
# machine and what its sampling costs, measured in one run.
#
# usage: scripts/attribution.sh [-n N] [-r ROUNDS] [--strict]
#
# Runs BenchmarkAttribution (ndst/nlbackend): ROUNDS rounds (default 9) of a
# one-by-one delete of N ifbs (default 100), once with the 1 kHz kernel-stack
# sampling and once without, in alternating order; prints the ratio of the
# median wall times (target < 1.05), then the phase tables of one sampled
# one-by-one delete (per device) and one sampled batched delete. With
# --strict the exit status is 1 when the target is missed. Needs root; the
# namespace it makes is removed on exit.
set -euo pipefail
n=100
rounds=9
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
[[ $n =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || { echo "attribution: N and ROUNDS must be positive integers" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
	echo "attribution: needs root (netlink and /proc/PID/stack); running as uid $(id -u)" >&2
	exit 1
fi
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
NDST_BENCH_N=$n NDST_BENCH_ROUNDS=$rounds go test -count=1 -run '^$' -bench '^BenchmarkAttribution$' -benchtime 1x -v ./ndst/nlbackend/ >"$out" 2>&1 || {
	cat "$out" >&2
	exit 1
}
sed -n '/attribution_bench_linux_test/,/^Benchmark\|^PASS/p' "$out" | grep -v '^Benchmark\|^PASS' | sed 's/^ *attribution_bench_linux_test.go:[0-9]*: /  /'
grep -E 'attribute_overhead' "$out" | awk '{ for (i = 1; i <= NF; i++) if ($(i+1) == "attribute_overhead") print "  attribute_overhead " $i }'
if ((strict)) && grep -q MISSED "$out"; then
	exit 1
fi
