#!/usr/bin/env bash
# lever-table.sh: every lever checked against real kernels in one run, on
# this host (its runtime knobs) and in a VM (boot parameters), and the table.
#
#   scripts/lever-table.sh [--out DIR] [--host-only | --vm-only] [--verify-runs R]
#                          [--vm-runs R] [--vm-batched-runs R] [--count N] [--cpus 1,2]
#                          [--vm-timeout S]
#
# This host (root; its kernel's runtime knobs, each put back):
#   1. ndst calibrate -o DIR/host-costs.json (this host's CPU costs and knobs);
#   2. for each workload (1000 devices deleted one by one, 1000 in one batch,
#      100 pods: namespaces with a veth pair deleted one at a time):
#      ndst --json --costs DIR/host-costs.json advise WORKLOAD --verify
#      --verify-runs R (default 3) > DIR/host-NAME.json: every runtime lever
#      advise finds, predicted, then measured without and with it.
# A VM (scripts/vm-predict.sh --param; boot parameters need a boot):
#   for each cell, a boot without and a boot with the parameter, N devices
#   (--count, default 1000) deleted one by one --vm-runs times (default 3)
#   and in one batch --vm-batched-runs times (default 9: a batch takes a
#   second or two, and its runs spread by up to 1.6x, so the sign of an
#   effect on it needs more runs to resolve), on each CPU
#   count of --cpus (default 1,2): PREEMPT_RT (linux-image-rt-amd64) with
#   rcupdate.rcu_normal_after_boot=0; the stock kernel (linux-image-amd64)
#   with rcutree.jiffies_till_first_fqs=0, and with rcu_nocbs=all. The
#   transcripts are kept as DIR/vm-NAME.log and DIR/vm-NAME.log.with.
# Then DIR/levers.json lists what was measured, and
# 'go run ./scripts/levertable -markdown DIR' prints the table: each cell's
# times without and with the lever, measured and predicted, the error of the
# prediction with it and the sign of its effect (the VM cells predicted again
# from their transcripts with this tree's model).
#
# The host part, and each pair of boots, holds both the machine's locks,
# ${NDST_REALKERNEL_LOCK:-/tmp/ndst-realkernel.lock} (real-kernel runs) and
# ${NDST_VM_LOCK:-/tmp/ndst-vm.lock} (qemu boots), taken in that order (vm,
# then real kernel, as other runs that hold both do), so that no other
# real-kernel run or boot on the machine disturbs these measurements or runs
# under a changed knob (a lock the caller already holds, running the script
# under flock, is used as it is). DIR
# defaults to a new folder lever-table-DATE in the current one. A default
# run took about 30 minutes on a 2-core machine (TCG guests).
# Exit status: 0 the table was printed; 1 a step failed (its output says
# which); 2 usage; 3 not root.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
	echo "lever-table: $*  (see: $0 --help)" >&2
	exit 2
}
note() { echo "lever-table: $*" >&2; }

out="" host=1 vm=1 runs=3 vmruns=3 vmbruns=9 count=1000 cpus_list=1,2 vmtimeout=1200
while (($#)); do
	case $1 in
	--out | --verify-runs | --vm-runs | --vm-batched-runs | --count | --cpus | --vm-timeout)
		(($# >= 2)) || usage "$1 needs a value"
		case $1 in
		--out) out=$2 ;;
		--verify-runs) runs=$2 ;;
		--vm-runs) vmruns=$2 ;;
		--vm-batched-runs) vmbruns=$2 ;;
		--count) count=$2 ;;
		--cpus) cpus_list=$2 ;;
		--vm-timeout) vmtimeout=$2 ;;
		esac
		shift 2
		;;
	--host-only) vm=0 && shift ;;
	--vm-only) host=0 && shift ;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
		exit 0
		;;
	*) usage "unknown argument '$1'" ;;
	esac
done
((host || vm)) || usage "--host-only and --vm-only exclude each other"
[[ $runs =~ ^[1-9][0-9]?$ ]] || usage "--verify-runs '$runs': want 1 to 99"
[[ $vmruns =~ ^[1-9][0-9]?$ ]] || usage "--vm-runs '$vmruns': want 1 to 99"
[[ $vmbruns =~ ^[1-9][0-9]?$ ]] || usage "--vm-batched-runs '$vmbruns': want 1 to 99"
[[ $count =~ ^[1-9][0-9]{0,4}$ ]] && ((count <= 10000)) || usage "--count '$count': want 1 to 10000 devices"
[[ $vmtimeout =~ ^[1-9][0-9]{1,4}$ ]] || usage "--vm-timeout '$vmtimeout': want 10 to 99999 seconds"
[[ ,$cpus_list, =~ ^,([1-9],)+$ ]] || usage "--cpus '$cpus_list': want CPU counts from 1 to 9, separated by commas"
[[ $EUID -eq 0 ]] || { echo "lever-table: needs root (the host's knobs, namespaces, the VM rig)" >&2; exit 3; }
[[ -n $out ]] || out=lever-table-$(date +%Y%m%d-%H%M%S)
[[ ! -e $out ]] || usage "--out '$out' exists; give a new folder"
mkdir -p "$out"
out=$(cd "$out" && pwd)
rklock=${NDST_REALKERNEL_LOCK:-/tmp/ndst-realkernel.lock}
vmlock=${NDST_VM_LOCK:-/tmp/ndst-vm.lock}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/ndst" ./cmd/ndst)
ndst=$work/ndst
t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# held PATH: this process already holds PATH's lock through a descriptor
# it inherited (a caller ran it under flock PATH): flocking an open file
# description that holds the lock succeeds at once.
held() {
	local fd
	for fd in /proc/$BASHPID/fd/*; do
		[[ $(readlink "$fd" 2>/dev/null) == "$1" ]] || continue
		flock -n "${fd##*/}" 2>/dev/null && return 0
	done
	return 1
}

