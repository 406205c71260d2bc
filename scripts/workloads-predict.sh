#!/usr/bin/env bash
# workloads-predict.sh: the workloads' real-against-emulated cells, measured
# in one run, on this machine or in a VM.
#
#   scripts/workloads-predict.sh [--count N] [--only LIST] [--log FILE]
#   scripts/workloads-predict.sh --vm [--cpus N] [--count N] [--only LIST] [--timeout S]
#                                [--log FILE] [-- VM-RUN-OPTIONS...]
#
# Calibrates first ('ndst calibrate -o FILE': the device and namespace costs
# and the workload runs, each fitted and replayed on the emulated kernel),
# then 'ndst predict --workloads --costs FILE --count N': N devices up with
# an IPv6 address (with and without forwarding) deleted one by one and as
# one batch, N macvlans (and VLANs where the kernel has 8021q) on a device
# deleted one by one, in a stream, as one batch and with their lower
# device, N pods deleted with and without CNI DEL, unshare of 10 N
# namespaces by 8 workers with lo up and a veth pair, and a churn of 50
# pods a second for 20 s. It prints the calibration's closure line and the
# predict table (measured, predicted, error, gate: 20%, 25% for namespace
# times). N defaults to 100; --only picks cells (addrs, children, cni,
# unshare, churn).
#
# On this machine it needs root and runs under flock
# /tmp/ndst-realkernel.lock. With --vm the whole run is inside a stock
# Debian kernel under qemu (scripts/vm-run.sh, which loads the guest's
# veth, 8021q and macvlan modules), under flock /tmp/ndst-vm.lock, with
# --cpus guest CPUs (default 1), 2048 MB and --timeout seconds (default
# 2400; under TCG on 2 host cores a 1-CPU run at N = 100 takes about 15
# min). VM-RUN-OPTIONS pick the kernel (--package NAME, --kernel FILE).
# --log FILE keeps the full output (the VM's transcript).
#
# A calibration that does not close (calibrate exits 1) is reported and the
# prediction still runs: its table says how far each cell is (a * marks a
# cell beyond its gate). Exit status: 2 usage; the rig's when the VM boot
# fails; else predict's.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
  echo "workloads-predict.sh: $*  (see: $0 --help)" >&2
  exit 2
}
note() { echo "workloads-predict: $*" >&2; }

vm=0 cpus=1 count=100 only="" timeout=2400 log="" vmargs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus|--count|--only|--timeout|--log)
      [ $# -ge 2 ] || usage "$1 needs a value"
      case "$1" in
        --cpus) cpus=$2 ;;
        --count) count=$2 ;;
        --only) only=$2 ;;
        --timeout) timeout=$2 ;;
        --log) log=$2 ;;
      esac
      shift ;;
    --vm) vm=1 ;;
    --) shift; vmargs=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done
is_int_in() { [[ $1 =~ ^[1-9][0-9]{0,5}$ ]] && (($1 >= $2 && $1 <= $3)); }
is_int_in "$cpus" 1 64 || usage "--cpus '$cpus': want an integer from 1 to 64"
is_int_in "$count" 1 1000 || usage "--count '$count': want devices and pods per cell from 1 to 1000"
is_int_in "$timeout" 1 86400 || usage "--timeout '$timeout': want whole seconds from 1 to 86400"
[[ -z $only || $only =~ ^(addrs|children|cni|unshare|churn)(,(addrs|children|cni|unshare|churn))*$ ]] ||
  usage "--only '$only': want a list of addrs, children, cni, unshare, churn"
