#!/usr/bin/env bash
# vm-run.sh: run ndst commands inside a stock Debian kernel booted under qemu.
#
# Usage:
#   scripts/vm-run.sh [options] -- NDST-ARGS... [';;' NDST-ARGS...]
#   scripts/vm-run.sh --fetch-only [--module] [--kernel DEB-or-vmlinuz | --package NAME]
#
# Options:
#   --cpus N            guest CPUs (1..64, default 1; 1 is a true uniprocessor guest)
#   --preempt MODE      the preemption model to boot: none, voluntary, full or lazy (a
#                       PREEMPT_DYNAMIC kernel's preempt= on the command line), or rt; a
#                       mode the kernel's config cannot boot is a usage error. Default:
#                       none when the kernel takes preempt=, else the model it is built with
#   --kernel FILE       a kernel image package (.deb) or a vmlinuz
#   --package NAME      a kernel image package in Debian's registry, or a metapackage that
#                       depends on one (linux-image-rt-amd64 -> linux-image-6.1.0-57-rt-amd64);
#                       default linux-image-amd64 (apt-get download + dpkg-deb, never installed).
#                       A split image (sid's 7.x: the image package holds no vmlinuz) is
#                       fetched with the linux-binary-*, linux-modules-* and linux-base-*
#                       packages it depends on (vmlinuz, modules, config), unpacked together
#   --suite SUITE       take --package from this Debian suite (bullseye, bookworm, trixie,
#                       sid, ...) through a package list of the rig's own in the cache
#                       (apt-get update into it, at most once a day; the host's apt
#                       configuration is not touched); default: the host's own lists
#   --timeout S         seconds the whole boot may take (default 300)
#   --mem MB            guest memory (default 512)
#   --append PARAMS     add kernel boot parameters to the guest's command line, e.g.
#                       'rcu_nocbs=all rcupdate.rcu_normal_after_boot=0' (repeatable; words
#                       of letters, digits and _ . - with an optional =VALUE of letters,
#                       digits and _ . , : + -; at most 32 words, 1024 bytes in all). The
#                       rig's own parameters cannot be overridden: console=, earlycon=,
#                       earlyprintk=, init=, rdinit=, root=, panic= are refused, and
#                       preempt= is --preempt's. The guest prints the command line it
#                       booted with (@@ndst-vm cmdline ...)
#   --guest-bin FILE    run this static program instead of ndst (no --backend flag added)
#   --shell             run each command as a busybox shell command line (sh -c), with
#                       ndst on the PATH, e.g. -- 'echo 1000 > /proc/sys/net/ndst/add'
#   --trace-tools       also put a static teardowntrace (scripts/teardowntrace) and
#                       guest-trace (scripts/guest-trace.sh) on the guest's PATH, for
#                       tracing in the guest (scripts/vm-trace.sh); tracefs is mounted at
#                       /sys/kernel/tracing in every guest
#   --module            build the ndst kernel module (kmod/) against the kernel's own
#                       headers (Debian's linux-headers and linux-kbuild packages, fetched
#                       like the kernel into the cache, never installed), pack it and load
#                       it after dummy.ko: /proc/sys/net/ndst appears in the guest
#   --headers DIR       a kernel build tree for --module (default: the Debian headers of
#                       the kernel package; needed for a bare vmlinuz)
#   --dmesg             print the guest's whole kernel log at the end of the run
#   --console           copy the guest console (kernel messages) to stderr as it runs
#   --keep              keep the work folder (initramfs, console log) and print its path
#   --fetch-only        only fetch/unpack the kernel into the cache (with --module: the
#                       headers too, and build the module); print what was found, with
#                       the preemption models the kernel boots (preempt_models=) and the
#                       one it boots without preempt= (preempt_boot=), and veth.ko
#                       (veth=PATH, veth=builtin, or veth=none and veth_why=REASON)
#
# The guest is a minimal initramfs: busybox (static), dummy.ko, veth.ko when the
# kernel has it as a module, a static ndst built from this repo (CGO_ENABLED=0
# ./cmd/ndst) and an /init that loads dummy.ko, veth.ko (and ndst.ko with
# --module), runs each command as "ndst --backend netlink ARGS..." (a later
# --backend in ARGS wins, e.g. --backend module) and powers off. veth is optional:
# a kernel with CONFIG_VETH=y needs no module, and a kernel with neither boots
# without veth pairs (the module line and a note on stderr say why). Kernels,
# headers and built modules are cached in
# ${NDST_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ndst/vm}; a kernel cached by an
# older rig, without veth.ko, is completed from its package (fetched again).
#
# Output (stdout) is line-based; every line the rig adds starts with "@@ndst-vm ":
#   @@ndst-vm host accel=tcg cpus=1 preempt=none release=6.1.0-57-amd64 hz=250 load1=0.12 kernel=...
#   @@ndst-vm module dummy loaded
#   @@ndst-vm module veth loaded                     (or: veth built in; veth absent: REASON)
#   @@ndst-vm module ndst loaded                     (with --module)
#   @@ndst-vm guest release=6.1.0-57-amd64 cpus=1 preempt=none uptime=2.14
#                       (preempt: /sys/kernel/debug/sched/preempt, else rt from
#                       /sys/kernel/realtime or uname -v, else unknown)
#   @@ndst-vm cmdline console=ttyS0 quiet panic=-1 ...   (the guest's /proc/cmdline)
#   @@ndst-vm begin 1 add 100
#   ...the command's stdout, verbatim...
#   @@ndst-vm stderr 1
#   ...the command's stderr, verbatim...
#   @@ndst-vm kmsg 1
#   ...the kernel log lines printed while the command ran (dmesg format)...
#   @@ndst-vm end 1 exit=0 seconds=0.31
#   @@ndst-vm dmesg                                  (with --dmesg)
#   ...the guest's whole kernel log...
#   @@ndst-vm done
#   @@ndst-vm host wall_ms=8123 load1_end=0.95
# The guest's kernel console is kept apart (a second serial port carries the output).
#
# Exit status: 0 every command exited 0; 1 a command exited non-zero; 2 usage error;
# 3 the host lacks a tool (qemu, busybox-static, go; with --module make and the
# kernel's compiler); 4 no usable kernel (registry unreachable, no dummy.ko, dummy.ko
# does not load; with --module: no headers for the kernel, or ndst.ko does not build
# or load); 5 the guest did not finish (did not power off in time, panicked) or the
# guest program could not be built.
# Nothing is left running on any exit path.
#
# Environment: NDST_QEMU (qemu binary), NDST_BUSYBOX (static busybox),
# NDST_VM_ACCEL (kvm or tcg, overrides the detection), NDST_VM_CACHE (cache folder).
set -euo pipefail

readonly EXIT_CMD=1 EXIT_USAGE=2 EXIT_HOST=3 EXIT_KERNEL=4 EXIT_GUEST=5

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
	local code=$1
	shift
	echo "vm-run: $*" >&2
	exit "$code"
}
note() { echo "vm-run: $*" >&2; }
usage_die() { die $EXIT_USAGE "$*  (see: $0 --help)"; }

