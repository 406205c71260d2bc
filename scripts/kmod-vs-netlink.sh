#!/usr/bin/env bash
# kmod-vs-netlink.sh: the in-kernel cost of add and del measured by the ndst
# kernel module (ktime inside the kernel) beside the netlink backend's wall
# time for the same work, on the stock Debian kernel in the VM rig (TCG
# unless the host has usable KVM), for 1 and 2 guest CPUs and N = 100, 1000.
#
# Usage: scripts/kmod-vs-netlink.sh [-cpus 1,2] [-n 100,1000] [-preempt none]
# Needs root, qemu, busybox-static, go, and the kernel's headers and compiler
# for the module (scripts/ci-deps.sh installs and fetches all of them).
# Prints a Markdown table. Exit 4 when the kernel or its headers cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./vmrig/kmodtable "$@"