[ "$vm" = 1 ] || [ ${#vmargs[@]} -eq 0 ] || usage "VM-RUN-OPTIONS are for --vm"
if [ -n "$log" ]; then
  [ -d "$(dirname "$log")" ] || usage "--log '$log': no folder $(dirname "$log")"
  [ ! -d "$log" ] || usage "--log '$log' is a folder; want a file"
fi

work=$(mktemp -d)
child=""
cleanup() {
  local rc=$?
  trap - EXIT
  trap "" INT TERM HUP
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

pred=(predict --workloads --count "$count")
[ -z "$only" ] || pred+=(--only "$only")

# run CMD...: CMD in the background (so that a signal reaches the traps at
# once), its stdout to the log; returns its status.
run() {
  local rc=0
  "$@" >>"$log" &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

if [ "$vm" = 0 ]; then
  [ "$(id -u)" = 0 ] || { note "needs root (the real kernel's side); running as uid $(id -u)"; exit 1; }
  (cd "$repo" && go build -o "$work/ndst" ./cmd/ndst)
  : >"$log"
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  rc=0
  run flock /tmp/ndst-realkernel.lock "$work/ndst" calibrate -o "$work/c.json" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$log" >&2; exit "$rc"; }
  grep -E '^(calibration|closure|warning: the emulated)' "$log" || true
  [ "$rc" = 0 ] || note "the calibration does not close (calibrate exited 1); predicting from it anyway"
  start=$(wc -l <"$log")
  rc=0
  run flock /tmp/ndst-realkernel.lock "$work/ndst" "${pred[@]}" --costs "$work/c.json" || rc=$?
  tail -n +"$((start + 1))" "$log"
  note "load average before: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit "$rc"
fi

note "booting the guest (${cpus} CPU(s)); count ${count}, timeout ${timeout} s"
t0=$(date +%s)
rc=0
run flock /tmp/ndst-vm.lock bash "$repo/scripts/vm-run.sh" --cpus "$cpus" --mem 2048 --timeout "$timeout" "${vmargs[@]}" \
  -- calibrate -o /tmp/c.json ';;' "${pred[@]}" --costs /tmp/c.json || rc=$?
# 1: a guest command failed (its status is below); anything else is the rig's.
[ "$rc" = 0 ] || [ "$rc" = 1 ] || exit "$rc"

# section N FROM TO: command N's lines between its FROM and TO markers.
section() {
  awk -v n="$1" -v from="$2" -v to="$3" '
    index($0, "@@ndst-vm " from " " n) == 1 && ($0 == "@@ndst-vm " from " " n || substr($0, length("@@ndst-vm " from " " n) + 1, 1) == " ") { on = 1; next }
    on && $0 == "@@ndst-vm " to " " n { exit }
    on' "$log"
}
status() { sed -n "s/^@@ndst-vm end $1 exit=\(-\{0,1\}[0-9]*\) .*/\1/p" "$log" | head -n1; }
seconds() { sed -n "s/^@@ndst-vm end $1 exit=[-0-9]* seconds=\([0-9.]*\).*/\1/p" "$log" | head -n1; }

grep -E '^@@ndst-vm (host accel|guest|module)' "$log" | sed 's/^@@ndst-vm /vm: /'
s1=$(status 1) s2=$(status 2)
section 1 begin stderr | grep -E '^(calibration|closure|warning: the emulated)' || true
case "$s1" in
  0) ;;
  1) note "the guest's calibration does not close (calibrate exited 1); predicting from it anyway" ;;
  *) section 1 stderr kmsg >&2; note "the guest's calibrate exited ${s1:-without an end}; nothing predicted"; exit "${s1:-5}" ;;
esac
section 2 begin stderr
if [ "$s2" != 0 ]; then
  section 2 stderr kmsg >&2
  note "the guest's predict --workloads exited ${s2:-without an end}"
fi
wall=$(sed -n 's/^@@ndst-vm host wall_ms=\([0-9]*\).*/\1/p' "$log" | tail -n1)
note "guest calibrate $(seconds 1) s, predict $(seconds 2) s; qemu wall $(awk -v ms="${wall:-0}" 'BEGIN { printf "%.0f", ms / 1000 }') s, $(($(date +%s) - t0)) s in all"
exit "${s2:-5}"