cpus=1
preempt=""
kernel=""
package=""
timeout_s=300
suite=""
mem=512
guest_bin=""
append=""
shell=0
trace_tools=0
module=0
headers=""
dmesg=0
console=0
keep=0
fetch_only=0

need_val() { [[ $# -ge 2 ]] || usage_die "$1 needs a value"; }

while (($#)); do
	case $1 in
	--cpus | --preempt | --kernel | --package | --timeout | --mem | --guest-bin | --headers | --append | --suite)
		need_val "$@"
		v=$2
		case $1 in
		--append) append+=" $v" ;;
		--cpus) cpus=$v ;;
		--preempt) preempt=$v ;;
		--kernel) kernel=$v ;;
		--package) package=$v ;;
		--suite) suite=$v ;;
		--timeout) timeout_s=$v ;;
		--mem) mem=$v ;;
		--guest-bin) guest_bin=$v ;;
		--headers) headers=$v ;;
		esac
		shift 2
		;;
	--cpus=* | --preempt=* | --kernel=* | --package=* | --timeout=* | --mem=* | --guest-bin=* | --headers=* | --append=* | --suite=*)
		set -- "${1%%=*}" "${1#*=}" "${@:2}"
		;;
	--shell) shell=1 && shift ;;
	--trace-tools) trace_tools=1 && shift ;;
	--module) module=1 && shift ;;
	--dmesg) dmesg=1 && shift ;;
	--console) console=1 && shift ;;
	--keep) keep=1 && shift ;;
	--fetch-only) fetch_only=1 && shift ;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	--)
		shift
		break
		;;
	*) usage_die "unknown option '$1' (ndst's arguments go after --)" ;;
	esac
done

# Strict decimal integer in [lo, hi].
is_int_in() { [[ $1 =~ ^[1-9][0-9]{0,5}$ ]] && (($1 >= $2 && $1 <= $3)); }

is_int_in "$cpus" 1 64 || usage_die "--cpus '$cpus': want an integer from 1 to 64"
case $preempt in "" | none | voluntary | full | lazy | rt) ;; *) usage_die "--preempt '$preempt': want none, voluntary, full, lazy or rt" ;; esac
is_int_in "$timeout_s" 1 86400 || usage_die "--timeout '$timeout_s': want whole seconds from 1 to 86400"
is_int_in "$mem" 128 65536 || usage_die "--mem '$mem': want MB from 128 to 65536"
if [[ -n $kernel && ! -f $kernel ]]; then
	usage_die "--kernel '$kernel': no such file"
fi
if [[ -n $package ]]; then
	[[ -z $kernel ]] || usage_die "--kernel and --package exclude each other"
	[[ $package =~ ^linux-image-[a-z0-9][a-z0-9.+-]*$ ]] || usage_die "--package '$package': want a Debian kernel image package name (linux-image-...)"
fi
if [[ -n $guest_bin && ! -f $guest_bin ]]; then
	usage_die "--guest-bin '$guest_bin': no such file"
fi
if [[ -n $guest_bin ]] && ((shell)); then
	usage_die "--shell and --guest-bin exclude each other"
fi
if [[ -n $headers ]]; then
	((module)) || usage_die "--headers is for --module"
	[[ -f $headers/Makefile ]] || usage_die "--headers '$headers': not a kernel build tree (no Makefile)"
fi

# --append: kernel parameters as words of a fixed alphabet (nothing a shell,
# qemu's -append or the kernel's parser would take specially), none of the
# rig's own, within a bound that leaves the kernel's 2048-byte command line
# room for the rig's.
append_arg=""
if [[ ! $append =~ ^[A-Za-z0-9_.,:+=\ -]*$ ]]; then
	usage_die "--append: only letters, digits, spaces and _ . , : + = - can be passed (no quotes, tabs, newlines or shell metacharacters)"
