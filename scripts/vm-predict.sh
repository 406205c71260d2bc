#!/usr/bin/env bash
# vm-predict.sh: check the emulated kernel against a stock kernel in a VM.
#
#   scripts/vm-predict.sh [--cpus N] [--preempt MODE] [--count 100,1000] [--timeout S]
#                         [--log FILE] [--json] [-- VM-RUN-OPTIONS...]
#   scripts/vm-predict.sh --netns [--cpus N] [--preempt MODE] [--runs R] [--count 10,100,1000]
#                         [--timeout S] [--log FILE] [--json] [-- VM-RUN-OPTIONS...]
#   scripts/vm-predict.sh --param NAME=VALUE [--param ...] [--cpus N] [--preempt MODE] [--runs R]
#                         [--batched-runs R] [--count 100,1000] [--timeout S] [--log FILE] [--json]
#                         [-- VM-RUN-OPTIONS...]
#
# Boots the guest once (scripts/vm-run.sh), calibrates ndst inside it
# ('ndst calibrate --no-netns --no-workloads': membarrier grace periods and
# the per-device CPU costs from small runs, all that a device delete's
# prediction uses; the namespace and workload runs would add minutes to
# each boot, and their closure would gate predictions that do not use
# them), then adds and deletes N real dummy devices, batched and one
# by one, for each N. Back on the host, 'ndst predict --from-guest' runs the
# emulated kernel of the guest's line (the one its calibration chose from its
# kernel release) with the guest's calibration, HZ, CPU count and preemption
# model, and prints predicted against measured (--json: ndst's JSON report).
# The guest's deletes are never a calibration input.
#
# --netns predicts namespace teardown instead, all of it inside the guest:
# 'ndst calibrate -o /tmp/c.json' (its namespace costs from 40 and 200
# namespaces deleted all at once), then 'ndst predict --netns --costs
# /tmp/c.json --runs R --count N,...': N namespaces with lo up, without and
# with a veth pair whose outer end is in predict's throwaway namespace,
# deleted all at once and one at a time, on the guest's kernel and on the
# emulated kernel (its virtual time does not depend on the emulation's
# speed). It prints the guest's table, or its JSON with --json; --runs is
# the real runs per cell (default 1), --count the namespace counts (1 to
# 10000, default 10,100,1000). The guest needs veth (vm-run.sh loads the
# kernel's veth.ko): without it predict --netns cannot time its cells, and
# the guest's error and the rig's module line (printed here) say why.
# Under TCG on 2 host cores a default run (Debian 6.1) took 5 min 5 s with
# 1 guest CPU and 5 min 51 s with 2: calibrate 75 s, predict 3.5 to 4.5
# min, most of it the 1000 namespaces deleted one at a time (50 to 75 s
# per cell); --runs R multiplies the real cells' time. --timeout defaults
# to 1800 s with --netns, and the guest gets 1024 MB (-- --mem MB to change
# it).
#
# --param NAME=VALUE checks a boot-time lever: the guest boots twice, as it
# is and with NAME=VALUE on its kernel command line (vm-run.sh --append; the
# parameters of every --param together), and each boot calibrates (its
# device costs: calibrate --no-netns --no-workloads) and then adds and deletes the devices
# as above, --runs R times each (default 1), the batched deletes
# --batched-runs R times (default: --runs; a batched delete of 1000 devices
# takes a second or two, one by one a minute, and batched runs spread by up
# to 1.6x with where in the tick their waits end). The medians are compared,
# and a change within the runs' resolution (bench.Threshold: twice the
# standard error of the two medians' difference, at least 5%) counts as no
# effect. On the host, 'ndst --param NAME=VALUE predict --from-guest
# WITHOUT --measured-in WITH' predicts both boots' deletes with the first
# boot's calibration, the second with the lever applied to the emulated
# kernel, and prints, for each N and mode, the measured and predicted times
# without and with the lever, the error with it and whether the lever's
# effect has the measured sign (--json: that JSON). NAME is a knob of 'ndst
# profiles --knobs' (rcupdate.rcu_normal_after_boot,
# rcutree.jiffies_till_first_fqs, rcu_nocbs, ...); its name, type and range
# are checked before anything boots, and whether the guest's line and
# machine have it before the second boot. One 1-CPU run at --count 20 took
# 57 s under TCG on 2 host cores. --log FILE keeps the first transcript in
# FILE and the second in FILE.with.
#
# --preempt is vm-run.sh's (none, voluntary, full, lazy, rt; default: the
# rig's), --timeout bounds the boot (default 300 s, 1800 s with --netns),
# --log keeps the guest's transcript. VM-RUN-OPTIONS pick the kernel:
# --package NAME or --kernel FILE.
# Exit status: 2 usage; vm-run.sh's when the boot fails (3 a host tool is
# missing, 4 no usable kernel, 5 the guest did not finish); else ndst
# predict's (with --netns: the guest's calibrate's when it failed, else the
# guest's predict's).
set -euo pipefail
# Paths on the command line are the caller's; the rig and ndst are found
# from here.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
  echo "vm-predict.sh: $*  (see: $0 --help)" >&2
  exit 2
}
note() { echo "vm-predict: $*" >&2; }

