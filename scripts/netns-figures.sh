#!/usr/bin/env bash
# netns-figures.sh: the emulated kernel's namespace teardown, the figures the
# README's namespace section quotes, each from this run.
#
#   scripts/netns-figures.sh [-c COSTS] [-r RUNS]
#
# COSTS is a cost table from 'ndst calibrate -o FILE' (default: the one
# committed in ndst/emu/testdata, calibrated on a 6.18 host with HZ=250 and
# 2 CPUs). Prints:
#   1. for N = 10, 100, 1000 namespaces (lo only, and lo plus a veth pair
#      into the initial namespace), deleted all at once and one at a time:
#      when the delete returned, when the devices were gone, when the
#      cleanup was done, and the cleanup runs, on line 6.18 and on 2.6.32,
#      both on the COSTS machine (its HZ and CPU count);
#   2. the ratio one-at-a-time / all-at-once of the cleanup-done time per N;
#   3. the wall time of adding and deleting 10,000 namespaces with 2 links
#      each through a state file (BenchmarkNetnsAddDel10k; target 2 s).
#
# Exit status: 0 ok, 1 a command failed, 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

costs=ndst/emu/testdata/host-6.18-costs.json runs=1
while [[ $# -gt 0 ]]; do
	case "$1" in
	-c) costs=${2:?-c needs a file}; shift ;;
	-r) runs=${2:?-r needs a number}; shift ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) echo "netns-figures.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "netns-figures.sh: -r wants a positive number" >&2; exit 2; }
[[ -f $costs ]] || { echo "netns-figures.sh: no cost table $costs" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ndst" ./cmd/ndst

hz=$(sed -n 's/.*"hz": *\([0-9]*\).*/\1/p' "$costs" | head -1)
cpus=$(sed -n 's/.*"cpus": *\([0-9]*\).*/\1/p' "$costs" | head -1)
echo "cost table: $costs (HZ=${hz:?no host HZ in the table}, ${cpus:?no host CPUs in the table} CPUs)"

for line in 6.18:backoff 2.6.32:msleep250; do
	profile=${line%%:*} strategy=${line#*:}
	echo
	echo "== line $profile (strategy $strategy)"
	"$work/ndst" bench --profile "$profile" --strategy "$strategy" --hz "$hz" --cpus "$cpus" \
		--netns-count 10,100,1000 --netns-veth false,true --batch batched,one-by-one \
		--runs "$runs" --costs "$costs" --export-csv "$work/$profile.csv" | grep -v '^wrote ' |
		awk '{ printf "  %s\n", $0 }'
	echo "  one at a time / all at once, cleanup done:"
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{ key = sprintf("%6d %-8s", $col["namespaces"], ($col["veth"] == "true") ? "lo+veth" : "lo")
		  if ($col["batch"] == "batched") all[key] = $col["median_ns"]; else one[key] = $col["median_ns"] }
		END { for (k in all) if (one[k] > 0) printf "    N=%s %7.1fx\n", k, one[k] / all[k] }' "$work/$profile.csv" | sort -n -k1.7
done

echo
echo "== 10,000 namespaces with 2 links each, add then delete at once, through a state file"
go test ./ndst/emu -run '^$' -bench 'BenchmarkNetnsAddDel10k$' -benchtime 3x | awk '/^Benchmark/ {
	printf "  %.3f s per add+delete (wall, whole operation, mean of 3; target 2 s)\n", $3 / 1e9 }'
