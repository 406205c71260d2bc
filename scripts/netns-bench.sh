#!/usr/bin/env bash
# netns-bench.sh: ndst's real-kernel namespaces against iproute2, ratios
# measured in one run on this machine.
#
# usage: scripts/netns-bench.sh [-n N] [--strict]
#
# Runs BenchmarkNetnsRatios (ndst/nlbackend) with N namespaces (default
# 1000): creating them with lo up and one veth pair each, ndst (one
# process, `ndst --backend netlink netns add N --veth --lo-up`) against the
# best iproute2 way (one `ip -batch` of the netns adds and the veths, then
# `ip -n NS link set lo up` per namespace), target ratio <= 0.5; and
# deleting them all at once until the kernel's cleanup is done against one
# at a time, each waited for, target >= 10x. Prints the three times of both
# deletes. With --strict the exit status is 1 when a target is missed.
# Needs root; every namespace it makes is removed on exit.
set -euo pipefail
n=1000
strict=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) n=$2; shift ;;
	--strict) strict=1 ;;
	*) echo "usage: $0 [-n N] [--strict]" >&2; exit 2 ;;
	esac
	shift
done
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "netns-bench: N must be a positive integer" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
	echo "netns-bench: needs root (namespaces, netlink, tracepoints); running as uid $(id -u)" >&2
	exit 1
fi
command -v ip >/dev/null || { echo "netns-bench: needs iproute2 (ip) for the comparison" >&2; exit 1; }
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
NDST_BENCH_N=$n go test -count=1 -timeout 30m -run '^$' -bench '^BenchmarkNetnsRatios$' -benchtime 1x -v ./ndst/nlbackend/ >"$out" 2>&1 || {
	cat "$out" >&2
	exit 1
}
grep 'netns_bench_linux_test' "$out" | sed 's/^ *netns_bench_linux_test.go:[0-9]*: /  /'
if ((strict)) && grep -q MISSED "$out"; then
	exit 1
fi
