#!/usr/bin/env bash
# Reproduce the October 2009 netdev experiment on the emulated kernel: add
# 1000 down dummy devices, then delete ifindex 1..1000, on 1 CPU, no
# preemption, HZ=1000, once per wait strategy, for every plausible 2.6.31 and
# 2.6.32 configuration (Classic or Tree RCU), and print the virtual times
# beside the published figures, with which configuration they fit.
#
#   scripts/reproduce-2009.sh            the table per configuration, and the verdict
#   scripts/reproduce-2009.sh --sweep    the evidence for the one fitted cost: tick and
#                                        ben on 2.6.31 tree by unregister cost
#   scripts/reproduce-2009.sh --json     the table as JSON
#   scripts/reproduce-2009.sh --plot F   also draw the strategies per N on 2.6.32 tree
#
# Published figures (netdev, 25 Oct 2009, Octavian Purdila; ppc750 @ 800 MHz,
# UP, non-preempt, HZ=1000, deleting 1000 down dummies): Ben's patch 3.42 s,
# schedule_timeout_uninterruptible(1) 3.00 s, synchronize_rcu_expedited never
# completes. Commit ef885afb: msleep(250) polling allowed ~4 devices/s.
set -euo pipefail
cd "$(dirname "$0")/.."

args=() plot=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sweep) args+=(--sweep) ;;
    --json) args=(--json "${args[@]}") ;;
    --plot) plot="${2:?--plot needs a file}"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "reproduce-2009.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ndst" ./cmd/ndst
if [ ${#args[@]} -gt 0 ] && [ "${args[0]}" = --json ]; then
  "$work/ndst" --json reproduce-2009 "${args[@]:1}"
else
  "$work/ndst" reproduce-2009 "${args[@]}"
fi
if [ -n "$plot" ]; then
  "$work/ndst" --state "$work/state" --profile 2.6.32 --rcu tree --hz 1000 --cpus 1 --preempt none --seed 1 \
    bench --strategy msleep250,tick,ben,barrier,backoff,wake --count 100,1000 --runs 1 --plot "$plot"
fi