# locked CMD...: CMD with both locks held (fd 8: the VM lock, fd 9: the
# real-kernel lock; one already held through an inherited descriptor is
# not taken again), each waited for at most an hour.
locked() {
	(
		if ! held "$vmlock"; then
			exec 8>>"$vmlock"
			flock -w 3600 8 || { note "$vmlock stayed locked for an hour"; exit 1; }
		fi
		if ! held "$rklock"; then
			exec 9>>"$rklock"
			flock -w 3600 9 || { note "$rklock stayed locked for an hour"; exit 1; }
		fi
		"$@"
	)
}

host_json="" vm_json=""
hostpart() {
	# A calibration that does not reproduce its own runs (closure) exits 1
	# and still writes its table: on a busy machine that happens, so it is
	# tried three times, and the last table is used, with its failure said.
	local try
	for try in 1 2 3; do
		note "this host: calibrating ($(uname -r)), try $try; load average $(cut -d' ' -f1-3 /proc/loadavg)"
		rm -f "$out/host-costs.json"
		if "$ndst" calibrate -o "$out/host-costs.json" >"$out/host-calibrate.txt" 2>&1; then
			break
		fi
		grep -E '^(warning|ndst)' "$out/host-calibrate.txt" | tail -n 3 >&2 || true
		[[ -s $out/host-costs.json ]] || { note "calibrate wrote no cost table"; exit 1; }
		((try < 3)) || note "the calibration did not close in three tries; its last table is used (host-calibrate.txt says why)"
	done
	files=()
	for w in "1000-one-by-one:--count 1000 --one-by-one" "1000-batched:--count 1000" "100-pods:--netns-count 100 --veth --one-at-a-time"; do
		name=${w%%:*}
		read -ra args <<<"${w#*:}"
		note "this host: advise --verify, ${w#*:} ($runs run(s) each way)"
		if ! "$ndst" --json --costs "$out/host-costs.json" advise "${args[@]}" --verify --verify-runs "$runs" \
			>"$out/host-$name.json" 2>"$out/host-$name.stderr"; then
			tail -n 5 "$out/host-$name.stderr" >&2
			note "advise --verify ${w#*:} failed"
			exit 1
		fi
		files+=("\"host-$name.json\"")
	done
	printf '"host": {"kernel": "%s", "verify": [%s]}' "$(uname -r)" "$(IFS=,; echo "${files[*]}")" >"$out/.host.json"
}
if ((host)); then
	locked hostpart
	host_json=$(<"$out/.host.json")
	rm -f "$out/.host.json"
fi

if ((vm)); then
	cells=()
	IFS=, read -ra cpus <<<"$cpus_list"
	for c in "${cpus[@]}"; do
		for spec in "rt:linux-image-rt-amd64:rcupdate.rcu_normal_after_boot=0" "fqs0:linux-image-amd64:rcutree.jiffies_till_first_fqs=0" "nocbs:linux-image-amd64:rcu_nocbs=all"; do
			IFS=: read -r tag pkg param <<<"$spec"
			name=$tag-$c
			note "VM: $pkg, $c CPU(s), without and with $param"
			if ! locked bash "$repo/scripts/vm-predict.sh" --param "$param" --cpus "$c" --count "$count" --runs "$vmruns" --batched-runs "$vmbruns" --timeout "$vmtimeout" --json \
				--log "$out/vm-$name.log" -- --package "$pkg" >"$out/vm-$name.json" 2>"$out/vm-$name.stderr"; then
				tail -n 5 "$out/vm-$name.stderr" >&2
				note "vm-predict.sh --param $param --cpus $c failed"
				exit 1
			fi
			cells+=("$(printf '{"kernel": "%s", "cpus": %d, "params": ["%s"], "without": "vm-%s.log", "with": "vm-%s.log.with"}' "$pkg" "$c" "$param" "$name" "$name")")
		done
	done
	vm_json=$(printf '"vm": [%s]' "$(IFS=,; echo "${cells[*]}")")
fi

load1=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "{"
	[[ -z $host_json ]] || echo "  $host_json,"
	[[ -z $vm_json ]] || echo "  $vm_json,"
	printf '  "load": ["%s", "%s"]\n}\n' "$load0" "$load1"
} >"$out/levers.json"
note "measured in $(($(date +%s) - t0)) s; the record is $out"
(cd "$repo" && go run ./scripts/levertable -markdown "$out")
