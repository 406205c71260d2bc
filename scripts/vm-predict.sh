#!/usr/bin/env bash
# vm-predict.sh: check the emulated kernel against a stock kernel in a VM.
#
#   scripts/vm-predict.sh [--cpus N] [--preempt none|full] [--count 100,1000] [--log FILE] [-- VM-RUN-OPTIONS...]
#
# Boots the guest once (scripts/vm-run.sh), calibrates ndst inside it
# ('ndst calibrate': membarrier grace periods, per-device CPU costs from
# small runs), then adds and deletes N real dummy devices, batched and one
# by one, for each N. Back on the host, 'ndst predict --from-guest' runs the
# emulated 6.18 profile with the guest's calibration, HZ, CPU count and
# preemption model and prints predicted against measured. The guest's
# deletes are never a calibration input.
set -euo pipefail
cd "$(dirname "$0")/.."

cpus=1 preempt=none counts=100,1000 log="" vmargs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus) cpus="${2:?--cpus needs a number}"; shift ;;
    --preempt) preempt="${2:?--preempt needs none or full}"; shift ;;
    --count) counts="${2:?--count needs a list}"; shift ;;
    --log) log="${2:?--log needs a file}"; shift ;;
    --) shift; vmargs=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "vm-predict.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$counts" in ''|*[!0-9,]*) echo "vm-predict.sh: --count wants numbers separated by commas" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$log" ] || log="$work/transcript"

cmds=(--json calibrate)
IFS=, read -ra ns <<<"$counts"
for n in "${ns[@]}"; do
  cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647)
  cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647 --one-by-one)
done

echo "vm-predict: booting the guest (${cpus} CPU(s), preempt=${preempt}); counts ${counts}" >&2
scripts/vm-run.sh --cpus "$cpus" --preempt "$preempt" --timeout 900 "${vmargs[@]}" -- "${cmds[@]}" >"$log"
go build -o "$work/ndst" ./cmd/ndst
"$work/ndst" predict --from-guest "$log"
