#!/usr/bin/env bash
# registry-scale.sh: the emulated registry at scale, as whole ndst commands,
# every ratio taken within one run (the fastest of ROUNDS interleaved rounds,
# so that other load on the machine disturbs both sides alike).
#
#   scripts/registry-scale.sh [-r ROUNDS] [-l SECONDS]
#
# Prints:
#   1. `ndst add 100000` and `ndst add 1000000` into an empty state file, wall
#      time of the whole process, and their ratio (10 is linear; a quadratic
#      step in names, indexes, hashes or the state file would show as ~100);
#   2. `ndst churn -t 4 -n 100000 -l SECONDS` with --locking rtnl and split:
#      operations per second, the share of time the lock was held, and the
#      throughput ceiling that implies (ops/s if the lock were always held).
#
# Exit status: 0 ok, 1 a command failed, 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 secs=3
while [[ $# -gt 0 ]]; do
	case "$1" in
	-r) rounds=${2:?-r needs a number}; shift ;;
	-l) secs=${2:?-l needs seconds}; shift ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "registry-scale.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "registry-scale.sh: -r wants a positive number" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ndst" ./cmd/ndst

wall() { # wall N -> seconds of `ndst add N` into an empty state
	rm -f "$work/state"
	local t0 t1
	t0=$(date +%s.%N)
	"$work/ndst" --state "$work/state" --watchdog 0 add "$1" >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

best100k="" best1m=""
for _ in $(seq "$rounds"); do
	a=$(wall 100000)
	b=$(wall 1000000)
	best100k=$(awk -v x="$a" -v y="${best100k:-$a}" 'BEGIN { print (x < y ? x : y) }')
	best1m=$(awk -v x="$b" -v y="${best1m:-$b}" 'BEGIN { print (x < y ? x : y) }')
done
echo "add, whole process, fastest of $rounds rounds:"
printf '  ndst add 100000    %7.3f s\n' "$best100k"
printf '  ndst add 1000000   %7.3f s\n' "$best1m"
awk -v a="$best100k" -v b="$best1m" 'BEGIN { printf "  ratio              %7.1fx  (10 is linear)\n", b / a }'

echo "churn, 4 threads, 100000 devices, ${secs} s each:"
for locking in rtnl split; do
	j=$("$work/ndst" --json churn -t 4 -n 100000 -l "$secs" --locking "$locking")
	field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" <<<"$j"; }
	awk -v l="$locking" -v ops="$(field ops_per_sec)" -v held="$(field lock_held_frac)" -v ceil="$(field lock_ceiling_ops_per_sec)" \
		'BEGIN { printf "  --locking %-6s %10.0f ops/s, lock held %3.0f%% of the time, ceiling %10.0f ops/s\n", l, ops, 100 * held, ceil }'
done
