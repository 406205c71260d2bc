#!/usr/bin/env bash
# kernel-baseline.sh: time device creation and teardown with iproute2, the
# outside reference for `ndst --backend netlink`.
#
# usage: scripts/kernel-baseline.sh [-k] [--kind dummy|ifb|veth] N
#
# In a throwaway network namespace (ndst-baseline-PID, removed on exit, also on
# error or Ctrl-C) it times, for N devices:
#   create        `ip -batch` with N "link add ... group G type KIND" lines
#   del-group     one `ip link del group G` (one RTM_DELLINK, one batch)
#   create again  (untimed setup)
#   del-one       `ip -batch` with N "link del NAME" lines: one RTM_DELLINK per
#                 device, i.e. a loop of `ip link del` without fork/exec
# Times are wall clock around each ip process (monotonic nanoseconds from
# date +%s%N), so they include one process start each.
#
# Kind: dummy by default; when the kernel has no dummy link type the script
# says so and uses ifb, unless --kind was given. veth creates N/2 pairs (N
# devices; N must be even), like ndst.
#
# Output: a readable table; with -k, key=value lines instead (for scripts):
#   kind=ifb n=1000 create_ns=... del_group_ns=... del_one_ns=... ip_overhead_ns=...
# ip_overhead_ns is the median wall time of `ip -n NS link show lo`: the cost
# of starting ip and entering the namespace, to compare with in-process timers.
#
# Exit: 0 ok, 1 a step failed, 2 usage error. Needs root.
set -euo pipefail

usage() { echo "usage: $0 [-k] [--kind dummy|ifb|veth] N   (N in 2..100000)" >&2; exit 2; }

keys=0
kind=""
explicit=0
n=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	-k) keys=1 ;;
	--kind) [[ $# -ge 2 ]] || usage; kind=$2; explicit=1; shift ;;
	--kind=*) kind=${1#--kind=}; explicit=1 ;;
	-h | --help) usage ;;
	-*) echo "kernel-baseline: unknown option $1" >&2; usage ;;
	*) [[ -z $n ]] || usage; n=$1 ;;
	esac
	shift
done
[[ $n =~ ^[1-9][0-9]*$ ]] && ((n >= 2 && n <= 100000)) || usage
case "${kind:-dummy}" in dummy | ifb | veth) ;; *) echo "kernel-baseline: unknown kind $kind" >&2; usage ;; esac
if [[ ${kind:-dummy} == veth ]] && ((n % 2)); then
	echo "kernel-baseline: veth devices come in pairs; N must be even, got $n" >&2
	exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "kernel-baseline: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid $(id -u)" >&2
	exit 1
fi
command -v ip >/dev/null || { echo "kernel-baseline: iproute2 (ip) not found" >&2; exit 1; }

ns=ndst-baseline-$$
group=4242
tmp=$(mktemp -d)
cleanup() {
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns"

if [[ -z $kind ]]; then
	kind=dummy
	if ! ip -n "$ns" link add ndstprobe0 type dummy 2>/dev/null; then
		echo "kernel-baseline: this kernel has no dummy link type; using ifb" >&2
		kind=ifb
	else
		ip -n "$ns" link del ndstprobe0
	fi
elif ((explicit)) && [[ $kind == dummy ]]; then
	if ! ip -n "$ns" link add ndstprobe0 type dummy 2>/dev/null; then
		echo "kernel-baseline: this kernel has no dummy link type (--kind dummy was given)" >&2
		exit 1
	fi
	ip -n "$ns" link del ndstprobe0
fi

now() { date +%s%N; }

# Batch files.
: >"$tmp/add" && : >"$tmp/del"
if [[ $kind == veth ]]; then
	for ((i = 0; i < n; i += 2)); do
		echo "link add name b$i group $group type veth peer name b$((i + 1)) group $group" >>"$tmp/add"
		echo "link del b$i" >>"$tmp/del"
	done
else
	for ((i = 0; i < n; i++)); do
		echo "link add name b$i group $group type $kind" >>"$tmp/add"
		echo "link del b$i" >>"$tmp/del"
	done
fi

count() { ip -n "$ns" -o link show group "$group" | wc -l; }

# Cost of starting ip and entering the namespace (median of 5).
ov=()
for _ in 1 2 3 4 5; do
	t0=$(now); ip -n "$ns" link show lo >/dev/null; t1=$(now)
	ov+=($((t1 - t0)))
done
overhead=$(printf '%s\n' "${ov[@]}" | sort -n | sed -n 3p)

t0=$(now); ip -n "$ns" -batch "$tmp/add"; t1=$(now)
create=$((t1 - t0))
[[ $(count) -eq $n ]] || { echo "kernel-baseline: created $(count) devices, want $n" >&2; exit 1; }

t0=$(now); ip -n "$ns" link del group "$group"; t1=$(now)
delgroup=$((t1 - t0))
[[ $(count) -eq 0 ]] || { echo "kernel-baseline: $(count) devices left after del group" >&2; exit 1; }

ip -n "$ns" -batch "$tmp/add"
t0=$(now); ip -n "$ns" -batch "$tmp/del"; t1=$(now)
delone=$((t1 - t0))
[[ $(count) -eq 0 ]] || { echo "kernel-baseline: $(count) devices left after one-by-one del" >&2; exit 1; }

if ((keys)); then
	echo "kind=$kind n=$n create_ns=$create del_group_ns=$delgroup del_one_ns=$delone ip_overhead_ns=$overhead"
	exit 0
fi
ms() { awk -v x="$1" 'BEGIN { printf "%.1f ms", x / 1e6 }'; }
per() { awk -v x="$1" -v n="$n" 'BEGIN { printf "%.3f ms/dev", x / 1e6 / n }'; }
printf 'iproute2 baseline: %d %s devices, namespace %s\n' "$n" "$kind" "$ns"
printf '  %-36s %12s  %s\n' "create (ip -batch)" "$(ms "$create")" "$(per "$create")"
printf '  %-36s %12s  %s\n' "delete batched (ip link del group)" "$(ms "$delgroup")" "$(per "$delgroup")"
printf '  %-36s %12s  %s\n' "delete one by one (ip -batch del)" "$(ms "$delone")" "$(per "$delone")"
awk -v a="$delone" -v b="$delgroup" 'BEGIN { printf "  one-by-one / batched: %.0fx\n", a / b }'
printf '  (each time includes one ip start + namespace entry: about %s)\n' "$(ms "$overhead")"
