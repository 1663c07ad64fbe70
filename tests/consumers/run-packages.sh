#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Tries the Debian packages of scripts/build-debs.sh as a user would, in a clean Debian root of
# the suite they were built for: installs them with "apt install ./*.deb", builds and runs the
# CMake and the qmake consumer applications against them with no extra paths (the module is
# found like any Qt module), then removes the packages and checks that none of their files is
# left behind.
#
# The root has Qt, CMake, g++ and make but not the module; it is made once with mmdebstrap
# from the host's mirror and kept as a tarball (${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}/
# packages-<suite>.tar), unpacked afresh for every run. Needs root.
#
# Usage: tests/consumers/run-packages.sh <debs-dir> [<suite>]   (suite: bookworm, default, or trixie)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
debs=$(cd "${1:?usage: $0 <debs-dir> [bookworm|trixie]}" && pwd)
suite=${2:-bookworm}
fail() { echo "packages: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || fail "chroot and mmdebstrap need root"
ls "$debs"/*.deb >/dev/null 2>&1 || fail "no .deb in $debs"

source "$top/scripts/lib/host-mirror.sh"
roots=${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}
tarball=$roots/packages-$suite.tar
if [[ ! -s "$tarball" ]]; then
    "$top/scripts/install-deps.sh" mmdebstrap
    mkdir -p "$roots"
    echo "packages: making a clean Debian $suite root (Qt, CMake, g++, make) into $tarball" >&2
    mmdebstrap --variant=minbase --format=tar --include=qt6-base-dev,cmake,g++,make \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        "$suite" "$tarball.partial" "$(host_mirror)" >"$roots/packages-$suite.log" 2>&1 ||
        { tail -n 20 "$roots/packages-$suite.log" >&2; exit 1; }
    mv "$tarball.partial" "$tarball"
fi

root=$(mktemp -d /tmp/qfc-packages-XXXXXX)
trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$tarball"
mkdir -p "$root/work/debs"
cp "$debs"/*.deb "$root/work/debs/"
cp -r "$here/app" "$here/cmake" "$here/qmake" "$root/work/"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

# The steps inside the root, as its root user.
cat >"$root/work/try.sh" <<'EOF'
set -euo pipefail
cd /work
export DEBIAN_FRONTEND=noninteractive QT_QPA_PLATFORM=offscreen
# As a user would: the packages' dependencies (oneTBB's runtime) come from the mirror.
apt-get update -qq >apt.log 2>&1 || { tail apt.log; exit 1; }
apt-get install -y -qq --no-install-recommends ./debs/*.deb >>apt.log 2>&1 || { tail apt.log; exit 1; }
packages=$(for d in debs/*.deb; do dpkg-deb -f "$d" Package; done)
dpkg -L $packages | sort -u >files.txt
echo "packages: installed $(echo $packages)" >&2
# CMake: find_package(Qt6 COMPONENTS Core FastConnect), nothing else passed.
qt=$(qmake6 -query QT_VERSION)
cmake -S cmake -B build-cmake -DQT_VERSION_WANTED="${qt%.*}" >/dev/null
cmake --build build-cmake >/dev/null
build-cmake/cmake_consumer
# qmake: QT += fastconnect, nothing else passed.
mkdir -p build-qmake && (cd build-qmake && qmake6 ../qmake/qmake_consumer.pro >/dev/null && make -s >/dev/null)
build-qmake/qmake_consumer
apt-get purge -y -qq $packages >>apt.log 2>&1
left=$(while read -r f; do [[ -e "$f" && ! -d "$f" ]] && echo "$f"; done <files.txt || true)
[[ -z "$left" ]] || { echo "packages: left behind after removal:" >&2; echo "$left" >&2; exit 1; }
echo "packages: removed; no file left behind" >&2
EOF

unshare --mount --propagation private -- bash -c '
    set -euo pipefail
    mount -t proc proc "$1/proc"
    chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        bash /work/try.sh
' qfc-packages "$root" || fail "the packages failed in a clean Debian $suite root"
echo "packages: the CMake and the qmake application built and ran against the installed packages" >&2
