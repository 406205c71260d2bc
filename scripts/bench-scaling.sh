#!/usr/bin/env bash
# bench-scaling.sh: how teardown cost grows with the number of devices, for
# every wait strategy, batched and one by one, on the emulated kernel.
#
# usage: scripts/bench-scaling.sh [-o DIR] [--runs R] [--counts LIST]
#                                 [--profiles LIST] [-- EXTRA NDST ARGS...]
#
# For each profile (default 2.6.33 and 6.18, the ones that batch) it runs
#   ndst bench --profile P --strategy <all> --batch batched,one-by-one \
#              --count 100,300,1000,3000,10000,30000,100000 --runs R ...
# and writes, in DIR (default ./bench-scaling):
#   scaling-P.md    the Markdown table       scaling-P.png  time per device vs N
#   scaling-P.json  every run                scaling-P.csv  one line per cell
# then prints, per profile, strategy and mode, the line
# teardown(N) = fixed + per_device * N through the cells that completed (least
# squares on the relative error, so every N counts alike), with
# the per-device time at the smallest and largest N (growth.txt in DIR too).
#
# Extra arguments after -- go to ndst (before "bench"), e.g. the host's
# calibration: -- --costs host.json --hz 250 --cpus 2 (HZ, CPUs and preempt
# default to this kind of host: 250, 2, none).
#
# Exit: 0 ok, 1 a bench failed, 2 usage error.
set -euo pipefail

usage() {
	echo "usage: $0 [-o DIR] [--runs R] [--counts LIST] [--profiles LIST] [-- NDST ARGS...]" >&2
	exit 2
}

out=bench-scaling
runs=3
counts=100,300,1000,3000,10000,30000,100000
profiles=2.6.33,6.18
hz=250
cpus=2
extra=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	-o) [[ $# -ge 2 ]] || usage; out=$2; shift ;;
	--runs) [[ $# -ge 2 ]] || usage; runs=$2; shift ;;
	--counts) [[ $# -ge 2 ]] || usage; counts=$2; shift ;;
	--profiles) [[ $# -ge 2 ]] || usage; profiles=$2; shift ;;
	--hz) [[ $# -ge 2 ]] || usage; hz=$2; shift ;;
	--cpus) [[ $# -ge 2 ]] || usage; cpus=$2; shift ;;
	--) shift; extra=("$@"); break ;;
	-h | --help) usage ;;
	*) echo "bench-scaling: unknown argument $1" >&2; usage ;;
	esac
	shift
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench-scaling: --runs wants a positive number, got $runs" >&2; exit 2; }

here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
bin=$(mktemp -d)/ndst
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd "$here" && go build -o "$bin" ./cmd/ndst)

: >"$out/growth.txt"
IFS=, read -r -a plist <<<"$profiles"
for p in "${plist[@]}"; do
	start=$(date +%s.%N)
	"$bin" "${extra[@]}" bench --profile "$p" --hz "$hz" --cpus "$cpus" \
		--batch batched,one-by-one --count "$counts" --runs "$runs" \
		--export-markdown "$out/scaling-$p.md" --export-json "$out/scaling-$p.json" \
		--export-csv "$out/scaling-$p.csv" --plot "$out/scaling-$p.png" >"$out/scaling-$p.txt"
	end=$(date +%s.%N)
	printf '\nprofile %s, HZ=%s, %s CPU(s) (bench took %.1f s of wall time; table in %s)\n' \
		"$p" "$hz" "$cpus" "$(echo "$end - $start" | bc)" "$out/scaling-$p.md" | tee -a "$out/growth.txt"
	# Columns of the CSV export: see bench.csvColumns.
	awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	{
		k = $col["strategy"] " " $col["batch"]
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		if ($col["ok"] == 0) { lock[k] = lock[k] " " $col["count"]; next }
		# Weighted least squares (weight 1/y^2: relative errors), so that the
		# large N do not drown the fixed term.
		x = $col["count"]; y = $col["mean_ns"]; w = 1 / (y * y)
		c[k] += w; sx[k] += w * x; sy[k] += w * y; sxx[k] += w * x * x; sxy[k] += w * x * y
		if (!(k in xmin) || x < xmin[k]) { xmin[k] = x; pmin[k] = y / x }
		if (!(k in xmax) || x > xmax[k]) { xmax[k] = x; pmax[k] = y / x }
	}
	function dur(ns) {
		a = ns < 0 ? -ns : ns
		if (a >= 1e9) return sprintf("%.3fs", ns / 1e9)
		if (a >= 1e6) return sprintf("%.3fms", ns / 1e6)
		return sprintf("%.1fµs", ns / 1e3)
	}
	END {
		printf "  %-22s %-30s %-12s %-12s %s\n", "strategy mode", "teardown(N) = fixed + per dev", "per dev @min", "per dev @max", "max/min"
		for (i = 1; i <= n; i++) {
			k = order[i]
			if (c[k] == 0) { printf "  %-22s livelock at N =%s\n", k, lock[k]; continue }
			d = c[k] * sxx[k] - sx[k] * sx[k]
			b = d == 0 ? 0 : (c[k] * sxy[k] - sx[k] * sy[k]) / d
			a = (sy[k] - b * sx[k]) / c[k]
			line = dur(a) " + " dur(b) "·N"
			printf "  %-22s %-30s %-12s %-12s %.2f", k, line, dur(pmin[k]) "@" xmin[k], dur(pmax[k]) "@" xmax[k], pmax[k] / pmin[k]
			if (lock[k] != "") printf "  (livelock at N =%s)", lock[k]
			printf "\n"
		}
	}' "$out/scaling-$p.csv" | tee -a "$out/growth.txt"
done
echo
echo "plots: $(ls "$out"/scaling-*.png | tr '\n' ' ')"
