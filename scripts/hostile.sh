#!/usr/bin/env bash
# hostile.sh: the hostile suite alone, class by class: the tests that attack
# ndst's ownership of namespaces, its outputs, its interrupts, its bounds and
# its reports. CI runs them with every other test (`go test ./...` in
# .ci/run); this runs only them, in a few minutes.
#
# usage: scripts/hostile.sh [CLASS...]   (classes: identity home outputs
#                                          interrupts bounds reports; default all)
#
# As root the real-kernel ones run, each package's tests in a private mount
# namespace with a fresh /run (internal/sandboxtest), so they never see or
# touch the machine's /run/netns or /run/ndst; the scripts they drive run in
# a sandbox of their own (private mount and UTS namespaces). Unprivileged,
# those skip and say why. Where others use the real kernel too, run it under
# `flock /tmp/ndst-realkernel.lock`.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A tests=(
  [identity]="./ndst/nlbackend:TestOwnershipSurvivesInodeReuse|TestIdentityKinds|TestRecordFormat|TestRecordFailuresReported|TestRecordsOfAnotherRunNetns"
  [home]="./ndst/nlbackend:TestForeignHomeNamespaceRefused|TestResetKeepsForeignDevices|TestReset"
  [outputs]="./safefile:TestOutputNeverOnAPseudoFileSystem|TestOutputNeverThroughALink|TestOutputFailureKeepsTheOldFile|TestWriteKernelFile ./cmd/ndst:TestOutputsNeverFollowALink|TestOutputsNeverOnAPseudoFileSystem|TestOutputsOnAFullDisk|TestNoFileHangsOrIsOverwritten"
  [interrupts]="./ndst/nlbackend:TestLeftoversOfAKilledNdst ./cmd/ndst:TestInterruptedMeasurementsLeaveNothing|TestKillAnywhereThenOneReset|TestWorkloadsInterruptedThenOneReset"
  [bounds]="./ndst/nlbackend:TestNetnsMemoryBound|TestMemoryBoundUnderACgroup ./ndst/emu:TestNamespacesCountInTheMemoryGuard|TestEventBudget ./sysmem:TestCgroupV1|TestAvailableIsTheSmallestLimit ./cmd/ndst:TestBoundsRefused|TestSIGTERMEndsEveryLongCommand"
  [reports]="./ndst/nlbackend:TestInterruptedDeleteCountsWhatIsGone|TestInterruptedBatchDeleteIsTrue|TestConcurrentNetnsDelRescans|TestNetnsInterrupted|TestPodChurnInterruptedLeavesNoPod ./churn:TestInterruptedRunFails|TestCancel ./cmd/ndst:TestJSONErrorsNameTheirCommand|TestUnknownStateFlagsRefused|TestHostileNamesRefused|TestHugeCostsRefusedAndCountersBounded"
)
order=(identity home outputs interrupts bounds reports)
classes=("$@")
[ ${#classes[@]} -gt 0 ] || classes=("${order[@]}")
for c in "${classes[@]}"; do
  if [ -z "${tests[$c]:-}" ]; then
    echo "hostile.sh: unknown class $c (known: ${order[*]})" >&2
    exit 2
  fi
done
for c in "${classes[@]}"; do
  echo "== $c"
  for entry in ${tests[$c]}; do
    go test -count=1 -timeout 20m -run "^(${entry#*:})\$" "${entry%%:*}"
  done
done
echo "hostile.sh: ${classes[*]}: all passed"
