#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Installs a configured and built QtFastConnect into a staging directory (DESTDIR), checks that
# everything a consumer needs was installed, then builds and runs two applications outside the
# module's build against that install, as a user would: one with CMake
# (find_package(Qt6 COMPONENTS Core FastConnect), Qt6::FastConnect) and one with qmake
# (QT += fastconnect). Each must receive one funnel call and exit 0.
# Usage: tests/consumers/run.sh <module-build-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: $0 <module-build-dir>}" && pwd)
work="$build/consumers"
stage="$work/stage"

rm -rf "$work" && mkdir -p "$work"
DESTDIR="$stage" cmake --install "$build" >/dev/null
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
root="$stage$prefix"

fail() { echo "consumers: $*" >&2; exit 1; }

# What the install must contain (Qt's Debian layout: multiarch library and include dirs). The
# module's version is the version of the Qt it was built against (.cmake.conf).
version=$(qmake6 -query QT_VERSION)
lib=$(find "$root" -name 'libQt6FastConnect.so.6' -printf '%h\n' -quit)
[ -n "$lib" ] || fail "libQt6FastConnect.so.6 was not installed under $root"
inc=$(find "$root" -type d -path '*/qt6/QtFastConnect' -printf '%h\n' -quit)
[ -n "$inc" ] || fail "the QtFastConnect include directory was not installed under $root"
pri_version=$(sed -n 's/^QT.fastconnect.VERSION = //p' "$lib/qt6/mkspecs/modules/qt_lib_fastconnect.pri" \
              2>/dev/null || true)
[ "$pri_version" = "$version" ] ||
    fail "qt_lib_fastconnect.pri says version '$pri_version', the Qt it was built with is $version"
for f in "$lib/libQt6FastConnect.so" "$lib/libQt6FastConnect.so.$version" \
         "$inc/QtFastConnect/qfastconnect.h" "$inc/QtFastConnect/qfunnel.h" \
         "$inc/QtFastConnect/QFunnel" "$inc/QtFastConnect/QtFastConnect" \
         "$inc/QtFastConnect/$version/QtFastConnect/private/qfunnel_p.h" \
         "$lib/cmake/Qt6FastConnect/Qt6FastConnectConfig.cmake" \
         "$lib/qt6/mkspecs/modules/qt_lib_fastconnect.pri" \
         "$lib/qt6/mkspecs/modules/qt_lib_fastconnect_private.pri" \
         "$lib/pkgconfig/Qt6FastConnect.pc"; do
    [ -e "$f" ] || fail "not installed: ${f#"$stage"}"
done
# Qt <= 6.4 installs the metatypes into <libdir>/metatypes, later Qt into <libdir>/qt6/metatypes;
# Qt >= 6.11 leaves the build type out of the file name.
metatypes=$(find "$lib/metatypes" "$lib/qt6/metatypes" -maxdepth 1 \
                -name 'qt6fastconnect_*metatypes.json' 2>/dev/null || true)
[ -n "$metatypes" ] || fail "not installed: the module's metatypes JSON"
echo "consumers: install into $prefix (staged in $stage) is complete" >&2

# A CMake consumer of a module outside Qt's prefix names the package directory (Qt looks up its
# components with NO_DEFAULT_PATH, so CMAKE_PREFIX_PATH alone does not find it). It asks for
# the Qt minor version it runs on, find_package(Qt6 6.8 COMPONENTS Core FastConnect) on 6.8.x,
# which the module's package must accept.
cmake -S "$here/cmake" -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DQt6FastConnect_DIR="$lib/cmake/Qt6FastConnect" -DQT_VERSION_WANTED="${version%.*}" \
      >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/cmake_consumer" || fail "the CMake consumer failed"

# A qmake consumer of a module outside Qt's prefix adds the module's .pri directory and, as
# the .pri's paths are relative to Qt's own prefix, the installed include and library dirs.
mkdir -p "$work/qmake"
(cd "$work/qmake" &&
 QMAKEMODULES="$lib/qt6/mkspecs/modules" qmake6 "$here/qmake/qmake_consumer.pro" \
     "QT.fastconnect.includes=$inc $inc/QtFastConnect" "QT.fastconnect.libs=$lib" >/dev/null &&
 make -s >/dev/null)
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/qmake/qmake_consumer" \
    || fail "the qmake consumer failed"
echo "consumers: the CMake and the qmake application both received their funnel call" >&2
