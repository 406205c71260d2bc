#!/usr/bin/env bash
# vm-matrix.sh: the emulated kernel's predictions against real kernels, cell by cell.
#
#   scripts/vm-matrix.sh [--cpus 1,2] [--preempt MODELS] [--count 100,1000] [--timeout S]
#                        [--json FILE] [--csv FILE] [--logs DIR] [KERNEL...]
#
# KERNEL is a kernel image package of Debian's registry (a metapackage such as
# linux-image-amd64 is resolved to the versioned package it depends on),
# SUITE:PACKAGE for a package of another Debian suite (vm-run.sh --suite: the
# rig's own package list, e.g. trixie:linux-image-amd64), or the path of a
# kernel .deb. Default: linux-image-amd64 linux-image-rt-amd64 (the host's
# Debian 12, 6.1), trixie:linux-image-amd64 trixie:linux-image-rt-amd64
# (Debian 13, 6.12) and sid:linux-image-amd64 (7.x, whose image is split into
# linux-binary and linux-modules packages).
#
# For each kernel, each CPU count of --cpus and each preemption model the
# kernel boots (from its config, as scripts/vm-run.sh --fetch-only reports
# it: a PREEMPT_DYNAMIC kernel none, voluntary and full on its command line,
# an RT kernel rt only; --preempt keeps only the models listed), one boot:
# scripts/vm-predict.sh calibrates ndst inside the guest (its device costs:
# ndst --json calibrate --no-netns --no-workloads), adds and deletes N dummy devices, batched and one by one, for
# each N of --count, and predicts each delete on the host with the emulated
# kernel of the line the guest's calibration chose from its release
# (ndst predict --from-guest). vmrig/matrixtable then prints one Markdown
# table (kernel, CPUs, preempt, N, mode, measured, predicted, error and the
# emulated kernel), and writes the cells as JSON and CSV (default
# vm-matrix.json and vm-matrix.csv in the current folder).
#
# Every boot is bounded by --timeout (seconds, at most and by default 300),
# and the whole of a cell (builds and prediction included) by --timeout plus
# 240 s. Kernel packages are cached by scripts/vm-run.sh. --logs DIR keeps
# each boot's transcript, prediction and log (default: a scratch folder,
# removed at the end). Nothing is left running on any exit path.
#
# Exit status: 0 every boot gave its predictions (whatever their errors);
# 1 some boot did not (its row says why); 2 usage; 3 a tool is missing.
set -euo pipefail
# Paths on the command line are the caller's; the scripts and Go packages
# are found from here.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
	local code=$1
	shift
	echo "vm-matrix: $*" >&2
	exit "$code"
}
usage() { die 2 "$*  (see: $0 --help)"; }

cpus_list=1,2 preempt_filter="" counts=100,1000 timeout_s=300 json_out=vm-matrix.json csv_out=vm-matrix.csv logs=""
kernels=()
while (($#)); do
	case $1 in
	--cpus | --preempt | --count | --timeout | --json | --csv | --logs)
		(($# >= 2)) || usage "$1 needs a value"
		case $1 in
		--cpus) cpus_list=$2 ;;
		--preempt) preempt_filter=$2 ;;
		--count) counts=$2 ;;
		--timeout) timeout_s=$2 ;;
		--json) json_out=$2 ;;
		--csv) csv_out=$2 ;;
		--logs) logs=$2 ;;
		esac
		shift 2
		;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
		exit 0
		;;
	-*) usage "unknown option '$1'" ;;
	*) kernels+=("$1") && shift ;;
	esac
