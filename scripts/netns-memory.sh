#!/usr/bin/env bash
# netns-memory.sh: the kernel memory one network namespace costs on this
# host, as ndst's netns add bound measures it (ndst/nlbackend/memory_linux.go):
# the growth of SUnreclaim + Percpu + VmallocUsed in /proc/meminfo over N
# namespaces made by `ndst --backend netlink netns add N`, per namespace,
# beside what the kernel charged to this shell's memory cgroup (cgroup v2
# memory.current or v1 memory.usage_in_bytes), for lo alone, four links, and
# four links with lo up and a veth pair.
#
# usage: scripts/netns-memory.sh [-n N]   (default 300; needs root)
#
# It runs in a private mount namespace with its own /run, so the namespaces
# it makes never appear in the machine's /run/netns, and removes them before
# it ends. The figures are of the whole machine: run it when the machine is
# quiet (it prints the load average). Run it under
# `flock /tmp/ndst-realkernel.lock` where others use the real kernel too.
set -euo pipefail
n=300
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "netns-memory.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$n" in ''|*[!0-9]*) echo "netns-memory.sh: -n takes a number" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then echo "netns-memory.sh: needs root" >&2; exit 2; fi
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/ndst" ./cmd/ndst
unshare --mount --propagation private --fork bash -s "$bin/ndst" "$n" <<'INNER'
set -euo pipefail
ndst=$1 n=$2
mount -t tmpfs -o mode=0755,size=64m ndst-netns-memory /run
trap '"$ndst" --backend netlink reset >/dev/null 2>&1 || true' EXIT
kernel() { awk '/^(SUnreclaim|Percpu|VmallocUsed):/ {s += $2} END {print s * 1024}' /proc/meminfo; }
cg=""
if line=$(grep '^0::' /proc/self/cgroup) && [ -f "/sys/fs/cgroup${line#0::}/memory.current" ]; then
  cg="/sys/fs/cgroup${line#0::}/memory.current"
elif line=$(grep ':memory:' /proc/self/cgroup); then
  cg="/sys/fs/cgroup/memory${line##*:}/memory.usage_in_bytes"
fi
charged() { if [ -n "$cg" ] && [ -r "$cg" ]; then cat "$cg"; else echo 0; fi; }
echo "kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $n namespaces per row"
"$ndst" --backend netlink --kind ifb add 1 >/dev/null   # ndst's namespace, for the veth ends
printf '%-32s %14s %14s\n' "each namespace" "kernel/ns" "cgroup/ns"
for opt in "" "--links 4" "--links 4 --lo-up --veth"; do
  sync; sleep 1
  k0=$(kernel); c0=$(charged)
  "$ndst" --backend netlink --no-memory-check netns add "$n" $opt >/dev/null
  sleep 0.5
  k1=$(kernel); c1=$(charged)
  printf '%-32s %10d KiB %10d KiB\n' "lo${opt:+, $opt}" $(( (k1 - k0) / n / 1024 )) $(( (c1 - c0) / n / 1024 ))
  "$ndst" --backend netlink netns del 1 "$n" >/dev/null
done
INNER
