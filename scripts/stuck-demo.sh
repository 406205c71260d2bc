#!/usr/bin/env bash
# stuck-demo.sh: a delete stuck on a genuine held reference, on this host's
# kernel, as ndst reports it.
#
# usage: scripts/stuck-demo.sh [--timeout D] [--one-by-one]
#
# In a throwaway namespace: adds 3 ifb links, then deletes them while a
# packet socket's send holds a reference to the first (--hold
# socket@ifb0=forever), giving up after D (default 12s, past the kernel's
# first "waiting for ifb0 to become free" line at 10 s), with --attribute
# and -v: the phases, the kernel's own lines, and the verdict. ndst exits
# 1 (stuck); the hold goes with it, and the kernel then finishes the delete.
# Needs root; the namespace is removed on exit.
set -euo pipefail
giveup=12s
how=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--give-up | --timeout) giveup=$2; shift ;;
	--one-by-one) how=(--one-by-one) ;;
	*) echo "usage: $0 [--timeout D] [--one-by-one]" >&2; exit 2 ;;
	esac
	shift
done
if [[ $(id -u) -ne 0 ]]; then
	echo "stuck-demo: needs root; running as uid $(id -u)" >&2
	exit 1
fi
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
ns=ndst-stuck-$$
cleanup() {
	[[ -x $tmp/ndst ]] && "$tmp/ndst" --backend netlink --netns "$ns" reset >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/ndst" ./cmd/ndst
nd() { "$tmp/ndst" --backend netlink --netns "$ns" --kind ifb "$@"; }
nd add 3 >/dev/null
echo "\$ ndst --backend netlink --hold socket@ifb0=forever -v --timeout $giveup del 1 100 ${how[*]} --attribute"
rc=0
nd --hold socket@ifb0=forever -v --timeout "$giveup" del 1 100 "${how[@]}" --attribute || rc=$?
echo "(exit status $rc)"
