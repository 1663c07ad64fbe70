#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Qt (QtCore and QtTest) and oneTBB for 64-bit Windows, built with Debian's MinGW-w64 GCC from
# the Debian sources of the very versions the host has installed (Debian ships neither for
# MinGW). Qt's cross build takes the host's Qt tools (moc, rcc, ...) through QT_HOST_PATH,
# which must be the same Qt version: that is why the sources are the host's. The result is
# cached outside the clone, keyed by those versions:
#   ${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}/mingw-w64-qt<version>-tbb<version>
# so only a fresh machine pays for it (about 15 minutes on 2 cores). Qt's Gui and Widgets are
# not built: they take 25 minutes more, and the Windows platform plug-in does not build from
# Debian's source (its wintab.h is removed there); the Windows stage runs the Core and Test
# tests. The host's apt sources are never changed: the sources come through a private apt
# configuration (a deb-src line for the host's mirror).
# Prints the prefix on success.
# Usage: scripts/lib/mingw-deps.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/scripts/lib/host-mirror.sh"

"$here/scripts/install-deps.sh" g++-mingw-w64-x86-64-posix dpkg-dev >&2
qt_src_version=$(dpkg-query -W -f='${source:Version}' qt6-base-dev)
tbb_src_version=$(dpkg-query -W -f='${source:Version}' libtbb-dev)
roots=${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}
prefix=$roots/mingw-w64-qt${qt_src_version}-tbb${tbb_src_version}
if [[ -e $prefix/.complete ]]; then
    echo "$prefix"
    exit 0
fi
mkdir -p "$roots"
exec 9>"$roots/.mingw-w64.lock"
flock 9
if [[ -e $prefix/.complete ]]; then
    echo "$prefix"
    exit 0
fi

work=$roots/mingw-w64-build
log=$work/build.log
rm -rf "$work" "$prefix"
mkdir -p "$work/src"
echo "mingw-deps: building Qt $qt_src_version (QtCore, QtTest) and oneTBB $tbb_src_version for" \
     "x86_64-w64-mingw32 into $prefix; log: $log" >&2
started=$SECONDS

private_apt "$work/apt" "deb-src bookworm main"
step() {  # description command...
    local what=$1
    shift
    echo "== $what" >>"$log"
    "$@" >>"$log" 2>&1 || { echo "mingw-deps: $what failed; the end of $log:" >&2
                            tail -n 30 "$log" >&2; exit 1; }
}
step "apt-get update (deb-src)" apt-get "${private_apt_opts[@]}" update
(cd "$work/src" &&
 step "apt-get source" apt-get "${private_apt_opts[@]}" source --download-only \
     "qt6-base=$qt_src_version" "onetbb=$tbb_src_version")
(cd "$work/src" && for dsc in *.dsc; do step "dpkg-source -x $dsc" dpkg-source -x "$dsc"; done)
qt_src=$(find "$work/src" -maxdepth 1 -type d -name 'qt6-base-*')
tbb_src=$(find "$work/src" -maxdepth 1 -type d -name 'onetbb-*')

toolchain=$here/scripts/lib/mingw-w64.cmake
jobs=$(nproc)
step "oneTBB: configure" cmake -S "$tbb_src" -B "$work/tbb" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DQFC_MINGW_PREFIX="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DTBB_TEST=OFF -DTBB_STRICT=OFF -DTBB_EXAMPLES=OFF -DTBBMALLOC_BUILD=OFF
step "oneTBB: build and install" cmake --build "$work/tbb" --target install --parallel "$jobs"

# Only QtCore and QtTest: every other module and feature that would cost build time is off.
step "Qt: configure" cmake -S "$qt_src" -B "$work/qt" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DQFC_MINGW_PREFIX="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DQT_HOST_PATH=/usr -DQT_HOST_PATH_CMAKE_DIR="/usr/lib/$(gcc -print-multiarch)/cmake" \
    -DQT_BUILD_EXAMPLES=OFF -DQT_BUILD_TESTS=OFF -DQT_BUILD_BENCHMARKS=OFF \
    -DFEATURE_gui=OFF -DFEATURE_widgets=OFF -DFEATURE_network=OFF -DFEATURE_sql=OFF \
    -DFEATURE_xml=OFF -DFEATURE_dbus=OFF -DFEATURE_concurrent=OFF -DFEATURE_printsupport=OFF \
    -DFEATURE_opengl=OFF -DFEATURE_icu=OFF -DFEATURE_testlib=ON -DINPUT_openssl=no
step "Qt: build and install" cmake --build "$work/qt" --target install --parallel "$jobs"

touch "$prefix/.complete"
rm -rf "$work"
echo "mingw-deps: done in $((SECONDS - started)) s" >&2
echo "$prefix"
