#!/usr/bin/env bash
# Reproduce the October 2009 netdev experiment on the emulated kernel:
# add 1000 dummy devices, then delete ifindex 1..1000, on 1 CPU, no
# preemption, HZ=1000, kernel profile 2.6.31, once per wait strategy, and
# print the virtual time beside the published figures.
#
#   scripts/reproduce-2009.sh            the table
#   scripts/reproduce-2009.sh --sweep    the calibration evidence: del time under
#                                        'tick' for a range of unregister costs
#   scripts/reproduce-2009.sh --plot F   also draw the strategies with 'ndst bench --plot F'
#
# Published figures (netdev, 25 Oct 2009, Octavian Purdila; ppc750 @ 800 MHz,
# UP, non-preempt, HZ=1000, deleting 1000 down dummies): Ben's patch 3.42 s,
# schedule_timeout_uninterruptible(1) 3.00 s, synchronize_rcu_expedited never
# completes. Commit ef885afb: msleep(250) polling allowed ~4 devices/s.
set -euo pipefail
cd "$(dirname "$0")/.."

sweep=0 plot=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sweep) sweep=1 ;;
    --plot) plot="${2:?--plot needs a file}"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "reproduce-2009.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ndst" ./cmd/ndst
ndst() { "$work/ndst" --state "$work/state" "$@"; }
common=(--profile 2.6.31 --hz 1000 --cpus 1 --preempt none --seed 1)

field() { # field NAME JSON -> value of a top-level scalar
  sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" <<<"$2" | head -1
}

run_del() { # run_del STRATEGY [extra flags] -> prints the JSON of del
  rm -f "$work/state"
  ndst "${common[@]}" "${@:2}" add 1000 >/dev/null
  ndst "${common[@]}" "${@:2}" --strategy "$1" --json del 1 1000 || true
}

if [ "$sweep" = 1 ]; then
  echo "Calibration sweep: del 1 1000 under 'tick' (published: 3.00 s) for unregister costs"
  printf '%-14s %12s %12s\n' "unregister" "tick" "ben"
  for us in 500 1000 1500 1900 2000 2100 2300 2500 2700 2800 2900 3100; do
    ndst costs | sed "s/\"unregister\": [0-9]*/\"unregister\": ${us}000/" >"$work/costs.json"
    t=$(field virtual_ns "$(run_del tick --costs "$work/costs.json")")
    b=$(field virtual_ns "$(run_del ben --costs "$work/costs.json")")
    awk -v u="${us}µs" -v t="$t" -v b="$b" 'BEGIN{printf "%-14s %11.3fs %11.3fs\n", u, t/1e9, b/1e9}'
  done
  exit 0
fi

published() {
  case "$1" in
    msleep250) echo "~250 s (4 dev/s)" ;;
    tick) echo "3.00 s (fitted)" ;;
    ben) echo "3.42 s" ;;
    expedited) echo "never completes" ;;
    *) echo "-" ;;
  esac
}
published_s() { case "$1" in msleep250) echo 250 ;; ben) echo 3.42 ;; tick) echo 3.00 ;; *) echo "" ;; esac; }

echo "ndst: the 2009 experiment on the emulated kernel (profile 2.6.31, 1 CPU, preempt none, HZ=1000, seed 1)"
echo "add 1000, then del 1 1000; cost table: builtin (unregister fitted to the 'tick' figure only)"
echo
printf '| %-10s | %-14s | %-18s | %-10s | %-8s | %-7s | %-6s |\n' strategy "ndst (virtual)" "published" error result GPs sleeps
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ------------ ---------------- -------------------- ------------ ---------- --------- --------
for s in msleep250 tick ben expedited barrier backoff wake; do
  j=$(run_del "$s")
  v=$(field virtual_ns "$j"); r=$(field result "$j")
  gps=$(field grace_periods "$j"); sl=$(field sleeps "$j")
  secs=$(awk -v v="$v" 'BEGIN{printf "%.3f", v/1e9}')
  shown="${secs} s"
  [ "$r" = livelock ] && shown="livelock @ ${secs} s"
  p=$(published_s "$s"); err="-"
  if [ -n "$p" ] && [ "$r" = ok ]; then err=$(awk -v a="$secs" -v b="$p" 'BEGIN{printf "%+.0f%%", (a-b)/b*100}'); fi
  [ "$s" = expedited ] && [ "$r" = livelock ] && err="matches"
  printf '| %-10s | %-14s | %-18s | %-10s | %-8s | %-7s | %-6s |\n' "$s" "$shown" "$(published "$s")" "$err" "$r" "$gps" "$sl"
done
echo
echo "expedited: the watchdog's report, from 'ndst --strategy expedited del 1 1000':"
j=$(run_del expedited)
sed -n 's/.*"error":"\([^"]*\)".*/  \1/p' <<<"$j"

if [ -n "$plot" ]; then
  rm -f "$work/state"
  "$work/ndst" --state "$work/state" "${common[@]}" bench --strategy msleep250,tick,ben,barrier,backoff,wake --count 100,1000 --runs 1 --plot "$plot"
fi