elif [[ -n ${append// /} ]]; then
	read -ra words <<<"$append"
	((${#words[@]} <= 32)) || usage_die "--append: ${#words[@]} parameters; at most 32"
	for w in "${words[@]}"; do
		[[ $w =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*(=[A-Za-z0-9_.,:+-]+)?$ ]] ||
			usage_die "--append: '$w' is not a kernel parameter ndst passes (want NAME or NAME=VALUE: letters, digits and _ . - in NAME, also , : + in VALUE)"
		case ${w%%=*} in
		console | earlycon | earlyprintk | init | rdinit | root | panic)
			usage_die "--append: '$w' would override the rig's own ${w%%=*}= (it needs its console, init and panic settings)" ;;
		preempt) usage_die "--append: '$w': give the preemption model with --preempt" ;;
		esac
		append_arg+=" $w"
	done
	((${#append_arg} <= 1024)) || usage_die "--append: ${#append_arg} bytes of parameters; at most 1024"
elif [[ -n $append ]]; then
	usage_die "--append: empty (want kernel parameters, e.g. rcu_nocbs=all)"
fi

# Split the commands on ';;'.
cmds=() # each entry: the shell-quoted words of one command
cur=""
raw="" # with --shell: the words joined by spaces, one shell command line
ncur=0
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
end_cmd() {
	((ncur)) || usage_die "empty command around ';;'"
	if ((shell)); then
		cmds+=(" $(shq "${raw# }")")
	else
		cmds+=("$cur")
	fi
	cur=""
	raw=""
	ncur=0
}
for a in "$@"; do
	if [[ $a == ";;" ]]; then
		end_cmd
		continue
	fi
	[[ $a != *$'\n'* ]] || usage_die "an argument contains a newline"
	cur+=" $(shq "$a")"
	raw+=" $a"
	ncur=$((ncur + 1))
done
if ((fetch_only)); then
	((${#cmds[@]} == 0 && ncur == 0)) || usage_die "--fetch-only takes no command"
else
	((ncur)) || usage_die "no command given: put ndst's arguments after --, e.g. -- add 100 ';;' list"
	end_cmd
fi

cache=${NDST_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/ndst/vm}

# ---------------------------------------------------------------- cleanup

work=""
tmpdirs=() # scratch folders in the cache, removed on exit
qpid=""
tailpid=""
child="" # a long helper (apt-get download, go build) in its own process group
cleanup() {
	local rc=$?
	# A second signal (a stop often comes to a whole process group, twice
	# through timeout(1)) must not cut the cleanup short.
	trap - EXIT
	trap '' INT TERM HUP
	# A job started just before the signal may not be recorded yet: stop
	# every background job of this shell (each in its own process group
	# when setsid or timeout(1) made one).
	local j
	for j in $(jobs -p); do
		kill -TERM -- "-$j" 2>/dev/null || kill -TERM "$j" 2>/dev/null || true
	done
	if [[ -n $child ]]; then
		kill -TERM -- "-$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	if [[ -n $qpid ]] && kill -0 "$qpid" 2>/dev/null; then
		kill -TERM "$qpid" 2>/dev/null || true
	fi
	if [[ -n $work && -s $work/qemu.pid ]]; then
		local p
		p=$(cat "$work/qemu.pid" 2>/dev/null || true)
		if [[ $p =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null || true
			sleep 0.5
			kill -KILL "$p" 2>/dev/null || true
		fi
	fi
	if [[ -n $qpid ]]; then
		wait "$qpid" 2>/dev/null || true
	fi
	if [[ -n $tailpid ]]; then
		kill "$tailpid" 2>/dev/null || true
		wait "$tailpid" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	local t
	for t in "${tmpdirs[@]}"; do
		rm -rf "$t"
	done
	if [[ -n $work && -d $work ]]; then
		if ((keep)); then
			note "work folder kept: $work"
		else
			rm -rf "$work"
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'trap "" INT TERM HUP; note "interrupted (SIGINT); stopping"; exit 130' INT
trap 'trap "" INT TERM HUP; note "stopped by SIGTERM"; exit 143' TERM
trap 'trap "" INT TERM HUP; note "stopped by SIGHUP"; exit 129' HUP

# run_child LOG DIR CMD...: run CMD in DIR in its own process group, output to
# LOG, and wait for it; cleanup stops the whole group if the script is stopped.
run_child() {
	local log=$1 dir=$2 rc=0
	shift 2
	setsid sh -c 'cd "$0" && exec "$@"' "$dir" "$@" </dev/null >"$log" 2>&1 &
	child=$!
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

# ---------------------------------------------------------------- host tools

qemu=${NDST_QEMU:-qemu-system-x86_64}
busybox=${NDST_BUSYBOX:-/bin/busybox}

is_static() {
	# A dynamically linked ELF carries its interpreter's path (PT_INTERP).
	if command -v readelf >/dev/null 2>&1; then
		! readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'
	else
		! grep -aq '/ld-linux' "$1"
	fi
}

check_host() {
	command -v "$qemu" >/dev/null 2>&1 ||
		die $EXIT_HOST "qemu not found ('$qemu'): install qemu-system-x86 (scripts/ci-deps.sh does)"
	[[ -x $busybox ]] ||
		die $EXIT_HOST "busybox not found at $busybox: install busybox-static (scripts/ci-deps.sh does)"
	is_static "$busybox" ||
		die $EXIT_HOST "$busybox is dynamically linked: install busybox-static (the guest has no libc)"
	if [[ -n $guest_bin ]]; then
		is_static "$guest_bin" || die $EXIT_HOST "--guest-bin $guest_bin is dynamically linked: the guest has no libc"
	else
		command -v go >/dev/null 2>&1 || die $EXIT_HOST "go not found: needed to build the guest's static ndst"
	fi
	command -v flock >/dev/null 2>&1 || die $EXIT_HOST "flock not found (util-linux)"
	command -v setsid >/dev/null 2>&1 || die $EXIT_HOST "setsid not found (util-linux)"
}

# ---------------------------------------------------------------- kernels

# mk_tmp VAR: make a scratch folder in the cache, removed on any exit.
mk_tmp() {
	local d
	d=$(mktemp -d "$cache/tmp.XXXXXX")
	tmpdirs+=("$d")
	printf -v "$1" '%s' "$d"
}

# bzimage_release FILE: the kernel release from a bzImage's setup header.
bzimage_release() {
	local f=$1 magic off
	magic=$(dd if="$f" bs=1 skip=514 count=4 2>/dev/null || true)
	[[ $magic == HdrS ]] || return 1
	off=$(od -An -tu2 -j526 -N2 "$f" | tr -d ' ') || true
	[[ $off =~ ^[0-9]+$ ]] || return 1
	dd if="$f" bs=1 skip=$((off + 512)) count=128 2>/dev/null | tr '\0' '\n' | head -n1 | cut -d' ' -f1
}

# builtin_config CONFIG SYMBOL: whether the kernel config has CONFIG_SYMBOL=y.
builtin_config() { [[ -f $1 ]] && grep -qx "CONFIG_$2=y" "$1"; }

# builtin_dummy CONFIG: whether the kernel config has the dummy driver built in.
builtin_dummy() { builtin_config "$1" DUMMY; }

# The drivers the rig stages beside dummy.ko when the kernel has them as
# modules (veth: the namespace benchmarks' veth pairs; a kernel may build it
# in, or lack it, and then the guest says so). A cached kernel folder lists
# in its file 'staged' the modules its unpack looked for; a folder staged
# before a module joined this list lacks the module and is completed from
# the package (staged_complete, unpack_deb).
readonly OPT_MODULES="veth"

# The link types of the VLAN and macvlan workloads, in the order they load
# (8021q needs garp and mrp, garp needs stp and llc), staged and loaded when
# the kernel has them as modules; a guest without them says so in a module
# line, and the workloads that need them are refused there.
readonly LINK_MODULES="llc stp garp mrp 8021q macvlan"

# staged_complete DIR: whether the cached kernel folder DIR was staged with
# every module the rig looks for.
staged_complete() {
	local m
	[[ -f $1/release && -f $1/staged ]] || return 1
	for m in dummy $OPT_MODULES $LINK_MODULES; do
		grep -qw "$m" "$1/staged" || return 1
	done
}

# install_module SRC DEST: copy a module (dummy.ko, veth.ko), decompressing .xz/.zst/.gz.
install_module() {
	case $1 in
	*.ko) cp "$1" "$2" ;;
	*.ko.xz) xz -dc "$1" >"$2" ;;
	*.ko.zst) zstd -qdc "$1" >"$2" ;;
	*.ko.gz) gzip -dc "$1" >"$2" ;;
	*) return 1 ;;
	esac
}

# unpack_deb DEB DEST: put vmlinuz, config, dummy.ko, the optional modules
# the kernel has (veth.ko) and release into DEST. A DEST staged before (by an
# older rig: no 'staged' list, or a shorter one) only gets the files it
# lacks, each moved in whole, so that a rig booting its vmlinuz meanwhile
# is not disturbed.
unpack_deb() { unpack_debs "$2" "$1"; }

# unpack_debs DEST DEB...: the packages of one kernel (an image, or a split
# image with its linux-binary and linux-modules packages), unpacked together.
unpack_debs() {
	local dest=$1 x rel vmlinuz cfg mod m deb
	shift
	mk_tmp x
	# Only the files the rig needs; a full dpkg -x writes ~400 MB.
	# Split images (7.x) keep vmlinuz and config under usr/lib/modules/RELEASE.
	local pats=('./boot/vmlinuz-*' './boot/config-*' './usr/lib/modules/*/vmlinuz' './usr/lib/modules/*/config'
		'*/drivers/net/dummy.ko*')
	for m in $OPT_MODULES; do
		pats+=("*/drivers/net/$m.ko*")
	done
	pats+=('*/net/llc/llc.ko*' '*/net/802/stp.ko*' '*/net/802/garp.ko*' '*/net/802/mrp.ko*' '*/net/8021q/8021q.ko*' '*/drivers/net/macvlan.ko*')
	for deb in "$@"; do
		dpkg-deb --info "$deb" >/dev/null 2>&1 || {
			rm -rf "$x"
			die $EXIT_KERNEL "$deb is not a Debian package"
		}
		set +o pipefail
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" --wildcards "${pats[@]}" 2>/dev/null || true
		set -o pipefail
	done
	deb="$*"
	vmlinuz=$(find "$x/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -n1) || true
	if [[ -n $vmlinuz ]]; then
		rel=${vmlinuz##*/vmlinuz-}
		cfg=$(find "$x/boot" -maxdepth 1 -name "config-$rel" 2>/dev/null | head -n1) || true
	else
		vmlinuz=$(find "$x/usr/lib/modules" -mindepth 2 -maxdepth 2 -name vmlinuz 2>/dev/null | head -n1) || true
		if [[ -z $vmlinuz ]]; then
			rm -rf "$x"
			die $EXIT_KERNEL "$deb holds no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz: not a kernel image package"
		fi
		rel=${vmlinuz%/vmlinuz}
		rel=${rel##*/}
		cfg=$(find "$x/usr/lib/modules/$rel" -maxdepth 1 -name config 2>/dev/null | head -n1) || true
	fi
	mod=$(find "$x" -path "*/modules/$rel/*" -name 'dummy.ko*' 2>/dev/null | head -n1) || true
	local stage
	mk_tmp stage
	chmod 755 "$stage"
	mv "$vmlinuz" "$stage/vmlinuz"
	[[ -z $cfg ]] || mv "$cfg" "$stage/config"
	if [[ -n $mod ]]; then
		install_module "$mod" "$stage/dummy.ko"
	elif ! builtin_dummy "$stage/config"; then
		rm -rf "$x" "$stage"
		die $EXIT_KERNEL "kernel $rel in $deb has no dummy.ko (and no CONFIG_DUMMY=y): it cannot make dummy links"
	fi
	for m in $OPT_MODULES $LINK_MODULES; do
		mod=$(find "$x" -path "*/modules/$rel/*" -name "$m.ko*" 2>/dev/null | head -n1) || true
		if [[ -n $mod ]] && ! install_module "$mod" "$stage/$m.ko"; then
			rm -rf "$x" "$stage"
			die $EXIT_KERNEL "cannot unpack $m.ko from $deb"
		fi
	done
	echo "$rel" >"$stage/release"
	echo "$deb" >"$stage/source"
	echo "dummy $OPT_MODULES $LINK_MODULES" >"$stage/staged"
	rm -rf "$x"
	if [[ -f $dest/release && $(cat "$dest/release") == "$rel" ]]; then
		local f
		for f in "$stage"/*.ko; do
			[[ ! -f $f || -e $dest/${f##*/} ]] || mv "$f" "$dest/"
		done
		mv "$stage/staged" "$dest/staged"
		rm -rf "$stage"
		return
	fi
	rm -rf "$dest"
	mv "$stage" "$dest"
}

# Sets k_dir (folder with vmlinuz, release, maybe dummy.ko and config) or
# k_vmlinuz/k_module/k_release for a bare vmlinuz. k_pkg/k_ver name the Debian
# kernel package when there is one (for its headers). k_veth is veth.ko (""
# when the kernel has none; see veth_state); k_stale says why a cached
# folder staged before veth.ko was could not be completed.
k_vmlinuz="" k_module="" k_release="" k_config="" k_source="" k_pkg="" k_ver="" k_veth="" k_stale="" k_linkmods=""

kernel_from_dir() {
	k_vmlinuz=$1/vmlinuz
	k_release=$(cat "$1/release")
	k_source=$(cat "$1/source" 2>/dev/null || echo "$1")
	k_module=""
	[[ ! -f $1/dummy.ko ]] || k_module=$1/dummy.ko
	k_veth=""
	[[ ! -f $1/veth.ko ]] || k_veth=$1/veth.ko
	k_linkmods=""
	local lm
	for lm in $LINK_MODULES; do
		[[ ! -f $1/$lm.ko ]] || k_linkmods+="$1/$lm.ko "
	done
	k_config=""
	[[ ! -f $1/config ]] || k_config=$1/config
}

# veth_state: what the guest has for veth pairs: "module" (k_veth is
# loaded), "builtin" (CONFIG_VETH=y), or "none" with the reason in
# k_veth_why.
k_veth_state="" k_veth_why=""
veth_state() {
	k_veth_why=""
	if [[ -n $k_veth ]]; then
		k_veth_state=module
	elif builtin_config "$k_config" VETH; then
		k_veth_state=builtin
	else
		k_veth_state=none
		if [[ -n $k_stale ]]; then
			k_veth_why="the cached kernel folder was staged without veth.ko and could not be completed ($k_stale)"
		elif [[ -z $k_config ]]; then
			k_veth_why="kernel $k_release has no veth.ko beside it and no config to say whether CONFIG_VETH=y"
		else
			k_veth_why="kernel $k_release has no veth.ko and its config has no CONFIG_VETH=y"
		fi
	fi
}

# apt_download DIR PKG=VER...: apt-get download into DIR (bounded, as root
# without apt's sandbox user); on failure print apt's first error line.
# aptc / aptg: apt-cache and apt-get, on the suite's own lists with --suite.
apt_opts=()
aptc() { apt-cache "${apt_opts[@]}" "$@"; }
apt_suite_setup() {
	[[ -n $suite ]] || return 0
	[[ $suite =~ ^[a-z][a-z0-9-]{1,30}$ ]] || die $EXIT_USAGE "--suite: not a Debian suite name: $suite"
	local d=$cache/apt/$suite
	mkdir -p "$d/lists/partial" "$d/archives/partial"
	{
		echo "deb http://deb.debian.org/debian $suite main"
		[[ $suite == bullseye || $suite == bookworm || $suite == trixie ]] && echo "deb http://deb.debian.org/debian-security $suite-security main"
	} >"$d/sources.list"
	apt_opts=(-o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d" -o "Dir::Cache::archives=$d/archives"
		-o Debug::NoLocking=1)
	[[ $(id -u) -ne 0 ]] || apt_opts+=(-o APT::Sandbox::User=root)
	if [[ -z $(find "$d/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -n1) ]]; then
		note "updating the rig's package list for $suite ($d)"
		if ! run_child "$d/update.log" "$d" timeout 600 apt-get "${apt_opts[@]}" -q update; then
			die $EXIT_KERNEL "cannot update the package list of suite $suite: $(grep -E '^(E|W):' "$d/update.log" | head -n1)"
		fi
	fi
}

apt_download() {
	local dir=$1 why
	shift
	note "downloading $* from Debian's registry into $cache"
	local aopts=(-q -o Acquire::Retries=1 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20)
	[[ $(id -u) -ne 0 ]] || aopts+=(-o APT::Sandbox::User=root)
	if ! run_child "$dir/apt.log" "$dir" timeout 600 apt-get "${apt_opts[@]}" "${aopts[@]}" download "$@"; then
		why=$(grep -E '^E:' "$dir/apt.log" | head -n1 | sed 's/^E: //; s/  */ /g') || true
		echo "${why:-apt-get download failed}"
		return 1
	fi
}

# cached_flavour NAME: the newest cached kernel folder of NAME's flavour
# (linux-image-amd64 -> linux-image-RELEASE-amd64_VERSION, linux-image-rt-amd64
# -> linux-image-RELEASE-rt-amd64_VERSION); a versioned NAME matches itself.
cached_flavour() {
	local name=$1 flav pat
	if [[ $name =~ ^linux-image-[0-9] ]]; then
		pat="${name}_*"
	else
		flav=${name#linux-image-}
		pat="linux-image-[0-9]*-${flav}_*"
	fi
	find "$cache/kernels" -mindepth 1 -maxdepth 1 -type d -name "$pat" 2>/dev/null |
		while read -r d; do
			# linux-image-6.1.0-57-amd64 must not match the rt flavour's pattern, and
			# the other way round: the part before the flavour is the release number.
			local b=${d##*/}
			b=${b%%_*}
			b=${b#linux-image-}
			[[ -n ${flav:-} ]] && { [[ ${b%-"$flav"} =~ ^[0-9][0-9.]*-[0-9]+$ ]] || continue; }
			echo "$d"
		done | sort -V | tail -n1
}

fetch_registry() {
	local name=${package:-linux-image-amd64} pkg ver key dir tmp log
	# A metapackage names the versioned kernel package in its Depends; a
	# versioned package is its own kernel.
	apt_suite_setup
	pkg=$(aptc depends "$name" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}') || true
	if [[ -z $pkg && $name =~ ^linux-image-[0-9] ]] && aptc show "$name" >/dev/null 2>&1; then
		pkg=$name
	fi
	if [[ -z $pkg ]]; then
		dir=$(cached_flavour "$name") || true
		if [[ -n $dir && -f $dir/release ]]; then
			note "apt does not know $name; using the cached ${dir##*/}"
			staged_complete "$dir" || k_stale="apt does not know $name"
			kernel_from_dir "$dir"
			return
		fi
		die $EXIT_KERNEL "cannot resolve $name: apt's package lists do not have it (run 'apt-get update' as root; is Debian's registry configured and reachable?), or pass --kernel"
	fi
	ver=$(aptc policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" {print $2; exit}') || true
	# A split image (7.x) has its vmlinuz in linux-binary-*, its config in
	# linux-base-* and its modules in linux-modules-*, which it depends on at
	# the same version.
	local parts=("$pkg=$ver") part
	for part in $(aptc depends "$pkg=$ver" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-(binary|modules|base)-[0-9]/ {print $2}'); do
		parts+=("$part=$ver")
	done
	[[ -n $ver && $ver != "(none)" ]] || die $EXIT_KERNEL "apt has no installable version of $pkg"
	key="${pkg}_${ver//:/%3a}"
	dir=$cache/kernels/$key
	k_pkg=$pkg
	k_ver=$ver
	if ! staged_complete "$dir"; then
		# Not cached, or cached before the rig staged every module it looks
		# for (veth.ko): the package is fetched again and what is missing
		# is added. A cached kernel stays usable without it when the
		# registry cannot be reached.
		mk_tmp tmp
		local why
		[[ ! -f $dir/release ]] || note "the cached $key was staged without ${OPT_MODULES// /, }.ko; fetching the package again to add it"
		if ! why=$(apt_download "$tmp" "${parts[@]}"); then
			rm -rf "$tmp"
			[[ -f $dir/release ]] || die $EXIT_KERNEL "cannot download $pkg $ver: no access to Debian's registry? ($why)"
			k_stale="cannot download $pkg $ver: $why"
			note "$k_stale; using the cached kernel as it is"
		else
			local deb debs=()
			while IFS= read -r deb; do debs+=("$deb"); done < <(find "$tmp" -maxdepth 1 -name '*.deb' | sort)
			((${#debs[@]} == ${#parts[@]})) || die $EXIT_KERNEL "apt-get download ${parts[*]} left ${#debs[@]} .deb files"
			mkdir -p "$cache/kernels"
			unpack_debs "$dir" "${debs[@]}"
			echo "$pkg $ver (Debian)" >"$dir/source.tmp"
			mv "$dir/source.tmp" "$dir/source"
			rm -rf "$tmp"
		fi
	fi
	kernel_from_dir "$dir"
}

# module_beside DIR RELEASE NAME: NAME.ko (or .ko.xz/.zst/.gz) beside a bare
# vmlinuz in DIR, or under lib/modules/RELEASE next to it or on this host.
module_beside() {
	local dir=$1 rel=$2 name=$3 base mod
	for base in "$dir" "$dir/../lib/modules/$rel/kernel/drivers/net" "$dir/../usr/lib/modules/$rel/kernel/drivers/net" \
		"/lib/modules/$rel/kernel/drivers/net"; do
		for mod in "$base/$name.ko" "$base/$name.ko.xz" "$base/$name.ko.zst" "$base/$name.ko.gz"; do
			if [[ -f $mod ]]; then
				echo "$mod"
				return
			fi
		done
	done
}

fetch_file() {
	local f rel dir sum
	f=$(realpath "$kernel")
	if dpkg-deb --info "$f" >/dev/null 2>&1; then
		k_pkg=$(dpkg-deb -f "$f" Package 2>/dev/null) || true
		k_ver=$(dpkg-deb -f "$f" Version 2>/dev/null) || true
		sum=$(sha256sum "$f" | cut -c1-16)
		dir=$cache/kernels/deb-$sum
		if ! staged_complete "$dir"; then
			mkdir -p "$cache/kernels"
			unpack_deb "$f" "$dir"
		fi
		kernel_from_dir "$dir"
		return
	fi
	rel=$(bzimage_release "$f") || die $EXIT_KERNEL "--kernel $kernel is neither a Debian package nor a bzImage (vmlinuz)"
	[[ -n $rel ]] || die $EXIT_KERNEL "--kernel $kernel: cannot read the kernel release from the bzImage header"
	k_vmlinuz=$f
	k_release=$rel
	k_source=$f
	dir=$(dirname "$f")
	k_config=""
	for c in "$dir/config-$rel" "$dir/config" "/boot/config-$rel"; do
		if [[ -f $c ]]; then
			k_config=$c
			break
		fi
	done
	k_module=$(module_beside "$dir" "$rel" dummy)
	k_veth=$(module_beside "$dir" "$rel" veth)
	k_linkmods=""
	local lm p
	for lm in $LINK_MODULES; do
		p=$(module_beside "$dir" "$rel" "$lm")
		[[ -z $p ]] || k_linkmods+="$p "
	done
	if [[ -z $k_module ]] && ! builtin_dummy "$k_config"; then
		die $EXIT_KERNEL "kernel $rel ($kernel) has no dummy.ko beside it or under lib/modules/$rel, and its config (${k_config:-not found}) has no CONFIG_DUMMY=y: it cannot make dummy links"
	fi
}

# ---------------------------------------------------------------- the ndst module

k_headers="" # the kernel build tree ndst.ko is built against
k_ndst_ko=""

# fetch_headers: the Debian headers of the kernel package k_pkg k_ver: the
# linux-headers package of the same flavour and version and the headers and
# kbuild packages it depends on, at the version it names (kbuild's ">=" is
# taken as "="; they come from one source package), downloaded with apt-get
# download and unpacked with dpkg-deb -x into the cache (nothing is installed;
# /lib/modules and /usr/src are not touched). The one absolute path in them
# (the flavour Makefile's include of the common tree) is pointed at the cache.
fetch_headers() {
	local hpkg key dir tmp log deps d stage deb tree
	[[ $k_pkg == linux-image-* && -n $k_ver ]] ||
		die $EXIT_KERNEL "no kernel headers for $k_release: the kernel is not a Debian linux-image package; pass --headers DIR (a kernel build tree)"
	hpkg=linux-headers-${k_pkg#linux-image-}
	hpkg=${hpkg%-unsigned}
	key="${hpkg}_${k_ver//:/%3a}"
	dir=$cache/headers/$key
	if [[ ! -f $dir/tree ]]; then
		command -v apt-cache >/dev/null 2>&1 || die $EXIT_KERNEL "no kernel headers for $k_release: apt-cache not found (not a Debian host?); pass --headers DIR"
		deps=$(aptc show "$hpkg=$k_ver" 2>/dev/null | awk -F': ' '$1 == "Depends" {print $2; exit}') || true
		[[ -n $deps ]] || die $EXIT_KERNEL "no kernel headers for $k_release: apt does not know $hpkg $k_ver (run 'apt-get update' as root; is Debian's registry reachable?), or pass --headers DIR"
		local pkgs=("$hpkg=$k_ver")
		for d in $(echo "$deps" | tr ',' '\n' | sed -n 's/^ *\(linux-\(headers\|kbuild\)-[^ ]*\) (>\{0,1\}= \([^)]*\)).*/\1=\3/p'); do
			pkgs+=("$d")
		done
		mk_tmp tmp
		local why
		if ! why=$(apt_download "$tmp" "${pkgs[@]}"); then
			die $EXIT_KERNEL "no kernel headers for $k_release: cannot download ${pkgs[*]} ($why)"
		fi
		mk_tmp stage
		chmod 755 "$stage"
		for deb in "$tmp"/*.deb; do
			dpkg-deb -x "$deb" "$stage/root" || die $EXIT_KERNEL "cannot unpack $deb"
		done
		[[ -f $stage/root/usr/src/$hpkg/Makefile ]] || die $EXIT_KERNEL "no kernel headers for $k_release: $hpkg has no usr/src/$hpkg/Makefile"
		echo "$hpkg $k_ver (Debian)" >"$stage/source"
		mkdir -p "$cache/headers"
		rm -rf "$dir"
		mv "$stage" "$dir"
		tree=$dir/root/usr/src/$hpkg
		sed -i "s#^include /usr/src/#include $dir/root/usr/src/#" "$tree/Makefile"
		echo "$tree" >"$dir/tree"
		rm -rf "$tmp"
	fi
	k_headers=$(cat "$dir/tree")
}

# find_headers: the build tree for --module: --headers, the Debian headers of
# a packaged kernel, or /lib/modules/RELEASE/build for a bare vmlinuz.
find_headers() {
	if [[ -n $headers ]]; then
		k_headers=$(realpath "$headers")
	elif [[ -n $k_pkg ]]; then
		fetch_headers
	elif [[ -f /lib/modules/$k_release/build/Makefile ]]; then
		k_headers=/lib/modules/$k_release/build
	else
		die $EXIT_KERNEL "no kernel headers for $k_release: give the kernel as a Debian package (its linux-headers package is fetched), or pass --headers DIR"
	fi
}

# kernel_cc TREE: the compiler the kernel was built with (Debian's headers
# name it in .kernelvariables, e.g. gcc-12); gcc otherwise.
kernel_cc() {
	local cc=""
	if [[ -f $1/.kernelvariables ]]; then
		cc=$(awk '$1 == "CC" && $2 == "=" {print $NF}' "$1/.kernelvariables")
		cc=${cc#'$(CROSS_COMPILE)'}
	fi
	echo "${cc:-gcc}"
}

# build_module: ndst.ko from kmod/ against k_headers, cached by release and
# source digest; it must carry the kernel's release as its vermagic.
build_module() {
	local src=$repo/kmod cc key out tmp vm
	[[ -f $src/Kbuild ]] || die $EXIT_KERNEL "no module sources in $src"
	command -v make >/dev/null 2>&1 || die $EXIT_HOST "make not found: needed to build ndst.ko (scripts/ci-deps.sh installs it)"
	cc=$(kernel_cc "$k_headers")
	command -v "$cc" >/dev/null 2>&1 ||
		die $EXIT_HOST "$cc not found: kernel $k_release was built with it, and ndst.ko must be too (apt-get install $cc; scripts/ci-deps.sh does)"
	key=$( (cd "$src" && cat Kbuild ./*.c ./*.h && echo "$k_headers") | sha256sum | cut -c1-16)
	out=$cache/modules/$k_release-$key
	if [[ ! -f $out/ndst.ko ]]; then
		mk_tmp tmp
		cp "$src"/Kbuild "$src"/*.c "$src"/*.h "$tmp/"
		note "building ndst.ko against $k_headers"
		if ! run_child "$tmp/build.log" "$tmp" timeout 600 make -C "$k_headers" M="$tmp" modules; then
			tail -n 25 "$tmp/build.log" >&2
			die $EXIT_KERNEL "ndst.ko does not build against the headers of $k_release ($k_headers); the compiler's output is above"
		fi
		[[ -f $tmp/ndst.ko ]] || die $EXIT_KERNEL "make left no ndst.ko (see $tmp/build.log)"
		vm=$(grep -ao 'vermagic=[^ ]*' "$tmp/ndst.ko" | head -n1) || true
		[[ ${vm#vermagic=} == "$k_release" ]] ||
			die $EXIT_KERNEL "ndst.ko built against $k_headers is for '${vm#vermagic=}', not the kernel's $k_release: wrong --headers?"
		mkdir -p "$out"
		cp "$tmp/ndst.ko" "$out/ndst.ko.tmp"
		mv "$out/ndst.ko.tmp" "$out/ndst.ko"
		rm -rf "$tmp"
	fi
	k_ndst_ko=$out/ndst.ko
}

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 900 9 || die $EXIT_KERNEL "cache $cache stayed locked for 900 s"
((fetch_only)) || check_host
if [[ -n $kernel ]]; then
	fetch_file
else
	command -v apt-cache >/dev/null 2>&1 || die $EXIT_KERNEL "apt-cache not found: pass --kernel (not a Debian host?)"
	fetch_registry
fi
if ((module)); then
	find_headers
	build_module
fi
flock -u 9
exec 9>&-
veth_state

hz=""
if [[ -n $k_config ]]; then
	hz=$(awk -F= '$1 == "CONFIG_HZ" {print $2}' "$k_config")
fi

# The preemption models the kernel can boot, from its config
# (kernel/Kconfig.preempt): PREEMPT_RT boots rt only (from 6.13 an RT kernel
# may also be PREEMPT_DYNAMIC, between full and lazy, and stays rt); a
# PREEMPT_DYNAMIC kernel takes preempt=none|voluntary|full on its command
# line, and lazy where the architecture has it (ARCH_HAS_PREEMPT_LAZY, 6.13
# on); any other kernel boots the one model it is built with. Without a
# config nothing is known and every mode is tried.
k_models="" k_boot="" k_dynamic=0
if [[ -n $k_config ]]; then
	read -r k_boot k_dynamic k_models < <(awk -F= '
		$2 == "y" { y[$1] = 1 }
		END {
			boot = y["CONFIG_PREEMPT_RT"] ? "rt" : y["CONFIG_PREEMPT_LAZY"] ? "lazy" : y["CONFIG_PREEMPT"] ? "full" : \
				y["CONFIG_PREEMPT_VOLUNTARY"] ? "voluntary" : y["CONFIG_PREEMPT_NONE"] ? "none" : "-"
			dyn = y["CONFIG_PREEMPT_DYNAMIC"] ? 1 : 0
			models = boot
			if (boot == "rt") models = "rt"
			else if (dyn) models = "none,voluntary,full" (y["CONFIG_ARCH_HAS_PREEMPT_LAZY"] ? ",lazy" : "")
			print boot, dyn, models
		}' "$k_config")
	[[ $k_boot != - ]] || k_boot="" k_models=""
	# Debian's 7.x kernels (x86, PREEMPT_LAZY) refuse preempt=none and
	# voluntary: 7.2.13's boot log says "Dynamic Preempt: unsupported mode:
	# none" (and voluntary) and boots lazy; the config does not say so, and
	# the source was not read: taken from the guest's own log.
	if [[ $k_models == *lazy* && ${k_release%%.*} =~ ^[0-9]+$ ]] && ((${k_release%%.*} >= 7)); then
		k_models=full,lazy
	fi
fi
if [[ -z $preempt ]]; then
	preempt=none
	if [[ -n $k_models && ,$k_models, != *,none,* ]]; then
		preempt=$k_boot
	fi
elif [[ -n $k_models && ,$k_models, != *,$preempt,* ]]; then
	usage_die "--preempt $preempt: kernel $k_release boots ${k_models//,/, } only (its config: boot model $k_boot$( ((k_dynamic)) && echo ", PREEMPT_DYNAMIC" || echo ", not PREEMPT_DYNAMIC"))"
fi
# preempt= goes on the command line only where the kernel reads it.
preempt_arg=""
if [[ $preempt != rt ]] && { ((k_dynamic)) || [[ -z $k_models ]]; }; then
	preempt_arg=" preempt=$preempt"
fi

if ((fetch_only)); then
	echo "release=$k_release"
	echo "vmlinuz=$k_vmlinuz"
	echo "module=${k_module:-builtin}"
	case $k_veth_state in
	module) echo "veth=$k_veth" ;;
	builtin) echo "veth=builtin" ;;
	*) echo "veth=none" && echo "veth_why=$k_veth_why" ;;
	esac
	echo "config=$k_config"
	echo "hz=$hz"
	echo "preempt_models=$k_models"
	echo "preempt_boot=$k_boot"
	echo "source=$k_source"
	if ((module)); then
		echo "headers=$k_headers"
		echo "ndst_ko=$k_ndst_ko"
	fi
	exit 0
fi

# ---------------------------------------------------------------- initramfs

work=$(mktemp -d "${TMPDIR:-/tmp}/ndst-vm.XXXXXX")
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,etc,lib/modules,var}
cp "$busybox" "$root/bin/busybox"
if [[ -n $k_module ]]; then
	install_module "$k_module" "$root/lib/modules/dummy.ko" ||
		die $EXIT_KERNEL "cannot unpack $k_module"
fi
for p in ${k_linkmods:-}; do
	m=${p##*/}
	install_module "$p" "$root/lib/modules/${m%%.ko*}.ko" || die $EXIT_KERNEL "cannot unpack $p"
done
case $k_veth_state in
module)
	install_module "$k_veth" "$root/lib/modules/veth.ko" ||
		die $EXIT_KERNEL "cannot unpack $k_veth"
	;;
builtin) : >"$root/lib/modules/veth.builtin" ;;
*)
	note "no veth in the guest: $k_veth_why; veth pairs cannot be made there"
	echo "$k_veth_why" >"$root/lib/modules/veth.why"
	;;
esac
if ((module)); then
	cp "$k_ndst_ko" "$root/lib/modules/ndst.ko"
fi

# The kernel config where a program looks for it (/boot/config-RELEASE): ndst
# reads HZ from it.
if [[ -n $k_config ]]; then
	mkdir -p "$root/boot"
	cp "$k_config" "$root/boot/config-$k_release"
fi

prog_args=()
if [[ -n $guest_bin ]]; then
	# Keep the program's own name (a multi-call binary such as busybox needs it).
	mkdir -p "$root/guest"
	prog=/guest/$(basename "$guest_bin")
	cp "$guest_bin" "$root$prog"
	chmod 755 "$root$prog"
else
	if ! run_child "$work/build.log" "$repo" env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$root/bin/ndst" ./cmd/ndst; then
		cat "$work/build.log" >&2
		die $EXIT_GUEST "cannot build the guest's static ndst (go build ./cmd/ndst failed)"
	fi
	if ((trace_tools)); then
		if ! run_child "$work/build-trace.log" "$repo" env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$root/bin/teardowntrace" ./scripts/teardowntrace; then
			cat "$work/build-trace.log" >&2
			die $EXIT_GUEST "cannot build the guest's static teardowntrace"
		fi
		cp "$repo/scripts/guest-trace.sh" "$root/bin/guest-trace"
		chmod 755 "$root/bin/guest-trace"
	fi
	prog=/bin/ndst
	prog_args=(--backend netlink)
	if ((shell)); then
		prog=/bin/sh
		prog_args=(-c)
	fi
fi

{
	i=0
	for c in "${cmds[@]}"; do
		i=$((i + 1))
		echo "run $i $(shq "$prog") ${prog_args[*]}$c"
	done
} >"$root/cmds"

cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TMPDIR=/tmp
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec 0</dev/console 1>/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ln -s /run /var/run
D=/dev/ttyS1
if [ -c $D ] && stty -F $D raw -echo 2>/dev/null; then :; else D=/dev/console; fi
say() { echo "@@ndst-vm $*" >$D; }
off() { sync; poweroff -f; sleep 10; }
up() { cut -d' ' -f1 /proc/uptime; }
if [ -f /lib/modules/dummy.ko ]; then
	if ! out=$(insmod /lib/modules/dummy.ko numdummies=0 2>&1); then
		say "fault module insmod dummy.ko failed: $(echo $out | tr '\n' ' ')"
		off
	fi
fi
if [ -d /sys/module/dummy ]; then say "module dummy loaded"; else say "fault module dummy not present after loading"; off; fi
# veth is optional: a guest without it runs, and says why it has none.
if [ -f /lib/modules/veth.ko ]; then
	if out=$(insmod /lib/modules/veth.ko 2>&1); then
		say "module veth loaded"
	else
		say "module veth absent: insmod veth.ko failed: $(echo $out | tr '\n' ' ')"
	fi
elif [ -f /lib/modules/veth.builtin ]; then
	say "module veth built in"
else
	say "module veth absent: $(cat /lib/modules/veth.why 2>/dev/null)"
fi
# The VLAN and macvlan link types, where the kernel has them as modules.
for m in llc stp garp mrp 8021q macvlan; do
	if [ -f /lib/modules/$m.ko ]; then
		if out=$(insmod /lib/modules/$m.ko 2>&1); then say "module $m loaded"; else say "module $m absent: insmod $m.ko failed: $(echo $out | tr '\n' ' ')"; fi
	fi
done
if [ -f /lib/modules/ndst.ko ]; then
	if ! out=$(insmod /lib/modules/ndst.ko 2>&1); then
		say "fault module insmod ndst.ko failed: $(echo $out | tr '\n' ' ')"
		off
	fi
	if [ -d /proc/sys/net/ndst ]; then say "module ndst loaded"; else say "fault module ndst loaded but /proc/sys/net/ndst is missing"; off; fi
fi
# lastlog: the timestamp of the kernel log's last line; newlog T: the lines
# after timestamp T (every line of a record carries its record's timestamp).
lastlog() { dmesg | tail -n 1 | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'; }
newlog() { dmesg | awk -v t="${1:-0}" '{ s = $0; sub(/^\[ */, "", s); split(s, a, "]"); if (a[1] + 0 > t + 0) print }'; }
# The model in force: debugfs names it on a PREEMPT_DYNAMIC kernel; an RT
# kernel is rt whatever debugfs says (from 6.13 it may be dynamic too).
pm=$(sed -n 's/.*(\([a-z]*\)).*/\1/p' /sys/kernel/debug/sched/preempt 2>/dev/null)
if [ "$(cat /sys/kernel/realtime 2>/dev/null)" = 1 ] || uname -v | grep -qw PREEMPT_RT; then pm=rt; fi
say "guest release=$(uname -r) cpus=$(nproc) preempt=${pm:-unknown} uptime=$(up)"
say "cmdline $(cat /proc/cmdline)"
run() {
	n=$1
	p=$2
	shift 2
	say "begin $n $(echo "$@" | sed 's#^--backend netlink ##; s#^-c ##')"
	k0=$(lastlog)
	t0=$(up)
	"$p" "$@" </dev/null >/tmp/out.$n 2>/tmp/err.$n
	rc=$?
	t1=$(up)
	awk 1 /tmp/out.$n >$D
	say "stderr $n"
	awk 1 /tmp/err.$n >$D
	say "kmsg $n"
	newlog "$k0" >$D
	say "end $n exit=$rc seconds=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")"
	rm -f /tmp/out.$n /tmp/err.$n
}
. /cmds
if [ -f /dmesg ]; then
	say "dmesg"
	dmesg >$D
fi
say "done"
off
EOF
chmod 755 "$root/init"
((!dmesg)) || : >"$root/dmesg"

if ! (cd "$root" && find . -mindepth 1 | "$busybox" cpio -o -H newc -R 0:0 >"$work/initrd.cpio" 2>"$work/cpio.log"); then
	cat "$work/cpio.log" >&2
	die $EXIT_GUEST "cannot pack the initramfs (busybox cpio)"
fi

# ---------------------------------------------------------------- boot

accel=tcg
if [[ -w /dev/kvm && ! -e /sys/module/kvm_pvm ]]; then
	accel=kvm
fi
case ${NDST_VM_ACCEL:-} in
"") ;;
kvm | tcg) accel=$NDST_VM_ACCEL ;;
*) usage_die "NDST_VM_ACCEL='$NDST_VM_ACCEL': want kvm or tcg" ;;
esac
cpu=()
[[ $accel != kvm ]] || cpu=(-cpu host)

# The host's load average goes with the timings: TCG guests slow down when
# the host's cores are busy.
load1() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown; }
echo "@@ndst-vm host accel=$accel cpus=$cpus preempt=$preempt release=$k_release hz=${hz:-unknown} load1=$(load1) kernel=$k_source"
note "booting $k_release (accel $accel, $cpus CPU, preempt=$preempt${append_arg:+, with$append_arg}, timeout ${timeout_s}s)"

: >"$work/console.log"
: >"$work/data.log"
if ((console)); then
	tail -n +1 -f "$work/console.log" >&2 &
	tailpid=$!
fi

# no_timer_check: under a busy host a TCG guest can miss the timer interrupts
# of the early IO-APIC check and panic ("IO-APIC + timer doesn't work");
# virtualised kernels skip that check (KVM guests do so by themselves).
start_ns=$(date +%s%N)
timeout -k 5 "$timeout_s" "$qemu" -accel "$accel" "${cpu[@]}" -m "$mem" -smp "$cpus" \
	-nodefaults -no-user-config -display none -no-reboot -monitor none \
	-kernel "$k_vmlinuz" -initrd "$work/initrd.cpio" \
	-append "console=ttyS0 quiet panic=-1 no_timer_check$preempt_arg$append_arg" \
	-serial "file:$work/console.log" -serial "file:$work/data.log" \
	-pidfile "$work/qemu.pid" </dev/null >"$work/qemu.out" 2>&1 &
qpid=$!
set +e
wait "$qpid"
qrc=$?
set -e
qpid=""
wall_ms=$((($(date +%s%N) - start_ns) / 1000000))

tr -d '\r' <"$work/data.log" >"$work/data.txt"
if ! grep -q '^@@ndst-vm ' "$work/data.txt"; then
	# No second serial port in the guest: the markers went to the console.
	tr -d '\r' <"$work/console.log" | sed -n '/^@@ndst-vm /,$p' >"$work/data.txt"
fi
cat "$work/data.txt"
echo "@@ndst-vm host wall_ms=$wall_ms load1_end=$(load1)"

console_tail() {
	echo "--- last lines of the guest console:" >&2
	tr -d '\r' <"$work/console.log" | tail -n 15 >&2
	if [[ -s $work/qemu.out ]]; then
		echo "--- qemu said:" >&2
		tail -n 5 "$work/qemu.out" >&2
	fi
}

if fault=$(grep -m1 '^@@ndst-vm fault ' "$work/data.txt"); then
	console_tail
	die $EXIT_KERNEL "kernel $k_release: ${fault#@@ndst-vm fault }"
fi
if ! grep -qx '@@ndst-vm done' "$work/data.txt"; then
	console_tail
	if ((qrc == 124 || qrc == 137)); then
		die $EXIT_GUEST "the guest did not power off within ${timeout_s}s (timeout; qemu stopped)"
	fi
	if ((qrc != 0)); then
		die $EXIT_GUEST "qemu exited with status $qrc before the guest finished"
	fi
	die $EXIT_GUEST "the guest stopped before finishing its commands (panic or crash; see the console above)"
fi
failed=$(grep -E '^@@ndst-vm end [0-9]+ exit=' "$work/data.txt" | grep -v ' exit=0 ' || true)
if [[ -n $failed ]]; then
	while read -r _ _ n e _; do
		note "command $n exited ${e#exit=}"
	done <<<"$failed"
	exit $EXIT_CMD
fi
exit 0