done
((${#kernels[@]})) || kernels=(linux-image-amd64 linux-image-rt-amd64 trixie:linux-image-amd64 trixie:linux-image-rt-amd64 sid:linux-image-amd64)

# list_ok LIST REGEX: LIST is comma-separated words matching REGEX.
list_ok() { [[ ,$1, =~ ^,($2,)+$ ]]; }
list_ok "$cpus_list" '([1-9]|[1-5][0-9]|6[0-4])' || usage "--cpus '$cpus_list': want CPU counts from 1 to 64, separated by commas"
list_ok "$counts" '[1-9][0-9]{0,4}' || usage "--count '$counts': want device counts from 1 to 99999, separated by commas"
[[ -z $preempt_filter ]] || list_ok "$preempt_filter" '(none|voluntary|full|lazy|rt)' ||
	usage "--preempt '$preempt_filter': want models among none, voluntary, full, lazy, rt, separated by commas"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] && ((timeout_s <= 300)) || usage "--timeout '$timeout_s': want whole seconds from 1 to 300"
kargs=() # one "--package NAME [SUITE]" or "--kernel PATH" per kernel, tab-joined
for k in "${kernels[@]}"; do
	if [[ -f $k ]]; then
		kargs+=("--kernel"$'\t'"$(realpath "$k")")
	elif [[ $k =~ ^linux-image-[a-z0-9][a-z0-9.+-]*$ ]]; then
		kargs+=("--package"$'\t'"$k")
	elif [[ $k =~ ^([a-z][a-z0-9-]{1,30}):(linux-image-[a-z0-9][a-z0-9.+-]*)$ ]]; then
		kargs+=("--package"$'\t'"${BASH_REMATCH[2]}"$'\t'"${BASH_REMATCH[1]}")
	else
		usage "'$k': neither a kernel .deb nor a kernel image package name (linux-image-...)"
	fi
done
for out in "$json_out" "$csv_out"; do
	[[ -d $(dirname "$out") ]] || usage "cannot write '$out': no folder $(dirname "$out")"
done
json_out=$(realpath -m "$json_out")
csv_out=$(realpath -m "$csv_out")
command -v go >/dev/null 2>&1 || die 3 "go not found: needed to build ndst and the table"
command -v setsid >/dev/null 2>&1 || die 3 "setsid not found (util-linux)"

# ---------------------------------------------------------------- cleanup

work=$(mktemp -d "${TMPDIR:-/tmp}/ndst-matrix.XXXXXX")
# The cells' scripts make their scratch folders in this run's own, so that
# this run's cleanup removes whatever a stopped cell could not.
mkdir -p "$work/tmp"
export TMPDIR=$work/tmp
sessions=() # the cells' sessions (each cell runs in one of its own)
# session_procs SID: the PIDs of the processes of session SID (from /proc,
# without a process per PID).
session_procs() {
	local s st
	for s in /proc/[0-9]*/stat; do
		read -r st 2>/dev/null <"$s" || continue
		st=${st##*) }
		# After the command's name: state, ppid, pgrp, session.
		read -r _ _ _ st _ <<<"$st"
		[[ $st != "$1" ]] || { s=${s#/proc/}; echo "${s%/stat}"; }
	done
}
cleanup() {
	local rc=$?
	# A second signal (a stop often comes to a whole process group, twice
	# through timeout(1)) must not cut the cleanup short.
	trap - EXIT
	trap '' INT TERM HUP
	# A job started just before the signal may not be recorded yet: stop
	# every background job of this shell (each in its own process group
	# when setsid or timeout(1) made one).
	local j
	for j in $(jobs -p); do
		kill -TERM -- "-$j" 2>/dev/null || kill -TERM "$j" 2>/dev/null || true
	done
	# vm-run.sh's own trap stops its qemu on SIGTERM; a cell's timeout(1)
	# kills what is left 15 s later.
	wait 2>/dev/null || true
	# A cell's scripts may outlive its timeout(1) by a moment (a parent
	# that is stopped does not always wait for its child's cleanup): wait
	# until nothing of the cell's session runs, for up to 10 s, then stop
	# what is left, so that its scratch folders (in this run's folder, see
	# TMPDIR above) are gone with it.
	for j in "${sessions[@]}"; do
		local i
		for ((i = 0; i < 100; i++)); do
			[[ -n $(session_procs "$j") ]] || break
			sleep 0.1
		done
		# shellcheck disable=SC2046 # one PID per word
		kill -KILL $(session_procs "$j") 2>/dev/null || true
	done
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'trap "" INT TERM HUP; echo "vm-matrix: interrupted; stopping" >&2; exit 130' INT
trap 'trap "" INT TERM HUP; echo "vm-matrix: stopped by SIGTERM" >&2; exit 143' TERM
trap 'trap "" INT TERM HUP; exit 129' HUP

# run_cell LOG CMD...: run CMD in its own session (so that a stop reaches all
# of it), stdout to the caller's, stderr to LOG; returns its status.
run_cell() {
	local log=$1 rc=0
	shift
	setsid "$@" </dev/null 2>"$log" &
	sessions+=("$!")
	wait "$!" || rc=$?
	return "$rc"
}

if [[ -n $logs ]]; then
	mkdir -p "$logs" || usage "--logs '$logs': cannot create it"
	logs=$(realpath "$logs")
else
	logs=$work/logs
	mkdir -p "$logs"
fi
(cd "$repo" && go build -o "$work/matrixtable" ./vmrig/matrixtable) || die 3 "cannot build vmrig/matrixtable"
manifest=$logs/manifest.tsv
: >"$manifest"

# ---------------------------------------------------------------- the boots

start=$(date +%s%N)
plan=() # kernel index, CPUs, model, release
for i in "${!kargs[@]}"; do
	IFS=$'\t' read -r flag val ksuite <<<"${kargs[$i]}"
	name=${val##*/}
	sargs=()
	[[ -z ${ksuite:-} ]] || sargs=(--suite "$ksuite")
	facts=$logs/fetch-$i.txt
	rc=0
	run_cell "$logs/fetch-$i.stderr" bash "$repo/scripts/vm-run.sh" --fetch-only "${sargs[@]}" "$flag" "$val" >"$facts" || rc=$?
	if ((rc)); then
		echo "vm-matrix: $name: $(grep '^vm-run: ' "$logs/fetch-$i.stderr" | tail -n1)" >&2
		IFS=, read -ra cl <<<"$cpus_list"
		for c in "${cl[@]}"; do
			printf '%s\t\t%s\t%s\t%s\t\t\t%s\n' "$val" "$c" "-" "$rc" "$logs/fetch-$i.stderr" >>"$manifest"
		done
		continue
	fi
	release=$(sed -n 's/^release=//p' "$facts")
	models=$(sed -n 's/^preempt_models=//p' "$facts")
	if [[ -z $models ]]; then
		echo "vm-matrix: $release: its config is unknown; booting it with preempt=${preempt_filter:-none}" >&2
		models=${preempt_filter:-none}
	fi
	keep=()
	IFS=, read -ra ml <<<"$models"
	for m in "${ml[@]}"; do
		[[ -z $preempt_filter || ,$preempt_filter, == *,$m,* ]] && keep+=("$m")
	done
	if ((${#keep[@]} == 0)); then
		echo "vm-matrix: $release boots ${models//,/, }: none of --preempt $preempt_filter; skipped" >&2
		continue
	fi
	IFS=, read -ra cl <<<"$cpus_list"
	for c in "${cl[@]}"; do
		for m in "${keep[@]}"; do
			plan+=("$i"$'\t'"$c"$'\t'"$m"$'\t'"$release")
		done
	done
done

n=0
for p in "${plan[@]}"; do
	n=$((n + 1))
	IFS=$'\t' read -r i c m release <<<"$p"
	IFS=$'\t' read -r flag val ksuite <<<"${kargs[$i]}"
	sargs=()
	[[ -z ${ksuite:-} ]] || sargs=(--suite "$ksuite")
	cell=$logs/$release-${c}cpu-$m
	echo "vm-matrix: [$n/${#plan[@]}] $release, $c CPU(s), preempt $m" >&2
	t0=$(date +%s)
	rc=0
	run_cell "$cell.stderr" timeout -k 15 $((timeout_s + 240)) bash "$repo/scripts/vm-predict.sh" --cpus "$c" --preempt "$m" --count "$counts" \
		--timeout "$timeout_s" --log "$cell.transcript" --json -- "${sargs[@]}" "$flag" "$val" >"$cell.prediction.json" || rc=$?
	if ((rc == 0)); then
		echo "vm-matrix:   done in $(($(date +%s) - t0)) s" >&2
	else
		echo "vm-matrix:   failed (exit $rc) after $(($(date +%s) - t0)) s: $(grep -E '^(vm-run|ndst|vm-predict)' "$cell.stderr" | tail -n1)" >&2
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$val" "$release" "$c" "$m" "$rc" "$cell.transcript" "$cell.prediction.json" "$cell.stderr" >>"$manifest"
done
[[ -s $manifest ]] || die 1 "nothing ran"

wall=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
rc=0
"$work/matrixtable" -manifest "$manifest" -json "$json_out" -csv "$csv_out" -wall "$wall" || rc=$?
kept="logs in $logs"
[[ $logs != "$work"/* ]] || kept="no logs kept (--logs DIR keeps them)"
echo "vm-matrix: wrote $json_out and $csv_out; $kept" >&2
exit "$rc"