cpus=1 preempt="" counts="" timeout="" log="" json=0 netns=0 runs="" bruns="" vmargs=() params=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus|--preempt|--count|--timeout|--log|--runs|--batched-runs|--param)
      [ $# -ge 2 ] || usage "$1 needs a value"
      case "$1" in
        --param) params+=("$2") ;;
        --cpus) cpus=$2 ;;
        --preempt) preempt=$2 ;;
        --count) counts=$2 ;;
        --timeout) timeout=$2 ;;
        --log) log=$2 ;;
        --runs) runs=$2 ;;
        --batched-runs) bruns=$2 ;;
      esac
      shift ;;
    --json) json=1 ;;
    --netns) netns=1 ;;
    --) shift; vmargs=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done

# is_int_in V LO HI: V is a decimal integer from LO to HI.
is_int_in() { [[ $1 =~ ^[1-9][0-9]{0,5}$ ]] && (($1 >= $2 && $1 <= $3)); }
is_int_in "$cpus" 1 64 || usage "--cpus '$cpus': want an integer from 1 to 64"
case "$preempt" in ''|none|voluntary|full|lazy|rt) ;; *) usage "--preempt '$preempt': want none, voluntary, full, lazy or rt" ;; esac
if [ "$netns" = 1 ]; then
  [ -z "$bruns" ] || usage "--batched-runs is for --param"
  : "${counts:=10,100,1000}" "${runs:=1}" "${timeout:=1800}"
  is_int_in "$runs" 1 100 || usage "--runs '$runs': want real runs per cell from 1 to 100"
  [[ ,$counts, =~ ^,([1-9][0-9]{0,4},)+$ ]] || usage "--count '$counts': want namespace counts from 1 to 10000, separated by commas"
  IFS=, read -ra ns <<<"$counts"
  seen=" "
  for n in "${ns[@]}"; do
    ((n <= 10000)) || usage "--count '$counts': $n namespaces is more than 10000"
    [[ $seen != *" $n "* ]] || usage "--count '$counts': $n is listed twice"
    seen+="$n "
  done
elif [ ${#params[@]} -gt 0 ]; then
  : "${counts:=100,1000}" "${runs:=1}" "${timeout:=300}"
  is_int_in "$runs" 1 100 || usage "--runs '$runs': want runs of each delete per boot from 1 to 100"
  : "${bruns:=$runs}"
  is_int_in "$bruns" 1 100 || usage "--batched-runs '$bruns': want batched deletes per boot from 1 to 100"
  case "$counts" in ''|*[!0-9,]*|,*|*,|*,,*) usage "--count '$counts': want numbers separated by commas" ;; esac
else
  [ -z "$runs" ] || usage "--runs is for --netns and --param (a device prediction runs each cell once)"
  [ -z "$bruns" ] || usage "--batched-runs is for --param"
  : "${counts:=100,1000}" "${timeout:=300}"
  case "$counts" in ''|*[!0-9,]*|,*|*,|*,,*) usage "--count '$counts': want numbers separated by commas" ;; esac
fi
for p in ${params[@]+"${params[@]}"}; do
  [[ $p =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*=[A-Za-z0-9_.,:+-]+$ ]] ||
    usage "--param '$p': want NAME=VALUE, a kernel boot parameter (letters, digits and _ . - in NAME, also , : + in VALUE)"
