#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs a Windows program of the MinGW-w64 build under Wine: the emulator ctest starts each test
# with (CMAKE_CROSSCOMPILING_EMULATOR, set by scripts/lib/mingw-w64.cmake). The DLLs are found
# through WINEPATH: the build's bin/ (Qt6FastConnect.dll), Qt's and oneTBB's bin/ in the
# MinGW prefix (scripts/lib/mingw-deps.sh) and the MinGW runtime (libstdc++, libgcc_s,
# libwinpthread). The Wine prefix lives in the build directory and is made on first use.
#   QFC_WINE_BUILD   the build directory      QFC_MINGW_PREFIX   Qt's and oneTBB's prefix
# Usage: scripts/lib/wine-run.sh PROGRAM.exe [ARG...]
set -euo pipefail
: "${QFC_WINE_BUILD:?}" "${QFC_MINGW_PREFIX:?}"
export WINEPREFIX=$QFC_WINE_BUILD/wineprefix
export WINEDEBUG=-all
# No Mono or Gecko installer dialogs: nothing here needs .NET or a browser engine.
export WINEDLLOVERRIDES="mscoree,mshtml="
dirs=("$QFC_WINE_BUILD/bin" "$QFC_MINGW_PREFIX/bin" /usr/x86_64-w64-mingw32/lib
      /usr/lib/gcc/x86_64-w64-mingw32/12-posix)
WINEPATH=$(printf 'Z:%s;' "${dirs[@]}")
export WINEPATH
# Made on first use. Qt on Windows logs to the debugger (OutputDebugString), QTest's output
# included, unless the program has a console, which Wine's pipes to ctest are not;
# QT_FORCE_STDERR_LOGGING sends it to stdout and stderr. Wine passes no QT_* variable on from
# Linux: it is set in the prefix's user environment. No crash dialog: a crash is reported on
# stderr, and the test fails.
make_prefix() {
    wineboot --init &&
        wine reg add 'HKCU\Environment' /v QT_FORCE_STDERR_LOGGING /t REG_SZ /d 1 /f &&
        wine reg add 'HKCU\Software\Wine\WineDbg' /v ShowCrashDialog /t REG_DWORD /d 0 /f &&
        wineserver --wait && touch "$WINEPREFIX/.qtfastconnect-ready"
}
if [[ ! -e $WINEPREFIX/.qtfastconnect-ready ]]; then
    (flock 9; [[ -e $WINEPREFIX/.qtfastconnect-ready ]] || make_prefix >/dev/null 2>&1) \
        9>"$QFC_WINE_BUILD/.wineprefix.lock"
fi
exec wine "$@"
