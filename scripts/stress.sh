#!/usr/bin/env bash
# Long randomized run of the emulated kernel's invariants (issue: hardening).
# Each scenario: a random machine (HZ, CPUs, preemption), profile and
# strategy, then random add/del/list steps checked against a model after each
# step, then replayed from scratch for identical results. CI runs 40.
#   scripts/stress.sh [SCENARIOS]   (default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-5000}"
case "$n" in ''|*[!0-9]*) echo "stress.sh: SCENARIOS must be a positive number" >&2; exit 2 ;; esac
NDST_STRESS="$n" go test ./ndst/emu -run '^TestStress$' -count=1 -timeout 60m -v | tail -3
go test ./rcu -run Guarantee -count=1 -rapid.checks=$((n * 2)) | tail -1