done
if [ ${#params[@]} -gt 0 ] && [ "$netns" = 1 ]; then
  usage "--param and --netns: a lever is checked on device deletes (the namespace prediction runs inside one guest)"
fi
is_int_in "$timeout" 1 86400 || usage "--timeout '$timeout': want whole seconds from 1 to 86400"
if [ -n "$log" ]; then
  [ -d "$(dirname "$log")" ] || usage "--log '$log': no folder $(dirname "$log")"
  [ ! -d "$log" ] || usage "--log '$log' is a folder; want a file"
fi

work=$(mktemp -d)
# vm-run.sh makes its scratch folder in this one, so that this script's
# cleanup removes it even when a stop cut vm-run.sh's own cleanup short.
export TMPDIR=$work
child=""
cleanup() {
  local rc=$?
  trap - EXIT
  trap "" INT TERM HUP
  # vm-run.sh's own trap stops its qemu on SIGTERM.
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'trap "" INT TERM HUP; note "interrupted; stopping"; exit 130' INT
trap 'trap "" INT TERM HUP; note "stopped by SIGTERM"; exit 143' TERM
trap 'trap "" INT TERM HUP; exit 129' HUP
[ -n "$log" ] || log="$work/transcript"

# boot ARGS...: vm-run.sh ARGS with its stdout in the transcript, in the
# background so that a signal reaches the traps at once; returns its status.
boot() {
  local rc=0
  bash "$repo/scripts/vm-run.sh" "$@" >"$log" &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

# section N FROM TO: the lines of command N's output between its FROM and TO
# markers ("begin" to "stderr": its stdout; "stderr" to "kmsg": its stderr).
section() {
  awk -v n="$1" -v from="$2" -v to="$3" '
    index($0, "@@ndst-vm " from " " n) == 1 && ($0 == "@@ndst-vm " from " " n || substr($0, length("@@ndst-vm " from " " n) + 1, 1) == " ") { on = 1; next }
    on && $0 == "@@ndst-vm " to " " n { exit }
    on' "$log"
}
# status N: command N's exit status, "" when it did not end.
status() { sed -n "s/^@@ndst-vm end $1 exit=\(-\{0,1\}[0-9]*\) .*/\1/p" "$log" | head -n1; }
seconds() { sed -n "s/^@@ndst-vm end $1 exit=[-0-9]* seconds=\([0-9.]*\).*/\1/p" "$log" | head -n1; }

# ncmds: how many guest commands cmds holds (';;' separates them).
ncmds() {
  local w n=1
  for w in "${cmds[@]}"; do [ "$w" != ';;' ] || n=$((n + 1)); done
  echo "$n"
}
# calibrated_boot N ARGS...: boot ARGS, whose N guest commands start with
# calibrate. calibrate exits 1 when its closure fails, its report and table
# written all the same: that is said and the run goes on (the predictions
# are from it); any other command's failure, a command that did not end, or
# the rig's own failure stops the run with its status.
calibrated_boot() {
  local n=$1 rc=0
  shift
  boot "$@" || rc=$?
  [ "$rc" = 1 ] || return "$rc"
  local ended failed
  ended=$(grep -c '^@@ndst-vm end [0-9]* exit=' "$log" || true)
  failed=$(sed -n 's/^@@ndst-vm end \([0-9]*\) exit=\(-\{0,1\}[0-9]*\) .*/\1 \2/p' "$log" | awk '$2 != 0 && !($1 == 1 && $2 == 1)')
  if [ "$(status 1)" != 1 ] || [ -n "$failed" ] || [ "$ended" != "$n" ]; then
    [ "$(status 1)" = 1 ] || section 1 stderr kmsg >&2
    return 1
  fi
  note "the guest's calibration does not close (calibrate exited 1; its report says what misses): the predictions below are from it all the same"
}

rigargs=(--cpus "$cpus" --timeout "$timeout")
[ -z "$preempt" ] || rigargs+=(--preempt "$preempt")

if [ ${#params[@]} -gt 0 ]; then
  # The device costs only: the namespace runs would add minutes to each boot.
  cmds=(--json calibrate --no-netns --no-workloads)
  IFS=, read -ra ns <<<"$counts"
  for n in "${ns[@]}"; do
    for ((r = 0; r < runs || r < bruns; r++)); do
      ((r >= bruns)) || cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647)
      ((r >= runs)) || cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647 --one-by-one)
    done
  done
  (cd "$repo" && go build -o "$work/ndst" ./cmd/ndst)
  pargs=()
  for p in "${params[@]}"; do pargs+=(--param "$p"); done
  # The knobs' names, types and ranges are checked before anything boots;
  # whether the guest's line and machine take them, as soon as the first
  # boot's calibration says which they are, before the second boot.
  "$work/ndst" "${pargs[@]}" profiles >/dev/null || exit
  with="$log.with"
  [ "$log" != "$work/transcript" ] || with="$work/transcript.with"
  note "booting the guest twice (${cpus} CPU(s), preempt=${preempt:-default}; counts ${counts}): as it is, then with ${params[*]}"
  t0=$(date +%s)
  calibrated_boot "$(ncmds)" "${rigargs[@]}" "${vmargs[@]}" -- "${cmds[@]}" || exit
  "$work/ndst" "${pargs[@]}" --json predict --from-guest "$log" --measured-in "$log" >/dev/null || exit
  first=$log
  log=$with
  calibrated_boot "$(ncmds)" "${rigargs[@]}" --append "${params[*]}" "${vmargs[@]}" -- "${cmds[@]}" || exit
  log=$first
  booted=$(sed -n 's/^@@ndst-vm cmdline //p' "$with" | head -n1)
  for p in "${params[@]}"; do
    [[ " $booted " == *" $p "* ]] || { note "the second guest's command line lacks $p: $booted"; exit 5; }
  done
  note "both boots in $(($(date +%s) - t0)) s"
  if [ "$json" = 1 ]; then
    "$work/ndst" "${pargs[@]}" --json predict --from-guest "$log" --measured-in "$with"
    exit
  fi
  "$work/ndst" "${pargs[@]}" predict --from-guest "$log" --measured-in "$with"
  exit
fi

if [ "$netns" = 0 ]; then
  cmds=(--json calibrate --no-netns --no-workloads)
  IFS=, read -ra ns <<<"$counts"
  for n in "${ns[@]}"; do
    cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647)
    cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647 --one-by-one)
  done
  note "booting the guest (${cpus} CPU(s), preempt=${preempt:-default}); counts ${counts}"
  calibrated_boot "$(ncmds)" "${rigargs[@]}" "${vmargs[@]}" -- "${cmds[@]}" || exit
  (cd "$repo" && go build -o "$work/ndst" ./cmd/ndst)
  if [ "$json" = 1 ]; then
    "$work/ndst" --json predict --from-guest "$log"
  else
    "$work/ndst" predict --from-guest "$log"
  fi
  exit
fi

# ---------------------------------------------------------------- --netns

pred=(predict --netns --costs /tmp/c.json --runs "$runs" --count "$counts")
[ "$json" = 0 ] || pred=(--json "${pred[@]}")
note "booting the guest (${cpus} CPU(s), preempt=${preempt:-default}); namespace counts ${counts}, ${runs} real run(s) per cell, timeout ${timeout} s"
t0=$(date +%s)
rc=0
boot "${rigargs[@]}" --mem 1024 "${vmargs[@]}" -- calibrate -o /tmp/c.json ';;' "${pred[@]}" || rc=$?
# 1: a guest command failed (its status is below); anything else is the rig's.
[ "$rc" = 0 ] || [ "$rc" = 1 ] || exit "$rc"


s1=$(status 1) s2=$(status 2)
grep '^@@ndst-vm module veth ' "$log" | sed 's/^@@ndst-vm module /vm-predict: guest: /' >&2 || true
if [ "$s1" = 1 ] && [ "$s2" != "" ]; then
  # calibrate exits 1 when its closure fails, its table written all the same.
  note "the guest's calibration does not close (calibrate exited 1; its report says what misses): the prediction below is from it all the same"
elif [ "$s1" != 0 ]; then
  section 1 stderr kmsg >&2
  note "the guest's calibrate exited ${s1:-without an end}; nothing predicted"
  exit "${s1:-5}"
fi
section 2 begin stderr
if [ "$s2" != 0 ]; then
  section 2 stderr kmsg >&2
  note "the guest's predict --netns exited ${s2:-without an end}"
  exit "${s2:-5}"
fi
wall=$(sed -n 's/^@@ndst-vm host wall_ms=\([0-9]*\).*/\1/p' "$log" | tail -n1)
note "guest calibrate $(seconds 1) s, predict $(seconds 2) s; qemu wall $(awk -v ms="${wall:-0}" 'BEGIN { printf "%.0f", ms / 1000 }') s, $(($(date +%s) - t0)) s in all"
