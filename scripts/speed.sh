#!/usr/bin/env bash
# speed.sh: how long the emulated commands with speed targets take, against
# their targets, and against another revision's build in the same run.
#
#   scripts/speed.sh [-r RUNS] [-b REV] [-i] [-o NAME,...]
#
# The commands and their targets (wall time on a quiet 2-CPU machine of
# this project's kind):
#   bench    ndst bench (the default matrix)                       1 s
#   advise   ndst advise on line 6.18, HZ 250, 2 CPUs              2 s
#   unshare  ndst unshare 10000 --parallel 40 (6.18, 250, 2)       2 s
#   churn    ndst churn --netns --rate 100 --for 600s (6.18, 250,
#            2; with the search for the rate it stops keeping up)  5 s
# Builds ndst once (and, with -b, REV's ndst in a temporary worktree, removed
# at the end), then runs each command RUNS times (default 5), the commands
# and builds alternating so that a change in the machine's load hits all
# alike, and prints the median wall time, the median CPU time (user + system)
# and wall/target, with the load average before and after; with -b also the
# other build's medians and the ratios this/other. With -i it also counts the
# instructions of one run of each (perf stat where the CPU counts them, else
# valgrind's callgrind, slow: minutes), which the machine's load does not
# change. -o runs only the commands named. On a busy machine the wall times
# exceed the CPU times / cores; the CPU time and the instructions are the
# steadier figures. The go test benchmarks BenchmarkDefaultBench and
# BenchmarkExpeditedCell (bench/), BenchmarkDefaultAdvise (advise/),
# BenchmarkUnshare10kParallel40 and BenchmarkPodChurn100For600s (ndst/emu)
# measure the same work in-process (the last without the rate search).
#
# Exit status: 0 ok (the targets are reported, not enforced), 1 a command
# failed, 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5 base="" instr=0 only=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	-r) runs=${2:?-r needs a number}; shift ;;
	-b) base=${2:?-b needs a revision}; shift ;;
	-i) instr=1 ;;
	-o) only=${2:?-o needs command names}; shift ;;
	-h | --help) sed -n '2,28p' "$0"; exit 0 ;;
	*) echo "speed.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "speed.sh: -r wants a positive number" >&2; exit 2; }
m="--profile 6.18 --hz 250 --cpus 2"
declare -A cmd=(
	[bench]="bench"
	[advise]="$m advise"
	[unshare]="$m unshare 10000 --parallel 40"
	[churn]="$m churn --netns --rate 100 --for 600s"
)
declare -A target=([bench]=1 [advise]=2 [unshare]=2 [churn]=5)
names=(bench advise unshare churn)
if [[ -n $only ]]; then
	IFS=, read -r -a names <<<"$only"
	for n in "${names[@]}"; do
		[[ -n ${cmd[$n]:-} ]] || { echo "speed.sh: unknown command $n (bench, advise, unshare, churn)" >&2; exit 2; }
	done
fi

tmp=$(mktemp -d)
wt=""
cleanup() {
	[[ -z $wt ]] || git worktree remove --force "$wt" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/ndst.this" ./cmd/ndst
builds=(this)
if [[ -n $base ]]; then
	rev=$(git rev-parse --verify --quiet "$base^{commit}") || { echo "speed.sh: no such revision $base" >&2; exit 2; }
	wt=$tmp/base-tree
	git worktree add --detach --quiet "$wt" "$rev"
	(cd "$wt" && go build -o "$tmp/ndst.base" ./cmd/ndst)
	builds+=(base)
fi

load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }
# one BUILD NAME: appends "wall cpu" (seconds) of one run to $tmp/BUILD.NAME
one() {
	local b=$1 name=$2 wall user sys
	TIMEFORMAT='%R %U %S'
	# shellcheck disable=SC2086 # the command's words
	if ! { time "$tmp/ndst.$b" --state "$tmp/state.$b" ${cmd[$name]} >/dev/null 2>"$tmp/err"; } 2>"$tmp/t"; then
		echo "speed.sh: $b: ndst ${cmd[$name]} failed:" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	read -r wall user sys <"$tmp/t"
	echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" >>"$tmp/$b.$name"
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
col() { cut -d' ' -f"$1" "$tmp/$2" | median; }

# instructions BUILD NAME: instructions of one run, or "-"
counter=""
if [[ $instr == 1 ]]; then
	if perf stat -x, -e instructions true 2>&1 >/dev/null | grep -q '^[0-9]'; then
		counter=perf
	elif command -v valgrind >/dev/null; then
		counter=callgrind
	else
		echo "speed.sh: -i: neither perf (with an instructions counter) nor valgrind is here; no instruction counts" >&2
	fi
fi
instructions() {
	local b=$1 name=$2
	# shellcheck disable=SC2086
	case $counter in
	perf) perf stat -x, -e instructions "$tmp/ndst.$b" --state "$tmp/state.$b" ${cmd[$name]} 2>&1 >/dev/null |
		awk -F, '/instructions/{print $1; exit}' ;;
	callgrind) GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$tmp/ndst.$b" --state "$tmp/state.$b" ${cmd[$name]} 2>&1 >/dev/null |
		awk '/Collected/{print $NF; exit}' ;;
	*) echo - ;;
	esac
}

before=$(load)
for ((i = 0; i < runs; i++)); do
	for name in "${names[@]}"; do
		for b in "${builds[@]}"; do
			one "$b" "$name"
		done
	done
done
declare -A ir
if [[ -n $counter ]]; then
	for name in "${names[@]}"; do
		for b in "${builds[@]}"; do
			ir[$b.$name]=$(instructions "$b" "$name")
		done
	done
fi
after=$(load)

printf 'load average: %s before, %s after (%s CPUs)\n' "$before" "$after" "$(nproc)"
printf '%-8s %9s %9s %7s %12s' command "wall (s)" "CPU (s)" target wall/target
[[ -z $counter ]] || printf ' %14s' instructions
if [[ -n $base ]]; then
	printf ' | %-12s %9s %9s' "$base" "wall (s)" "CPU (s)"
	[[ -z $counter ]] || printf ' %14s' instructions
	printf ' | %7s %7s' "wall" "CPU"
	[[ -z $counter ]] || printf ' %7s' instr
fi
printf '\n'
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0 && a != "-" && b != "-") printf "%.3f", a/b; else printf "-" }'; }
for name in "${names[@]}"; do
	w=$(col 1 "this.$name") c=$(col 2 "this.$name")
	printf '%-8s %9.3f %9.3f %6ss %12.2f' "$name" "$w" "$c" "${target[$name]}" "$(ratio "$w" "${target[$name]}")"
	[[ -z $counter ]] || printf ' %14s' "${ir[this.$name]}"
	if [[ -n $base ]]; then
		bw=$(col 1 "base.$name") bc=$(col 2 "base.$name")
		printf ' | %-12s %9.3f %9.3f' "" "$bw" "$bc"
		[[ -z $counter ]] || printf ' %14s' "${ir[base.$name]}"
		printf ' | %7s %7s' "$(ratio "$w" "$bw")" "$(ratio "$c" "$bc")"
		[[ -z $counter ]] || printf ' %7s' "$(ratio "${ir[this.$name]}" "${ir[base.$name]}")"
	fi
	printf '\n'
done
printf '(medians of %d runs each, alternating%s%s)\n' "$runs" "${base:+; ratios are this tree over $base}" \
	"${counter:+; instructions: one run, $counter}"
