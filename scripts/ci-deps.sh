#!/usr/bin/env bash
# ci-deps.sh: install what the tests need on a fresh Debian machine (run as root).
#
# Idempotent and quick when everything is already there: the package lists are
# refreshed (apt-get update) at most once, and only when something is missing.
# Installs qemu-system-x86 (the VM rig), busybox-static (the guest's userland)
# and iproute2 (the netlink tests), then fetches the stock kernel package the
# VM rig boots into its cache (scripts/vm-run.sh --fetch-only).
#
# For the ndst kernel module (kmod/, scripts/vm-run.sh --module) it installs
# make and the compiler the rig's kernel was built with (gcc-12 for Debian
# 12's kernel: the one its linux-headers package names through
# linux-compiler-gcc-N-x86), then has the rig fetch that kernel's headers
# (linux-headers-RELEASE, its -common package and linux-kbuild) and build the
# module (scripts/vm-run.sh --fetch-only --module). The headers are not
# installed: like the kernel image they are downloaded with apt-get download
# and unpacked with dpkg-deb -x into the rig's cache, so nothing lands in the
# host's /usr/src, /lib/modules or /boot; only the toolchain (make, gcc-N) is
# installed as ordinary packages.
#
# It never fails the CI because Debian's registry cannot be reached: it prints
# a warning instead, and the tests that need the missing piece skip with a
# reason. It exits non-zero only on a usage error.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)

if [[ $# -gt 0 ]]; then
	echo "usage: $0   (no arguments; run as root)" >&2
	exit 2
fi

warn() { echo "ci-deps: warning: $*" >&2; }
info() { echo "ci-deps: $*" >&2; }

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o Acquire::Retries=1 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20 -o Dpkg::Use-Pty=0)

# static_busybox reports whether /bin/busybox exists and is statically linked
# (busybox-static; the dynamic busybox package cannot run inside the guest).
static_busybox() {
	local b=/bin/busybox
	[[ -x $b ]] || return 1
	# A dynamically linked ELF names its interpreter (PT_INTERP).
	if command -v readelf >/dev/null 2>&1; then
		! readelf -l "$b" 2>/dev/null | grep -q 'Requesting program interpreter'
	else
		! grep -aq 'ld-linux' "$b"
	fi
}

missing=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
static_busybox || missing+=(busybox-static)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)

# The VM rig resolves linux-image-amd64 through apt's package lists.
need_lists=0
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
	need_lists=1
fi

if [[ $(id -u) -ne 0 ]]; then
	if ((${#missing[@]})); then
		warn "not root: cannot install ${missing[*]}; tests that need them will skip"
	fi
	exit 0
fi

updated=0
apt_update() {
	((updated)) && return 0
	updated=1
	info "apt-get update"
	if ! timeout 300 apt-get "${apt_opts[@]}" -q update >/tmp/ci-deps-apt-update.log 2>&1; then
		warn "apt-get update failed (no access to Debian's registry?); see /tmp/ci-deps-apt-update.log"
		tail -n 3 /tmp/ci-deps-apt-update.log >&2
		return 1
	fi
	# apt-get update exits 0 even when some sources failed; report those.
	if grep -qE '^(W|E): Failed to fetch|^Err:' /tmp/ci-deps-apt-update.log; then
		warn "apt-get update could not reach every source:"
		grep -E '^(W|E): Failed to fetch|^Err:' /tmp/ci-deps-apt-update.log | head -n 3 >&2
	fi
}

if ((${#missing[@]})) || ((need_lists)); then
	apt_update
fi

if ((${#missing[@]})); then
	info "installing ${missing[*]}"
	if ! timeout 900 apt-get "${apt_opts[@]}" -q -y --no-install-recommends install "${missing[@]}" >/tmp/ci-deps-apt-install.log 2>&1; then
		warn "could not install ${missing[*]} (no access to Debian's registry?); the VM tests will skip. See /tmp/ci-deps-apt-install.log"
		tail -n 3 /tmp/ci-deps-apt-install.log >&2
	fi
fi

# Fetch the stock kernel into the rig's cache now, so a registry problem shows
# here, once, with its cause.
if ! kernel=$(timeout 900 bash "$here/vm-run.sh" --fetch-only); then
	warn "could not fetch the stock kernel for the VM rig; the VM tests will skip"
	exit 0
fi

# The module's toolchain: make and the kernel's own compiler.
release=$(sed -n 's/^release=//p' <<<"$kernel")
cc=$(apt-cache show "linux-headers-$release" 2>/dev/null | sed -n 's/^Depends:.*linux-compiler-\(gcc-[0-9]*\)-.*/\1/p' | head -n1) || true
tools=()
command -v make >/dev/null 2>&1 || tools+=(make)
if [[ -n $cc ]]; then
	command -v "$cc" >/dev/null 2>&1 || tools+=("$cc")
else
	warn "apt does not name the compiler of linux-headers-$release; trying the default gcc"
	command -v gcc >/dev/null 2>&1 || tools+=(gcc)
fi
if ((${#tools[@]})); then
	apt_update
	info "installing ${tools[*]} (to build the ndst module)"
	if ! timeout 900 apt-get "${apt_opts[@]}" -q -y --no-install-recommends install "${tools[@]}" libelf1 >/tmp/ci-deps-apt-install.log 2>&1; then
		warn "could not install ${tools[*]}; the module's VM test will skip. See /tmp/ci-deps-apt-install.log"
		tail -n 3 /tmp/ci-deps-apt-install.log >&2
	fi
fi
if ! timeout 900 bash "$here/vm-run.sh" --fetch-only --module >/dev/null; then
	warn "could not fetch the kernel's headers or build the ndst module; the module's VM test will skip"
fi
exit 0
