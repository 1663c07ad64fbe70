#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs a command in this source tree inside a Debian root that has a newer Qt than the host:
# trixie (Debian 13, Qt 6.8 LTS) or sid (Debian unstable, the newest Qt 6); or one of another
# architecture: bookworm-i386 (Debian 12 for 32-bit x86, Qt 6.4, run under "setarch i686"),
# natively where the kernel runs 32-bit x86 code, else under qemu-user through binfmt_misc
# (scripts/lib/binfmt-i386.sh sets that up before the bootstrap and before each run; the
# command sees which in QFC_QT_ROOT_RUNS: "native" or "qemu-i386 VERSION"). The root is made once
# with mmdebstrap from the mirror in the host's apt sources and cached outside the clone
# (${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}/<root>), so later runs start at once; delete
# that directory to bootstrap it again (e.g. to pick up a newer Qt in sid).
#
# The tree is bind-mounted at /src/qtfastconnect, the command runs there as root, with the
# root's own toolchain and Qt. /proc and the bind mount live in a private mount namespace: they
# vanish when the command ends, even if it is killed, and concurrent runs do not unmount each
# other's /proc. The host's apt sources are never touched.
#
# Usage: scripts/qt-root.sh SUITE [COMMAND [ARG...]]    (no command: an interactive shell)
#        scripts/qt-root.sh --bootstrap SUITE           (only make sure the root exists)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

usage() { echo "usage: $0 [--bootstrap] trixie|sid|bookworm-i386 [command [arg...]]" >&2; exit 2; }

bootstrap_only=0
[[ "${1:-}" == "--bootstrap" ]] && { bootstrap_only=1; shift; }
name=${1:-}
arch_args=()
personality=()
case "$name" in
    trixie|sid) suite=$name ;;
    bookworm-i386) suite=bookworm; arch_args=(--architectures=i386); personality=(setarch i686) ;;
    *) usage ;;
esac
shift

[[ $EUID -eq 0 ]] || { echo "$0: chroot and mmdebstrap need root" >&2; exit 1; }

roots=${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}
root=$roots/$name
mountpoint=/src/qtfastconnect

source "$here/scripts/lib/host-mirror.sh"

bootstrap() {
    mkdir -p "$roots"
    # One bootstrap at a time per suite; a second run waits and then finds the root made.
    exec 9>"$roots/.$name.lock"
    flock 9
    if [[ ! -x "$root/usr/bin/qmake6" ]]; then
        "$here/scripts/install-deps.sh" mmdebstrap ${arch_args[@]:+arch-test}
        local mirror tmp
        mirror=$(host_mirror) || exit 1
        tmp=$root.partial
        rm -rf "$tmp"
        echo "qt-root: bootstrapping Debian $name from $mirror into $root (about 1.2 GB)" >&2
        # Check-Valid-Until: sid's (and security's) Release files expire within days; a mirror
        # snapshot or a cached root must stay usable. mmdebstrap keeps the option in the root.
        mmdebstrap --variant=minbase "${arch_args[@]}" \
            --include=qt6-base-dev,qt6-base-private-dev,qt6-documentation-tools,libtbb-dev,cmake,ninja-build,g++,make,git,ca-certificates \
            --aptopt='Acquire::Check-Valid-Until "false"' \
            "$suite" "$tmp" "$mirror" >"$roots/$name.log" 2>&1 ||
            { tail -n 20 "$roots/$name.log" >&2; exit 1; }
        mv "$tmp" "$root"
    fi
    exec 9>&-
}

# How the root's code runs: "native", or for bookworm-i386 possibly "qemu-i386 VERSION".
runs=native
if [[ $name == bookworm-i386 ]]; then
    runs=$("$here/scripts/lib/binfmt-i386.sh") || exit 1
fi
[[ -x "$root/usr/bin/qmake6" ]] || bootstrap
[[ $bootstrap_only -eq 1 ]] && exit 0

mkdir -p "$root$mountpoint"
[[ -s "$root/etc/resolv.conf" ]] || cp /etc/resolv.conf "$root/etc/resolv.conf"
[[ $# -gt 0 ]] || set -- bash -l

# A clean environment: nothing of the host's (LD_LIBRARY_PATH, PATH, ...) leaks into the root.
env_vars=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
          LANG=C.UTF-8 TERM="${TERM:-dumb}" QFC_QT_ROOT="$name" QFC_QT_ROOT_RUNS="$runs")
# The compiler cache (scripts/lib/ccache.sh) is the host's, mounted at the same path.
ccache_dir=${QFC_CCACHE_DIR:-/var/cache/qtfastconnect-ccache}
mkdir -p "$ccache_dir" "$root$ccache_dir"
env_vars+=(QFC_CCACHE_DIR="$ccache_dir")
for v in CI QFC_SOAK_SECONDS QFC_BENCH_QUICK QFC_COMMIT; do
    [[ -n "${!v:-}" ]] && env_vars+=("$v=${!v}")
done

exec "${personality[@]}" unshare --mount --propagation private -- bash -c '
    set -euo pipefail
    root=$1 src=$2 mnt=$3 cache=$4; shift 4
    mount -t proc proc "$root/proc"
    mount --bind "$src" "$root$mnt"
    mount --bind "$cache" "$root$cache"
    status=0
    chroot "$root" /usr/bin/env -i "$@" || status=$?
    umount "$root$cache" "$root$mnt" "$root/proc"
    exit $status
' qt-root "$root" "$here" "$mountpoint" "$ccache_dir" "${env_vars[@]}" \
    bash -c 'cd "$0" && exec "$@"' "$mountpoint" "$@"
