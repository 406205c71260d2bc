#!/usr/bin/env bash
# kmod-2009.sh: the 2009 experiment as the module's users typed it, in a
# busybox shell on the stock Debian kernel in the VM rig with the ndst kernel
# module loaded, then a held reference that makes del wait while the kernel
# prints its own "unregister_netdevice: waiting for ... to become free" lines.
#
# Usage: scripts/kmod-2009.sh [--cpus N] [--hold-ms MS] [--count N]
#   --cpus N      guest CPUs (default 1)
#   --count N     devices for the 2009 run (default 1000)
#   --hold-ms MS  how long the module holds the last device (default 21000:
#                 two of the kernel's warnings, one every
#                 net.core.netdev_unregister_timeout_secs = 10 s)
# Prints a transcript: each command after a "/proc/sys/net/ndst # " prompt,
# its output, and the kernel log lines it caused. Needs what
# scripts/vm-run.sh --module needs (scripts/ci-deps.sh installs it); exits
# with vm-run.sh's status.
set -euo pipefail
cd "$(dirname "$0")/.."

cpus=1 count=1000 hold=21000
while (($#)); do
	case $1 in
	--cpus | --count | --hold-ms)
		[[ $# -ge 2 && $2 =~ ^[1-9][0-9]{0,6}$ ]] || { echo "kmod-2009: $1 needs a positive integer" >&2; exit 2; }
		case $1 in --cpus) cpus=$2 ;; --count) count=$2 ;; --hold-ms) hold=$2 ;; esac
		shift 2
		;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "kmod-2009: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

# The guest's root namespace has only lo (ifindex 1) before the run, so the
# 2009 module's "add N" gets ifindexes 2..N+1 and "del 1 N" leaves the last.
last=$((count + 1))
steps=(
	"time echo $count > add"
	"cat add"
	"awk -v n=$((count / 10)) -v t=$count 'NR <= n { a += \$1 } NR > t - n { b += \$1 } END { printf \"first %d: %.2f ms/device, last %d: %.2f ms/device\\n\", n, a / n / 1e6, n, b / n / 1e6 }' samples"
	"time echo 1 $count > del"
	"cat del"
	"cat last"
	"cat devices"
	"echo $last $hold > hold"
	"cat hold"
	"time echo $last $last > del"
	"cat last"
	"echo 1 1000 > hold; echo \$?"
)
args=()
for s in "${steps[@]}"; do
	((${#args[@]} == 0)) || args+=(";;")
	args+=("cd /proc/sys/net/ndst && { $s; } 2>&1")
done
timeout=$((120 + count / 20 + hold / 1000))
set +e
bash scripts/vm-run.sh --module --shell --cpus "$cpus" --timeout "$timeout" -- "${args[@]}" | awk '
	/^@@ndst-vm host accel/ { sub(/^@@ndst-vm host /, ""); print "# host: " $0; next }
	/^@@ndst-vm guest /     { sub(/^@@ndst-vm guest /, ""); print "# guest: " $0; next }
	/^@@ndst-vm begin /     { sub(/^@@ndst-vm begin [0-9]+ cd \/proc\/sys\/net\/ndst && \{ /, ""); sub(/; \} 2>&1$/, ""); print "/proc/sys/net/ndst # " $0; k = 0; next }
	/^@@ndst-vm kmsg /      { k = 1; next }
	/^@@ndst-vm end /       { if ($4 != "exit=0") print "(exit " substr($4, 6) ")"; k = 0; next }
	/^@@ndst-vm /           { next }
	k                       { print "  kernel: " $0; next }
	                        { print }
'
rc=${PIPESTATUS[0]}
exit "$rc"
