#!/usr/bin/env bash
# vm-predict.sh: check the emulated kernel against a stock kernel in a VM.
#
#   scripts/vm-predict.sh [--cpus N] [--preempt MODE] [--count 100,1000] [--timeout S]
#                         [--log FILE] [--json] [-- VM-RUN-OPTIONS...]
#
# Boots the guest once (scripts/vm-run.sh), calibrates ndst inside it
# ('ndst calibrate': membarrier grace periods, per-device CPU costs from
# small runs), then adds and deletes N real dummy devices, batched and one
# by one, for each N. Back on the host, 'ndst predict --from-guest' runs the
# emulated kernel of the guest's line (the one its calibration chose from its
# kernel release) with the guest's calibration, HZ, CPU count and preemption
# model, and prints predicted against measured (--json: ndst's JSON report).
# The guest's deletes are never a calibration input.
#
# --preempt is vm-run.sh's (none, voluntary, full, lazy, rt; default: the
# rig's), --timeout bounds the boot (default 300 s), --log keeps the guest's
# transcript. VM-RUN-OPTIONS pick the kernel: --package NAME or --kernel FILE.
# Exit status: vm-run.sh's when the boot fails, else ndst predict's.
set -euo pipefail
# Paths on the command line are the caller's; the rig and ndst are found
# from here.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

cpus=1 preempt="" counts=100,1000 timeout=300 log="" json=0 vmargs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus) cpus="${2:?--cpus needs a number}"; shift ;;
    --preempt) preempt="${2:?--preempt needs a model}"; shift ;;
    --count) counts="${2:?--count needs a list}"; shift ;;
    --timeout) timeout="${2:?--timeout needs seconds}"; shift ;;
    --log) log="${2:?--log needs a file}"; shift ;;
    --json) json=1 ;;
    --) shift; vmargs=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "vm-predict.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$counts" in ''|*[!0-9,]*|,*|*,|*,,*) echo "vm-predict.sh: --count wants numbers separated by commas" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'trap "" INT TERM HUP; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
[ -n "$log" ] || log="$work/transcript"

cmds=(--json calibrate)
IFS=, read -ra ns <<<"$counts"
for n in "${ns[@]}"; do
  cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647)
  cmds+=(';;' --json add "$n" ';;' --json del 1 2147483647 --one-by-one)
done

rigargs=(--cpus "$cpus" --timeout "$timeout")
[ -z "$preempt" ] || rigargs+=(--preempt "$preempt")
echo "vm-predict: booting the guest (${cpus} CPU(s), preempt=${preempt:-default}); counts ${counts}" >&2
bash "$repo/scripts/vm-run.sh" "${rigargs[@]}" "${vmargs[@]}" -- "${cmds[@]}" >"$log"
(cd "$repo" && go build -o "$work/ndst" ./cmd/ndst)
if [ "$json" = 1 ]; then
  "$work/ndst" --json predict --from-guest "$log"
else
  "$work/ndst" predict --from-guest "$log"
fi
