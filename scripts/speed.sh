#!/usr/bin/env bash
# speed.sh: how long the default `ndst bench` and `ndst advise` take, as
# the project's speed targets state them (bench under 1 s of wall time,
# advise under 2 s, on a quiet 2-CPU machine of this project's kind).
#
#   scripts/speed.sh [-r RUNS]
#
# Builds ndst once, then runs each command RUNS times (default 5), the two
# alternating so that a change in the machine's load hits both alike, and
# prints the median wall time, the median CPU time (user + system) and
# their ratio to the target, with the load average before and after.
# Advise runs on a fixed machine (line 6.18, HZ 250, 2 CPUs) so the figure
# does not depend on the host; bench is the bare default matrix. On a busy
# machine the wall times exceed the CPU times / cores; the CPU time is the
# steadier figure. The go test benchmarks BenchmarkDefaultBench (bench/)
# and BenchmarkDefaultAdvise (advise/) measure the same work in-process.
#
# Exit status: 0 ok (the targets are reported, not enforced), 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
while [[ $# -gt 0 ]]; do
	case "$1" in
	-r) runs=${2:?-r needs a number}; shift ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	*) echo "speed.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "speed.sh: -r wants a positive number" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ndst" ./cmd/ndst

load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }
# one CMD... : appends "wall cpu" (seconds) of one run to $tmp/NAME
one() {
	local name=$1
	shift
	local wall user sys
	TIMEFORMAT='%R %U %S'
	{ time "$@" >/dev/null 2>&1; } 2>"$tmp/t"
	read -r wall user sys <"$tmp/t"
	echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" >>"$tmp/$name"
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

before=$(load)
for ((i = 0; i < runs; i++)); do
	one bench "$tmp/ndst" --state "$tmp/state" bench
	one advise "$tmp/ndst" --state "$tmp/state" --profile 6.18 --hz 250 --cpus 2 advise
done
after=$(load)

printf 'load average: %s before, %s after (%s CPUs)\n' "$before" "$after" "$(nproc)"
printf '%-28s %10s %10s %8s %s\n' command "wall (s)" "CPU (s)" target "wall/target"
for x in "bench:ndst bench:1" "advise:ndst advise --profile 6.18 --hz 250 --cpus 2:2"; do
	IFS=: read -r name cmd target <<<"$x"
	w=$(cut -d' ' -f1 "$tmp/$name" | median)
	c=$(cut -d' ' -f2 "$tmp/$name" | median)
	printf '%-28s %10.3f %10.3f %7ss %.2f\n' "${cmd:0:28}" "$w" "$c" "$target" "$(awk -v w="$w" -v t="$target" 'BEGIN{print w/t}')"
done
printf '(medians of %d runs each, alternating)\n' "$runs"
