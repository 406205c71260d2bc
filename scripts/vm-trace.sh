#!/usr/bin/env bash
# vm-trace.sh: trace link deletes inside a stock Debian kernel booted under qemu
# (the VM rig), and explain them on the tick grid as scripts/trace-one-by-one.sh
# does for this host's own kernel.
#
# usage: scripts/vm-trace.sh [--cpus N] [--preempt MODE] [--mode one|batch] [-n N]
#          [--package NAME | --kernel FILE] [--append PARAMS] [--out DIR] [--timeout S]
#
# One boot (scripts/vm-run.sh --shell --trace-tools, under flock
# /tmp/ndst-vm.lock) runs guest-trace (scripts/guest-trace.sh) in the guest:
# it creates N dummy links (default 30 for --mode one, 1000 for batch), records
# the sched, timer, irq, IPI, RCU and sendmsg tracepoints the kernel has in
# tracefs (trace clock mono) while one process deletes them one by one
# (--mode one, one RTM_DELLINK sendmsg each) or all at once (--mode batch, one
# RTM_DELLINK for their interface group), and prints the trace.
# --append PARAMS boots the guest with kernel parameters added (vm-run.sh
# --append), to trace a boot-time lever. The host then
# writes DIR/NAME.log (the boot's whole output), DIR/NAME.trace (the trace),
# and DIR/NAME.txt (go run ./scripts/teardowntrace -hz HZ -cpus N: the tick
# delivery per CPU, the deletes on the tick grid, summaries per end jiffy), and
# prints the analysis's header and histograms. NAME is
# MODE-CPUS-PREEMPT-RELEASE (with --append, then the parameters, each
# character other than a letter, digit, dot or dash as _).
#
# Nothing is left behind but DIR (default /tmp/ndst-vm-trace-DATE-PID); the
# guest is gone when the script ends. Exit: 0 ok, 1 the boot or the analysis
# failed, 2 usage, 3 a host tool is missing (as scripts/vm-run.sh).
set -euo pipefail

prog=vm-trace
usage() {
	sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
here=$(cd "$(dirname "$0")/.." && pwd)
cpus=2
preempt=none
mode=one
n=""
kopt=()
app=()
out=""
timeout_s=900
while [[ $# -gt 0 ]]; do
	case "$1" in
	--cpus) [[ $# -ge 2 ]] || usage; cpus=$2; shift ;;
	--preempt) [[ $# -ge 2 ]] || usage; preempt=$2; shift ;;
	--mode) [[ $# -ge 2 ]] || usage; mode=$2; shift ;;
	-n) [[ $# -ge 2 ]] || usage; n=$2; shift ;;
	--package | --kernel) [[ $# -ge 2 ]] || usage; kopt=("$1" "$2"); shift ;;
	--append) [[ $# -ge 2 ]] || usage; app=(--append "$2"); shift ;;
	--out) [[ $# -ge 2 ]] || usage; out=$2; shift ;;
	--timeout) [[ $# -ge 2 ]] || usage; timeout_s=$2; shift ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument $1" >&2; usage ;;
	esac
	shift
done
case "$mode" in one) n=${n:-30} ;; batch) n=${n:-1000} ;; *) echo "$prog: --mode one or batch, not $mode" >&2; exit 2 ;; esac
[[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 10000 ]] || { echo "$prog: -n must be 1..10000, got $n" >&2; exit 2; }
[[ $cpus =~ ^[0-9]+$ && $cpus -ge 1 && $cpus -le 64 ]] || { echo "$prog: --cpus must be 1..64, got $cpus" >&2; exit 2; }
[[ $timeout_s =~ ^[0-9]+$ && $timeout_s -ge 30 ]] || { echo "$prog: --timeout must be at least 30 s" >&2; exit 2; }
command -v flock >/dev/null || { echo "$prog: flock not found (util-linux)" >&2; exit 3; }
command -v go >/dev/null || { echo "$prog: go not found" >&2; exit 3; }
out=${out:-/tmp/ndst-vm-trace-$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$out"

log=$out/run.log
set +e
flock /tmp/ndst-vm.lock "$here/scripts/vm-run.sh" --cpus "$cpus" --preempt "$preempt" "${kopt[@]}" "${app[@]}" \
	--shell --trace-tools --mem 1024 --timeout "$timeout_s" -- "guest-trace $mode $n" >"$log" 2>"$out/run.err"
rc=$?
set -e
if ((rc != 0)); then
	cat "$out/run.err" >&2
	echo "$prog: the boot failed (vm-run.sh exit $rc); its output is in $log" >&2
	exit $(( rc == 2 || rc == 3 ? rc : 1 ))
fi
host=$(grep -m1 '^@@ndst-vm host ' "$log" || true)
guest=$(grep -m1 '^@@ndst-vm guest ' "$log" || true)
release=$(sed -n 's/.* release=\([^ ]*\).*/\1/p' <<<"$guest")
hz=$(sed -n 's/.* hz=\([0-9]*\).*/\1/p' <<<"$host")
name=$mode-$cpus-$preempt-${release:-unknown}
((${#app[@]} == 0)) || name+=-$(tr -c 'A-Za-z0-9.\n-' _ <<<"${app[1]}")
mv "$log" "$out/$name.log"
log=$out/$name.log
sed -n '/^@@guest-trace begin$/,/^@@guest-trace end$/p' "$log" | sed '1d;$d' >"$out/$name.trace"
[[ -s $out/$name.trace ]] || { echo "$prog: the guest printed no trace ($log)" >&2; exit 1; }
expect=$n
[[ $mode == batch ]] && expect=1
(cd "$here" && go run ./scripts/teardowntrace -hz "${hz:-0}" -cpus "$cpus" -expect "$expect" -timelines 2 "$out/$name.trace") >"$out/$name.txt" 2>&1 || {
	cat "$out/$name.txt" >&2
	echo "$prog: the analysis failed ($out/$name.txt)" >&2
	exit 1
}
echo "# $host"
echo "# $guest"
grep '^@@guest-trace stats' "$log" | sed 's/^@@guest-trace /# ring buffer /'
sed -n '1,/^== per delete/p' "$out/$name.txt" | sed '$d'
echo "# full analysis: $out/$name.txt"
