#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# One platform stage of CI (scripts/run-tests.sh --platform NAME): the module, its tests and
# examples built (RelWithDebInfo) and every ctest test run, two at a time, on a platform other
# than the host's GCC for x86-64 (which scripts/lib/run-suite.sh covers, sanitizers included).
#   clang    the host's clang with libstdc++, warnings as errors; libc++ is not built: Debian's
#            Qt and oneTBB are libstdc++ builds, and the module does not link against them
#            with libc++ (QObjectPrivate::flagsForDumping() returns a std::string)
#   i386     32-bit x86: natively in a Debian 12 i386 root (scripts/qt-root.sh bookworm-i386)
#            where the kernel runs 32-bit x86 code; where it does not (its 32-bit emulation off,
#            as on some virtual machines), cross-compiled as the ARM stages are, with the tests
#            under Debian 13's qemu-i386 and their child processes through binfmt_misc
#            (scripts/lib/binfmt-i386.sh): emulating the whole build would take hours
#   arm64, armhf
#            64-bit and 32-bit ARM: cross-compiled with Debian's cross compilers against a
#            Debian 12 root of that architecture, unpacked (not installed: no emulated
#            maintainer scripts) as the sysroot and cached like the other roots; the tests run
#            under Debian 13's qemu-user (scripts/lib/qemu-user.sh): Debian 12's refuses the
#            clone() flags of QProcess. A child process a test starts runs through the kernel's
#            binfmt_misc handler for ARM; where none is registered (or only qemu 7.2 is at hand)
#            those tests skip, saying why. qemu-user runs ARM code with x86's strong memory
#            order: ThreadSanitizer on x86-64 stays the proof for memory orders.
#   windows  64-bit Windows: cross-compiled with Debian's MinGW-w64 GCC against Qt (QtCore,
#            QtTest) and oneTBB built from Debian's sources by scripts/lib/mingw-deps.sh (once,
#            cached like the roots); the tests run under Wine (scripts/lib/wine-run.sh), Qt's
#            Windows event dispatcher (QEventDispatcherWin32) included. Qt's Gui and Widgets are
#            not built there, so the GUI demo and its test are Linux-only; MSVC is not checked.
# The last line of output, also written to --summary FILE, is e.g.
# "platform i386: Qt 6.4.2, g++ 12.2.0: tests 17/17 (301 s)".
# Usage: scripts/lib/run-platform.sh [--summary FILE] clang|i386|windows|arm64|armhf
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/host-mirror.sh
source scripts/lib/ctest-failures.sh

summary_file=""
platform=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --summary) summary_file=$2; shift ;;
        clang|i386|arm64|armhf|windows) platform=$1 ;;
        *) platform="" ; break ;;
    esac
    shift
done
[[ -n "$platform" ]] ||
    { echo "usage: $0 [--summary FILE] clang|i386|windows|arm64|armhf" >&2; exit 2; }
started=$SECONDS

finish() {  # status what
    local line="platform $platform: $2 ($((SECONDS - started)) s)"
    if [[ -n "$summary_file" ]]; then
        mkdir -p "$(dirname "$summary_file")"
        echo "$line" >"$summary_file"
    fi
    echo "$line"
    exit "$1"
}

# cross_sysroot DEBIAN-ARCH MULTIARCH: the path of a Debian 12 root of that architecture with
# Qt's and oneTBB's development files, unpacked once (about 15 s) and cached.
cross_sysroot() {
    local arch=$1 multiarch=$2 roots=${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots} mirror
    local root=$roots/bookworm-$arch-sysroot
    if [[ ! -e "$root/usr/lib/$multiarch/cmake/Qt6/Qt6Config.cmake" ]]; then
        # set -e does not act in here (the caller tests the status): the failure returns itself.
        mirror=$(host_mirror) || return 1
        mkdir -p "$roots"
        rm -rf "$root.partial"
        mmdebstrap --variant=extract --architectures="$arch" \
            --include=qt6-base-dev,qt6-base-private-dev,libtbb-dev,libstdc++-12-dev,libc6-dev \
            --aptopt='Acquire::Check-Valid-Until "false"' \
            bookworm "$root.partial" "$mirror" >"$roots/bookworm-$arch-sysroot.log" 2>&1 ||
            { tail -n 20 "$roots/bookworm-$arch-sysroot.log" >&2; return 1; }
        mv "$root.partial" "$root"
    fi
    echo "$root"
}

# cross_stage DEBIAN-ARCH TRIPLE MULTIARCH QEMU: builds against that architecture's sysroot with
# Debian's TRIPLE-g++ and runs the tests under Debian 13's qemu-user QEMU (qemu-aarch64, ...);
# finishes the stage.
cross_stage() {
    local arch=$1 triple=$2 multiarch=$3 qemu_name=$4 root qemu_dir qemu what skipped log
    root=$(cross_sysroot "$arch" "$multiarch") || finish 1 "sysroot FAILED"
    # Debian 13's qemu-user where it can be fetched (it starts child processes; 7.2 cannot).
    qemu_args=()
    if qemu_dir=$(scripts/lib/qemu-user.sh); then
        qemu_args=(-DQFC_QEMU_DIR="$qemu_dir")
        qemu=$("$qemu_dir/$qemu_name" --version)
    else
        echo "Debian 13's qemu-user could not be fetched: Debian 12's 7.2, which cannot start" \
             "child processes" >&2
        qemu=$("$qemu_name-static" --version)
    fi
    qemu=$(sed -n '1s/.*version \([0-9.]*\).*/qemu-user \1/p' <<<"$qemu")
    what="Qt $(sed -n 's/.*PACKAGE_VERSION "\(.*\)".*/\1/p' \
        "$root/usr/lib/$multiarch/cmake/Qt6Core/Qt6CoreConfigVersionImpl.cmake" | head -n 1)"
    what+=", $triple-g++ $("$triple-g++" -dumpfullversion), tests under $qemu"
    status=0
    # The host's Qt tools (moc, ...) serve the cross build: the host's Qt is the root's version.
    QFC_EMULATOR=$qemu build_and_test "build-$platform" \
        -DCMAKE_TOOLCHAIN_FILE="$PWD/scripts/lib/cross-linux.cmake" -DQFC_CROSS_TRIPLE="$triple" \
        -DQFC_CROSS_SYSROOT="$root" "${qemu_args[@]}" -DQT_HOST_PATH=/usr \
        -DQT_HOST_PATH_CMAKE_DIR="/usr/lib/$(gcc -print-multiarch)/cmake" || status=1
    log=build-$platform/Testing/Temporary/LastTest.log
    if [[ -f $log ]]; then
        skipped=$(grep -c '^SKIP .*cannot start child processes' "$log" || true)
        result+=" ($skipped test rows that start a child process skipped)"
    fi
    finish $status "$what: $result"
}

# build_and_test BUILD-DIR CMAKE-ARG...: configure, build, ctest; sets $result.
build_and_test() {
    local dir=$1 log counts status=0
    shift
    source scripts/lib/ccache.sh
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQT_BUILD_TESTS=ON \
          -DQT_BUILD_EXAMPLES=ON "${ccache_cmake_args[@]}" "$@" >/dev/null ||
        { result="configure FAILED"; return 1; }
    cmake --build "$dir" --parallel "$(nproc)" || { result="build FAILED"; return 1; }
    log=$dir/ctest-summary.log
    # As many tests at a time as cores: they must pass beside a busy neighbour anyway.
    ctest --test-dir "$dir" --output-on-failure --timeout 600 -j "$(nproc)" 2>&1 | tee "$log" ||
        status=$?
    counts=$(sed -n 's/.* tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$log")
    [[ -n "$counts" ]] || { result="tests FAILED"; return 1; }
    result="tests $(( ${counts#* } - ${counts% *} ))/${counts#* }"
    [[ $status -eq 0 ]] || {
        result+=" FAILED (failed: $(ctest_failed "$log"))"
        ctest_keep_failures "$log" "platform $platform" "${summary_file:+${summary_file%.txt}-failed.log}"
        return 1
    }
}

case "$platform" in
clang)
    scripts/install-deps.sh clang
    qt=$(qmake6 -query QT_VERSION)
    what="Qt $qt, $(clang++ --version | sed -n '1s/.*clang version \([0-9.]*\).*/clang \1/p') with libstdc++, -Werror"
    status=0
    CC=clang CXX=clang++ build_and_test build-clang -DCMAKE_CXX_FLAGS=-Werror \
        -DCMAKE_C_FLAGS=-Werror || status=1
    finish $status "$what: $result; libc++ not built (Debian's Qt and oneTBB are libstdc++ builds)"
    ;;
i386)
    if [[ "${QFC_QT_ROOT:-}" != bookworm-i386 ]]; then
        scripts/install-deps.sh arch-test
        if ! arch-test -n i386 >/dev/null 2>&1; then
            # No i386 code runs natively here: cross-compiled, tests under qemu-i386, their
            # child processes through the handler binfmt-i386.sh registers (or they skip).
            scripts/install-deps.sh g++-i686-linux-gnu mmdebstrap
            scripts/lib/binfmt-i386.sh >/dev/null ||
                echo "no binfmt_misc handler for i386: tests that start a child process skip" >&2
            cross_stage i386 i686-linux-gnu i386-linux-gnu qemu-i386
        fi
        # Enter the root and run this stage there; the summary comes from inside.
        exec scripts/qt-root.sh bookworm-i386 scripts/lib/run-platform.sh \
            ${summary_file:+--summary "$summary_file"} i386
    fi
    scripts/install-deps.sh
    what="Qt $(qmake6 -query QT_VERSION), g++ $(g++ -dumpfullversion), $(getconf LONG_BIT)-bit"
    status=0
    build_and_test build-bookworm-i386-tests || status=1
    finish $status "$what: $result"
    ;;
arm64|armhf)
    if [[ $platform == arm64 ]]; then triple=aarch64-linux-gnu; else triple=arm-linux-gnueabihf; fi
    # binfmt-support registers qemu-user-static's emulators with the kernel: the handler that
    # runs the ARM child processes the tests start.
    scripts/install-deps.sh "g++-$triple" qemu-user-static binfmt-support mmdebstrap arch-test
    if [[ $platform == arm64 ]]; then
        cross_stage arm64 "$triple" "$triple" qemu-aarch64
    else
        cross_stage armhf "$triple" "$triple" qemu-arm
    fi
    ;;
windows)
    scripts/install-deps.sh g++-mingw-w64-x86-64-posix wine wine64
    prefix=$(scripts/lib/mingw-deps.sh) || finish 1 "Qt and oneTBB for MinGW-w64 FAILED"
    what="Qt $(qmake6 -query QT_VERSION) and oneTBB built for x86_64-w64-mingw32"
    what+=", x86_64-w64-mingw32-g++ $(x86_64-w64-mingw32-g++-posix -dumpfullversion)"
    what+=", tests under $(wine --version)"
    status=0
    # The benchmarks too: tst_bench_relayround measures the relay round and flush() under Wine.
    build_and_test build-windows -DCMAKE_TOOLCHAIN_FILE="$PWD/scripts/lib/mingw-w64.cmake" \
        -DQFC_MINGW_PREFIX="$prefix" -DQT_BUILD_BENCHMARKS=ON -DQT_HOST_PATH=/usr \
        -DQT_HOST_PATH_CMAKE_DIR="/usr/lib/$(gcc -print-multiarch)/cmake" || status=1
    # Stop the Wine server the tests started: it would outlive the stage.
    WINEPREFIX=$PWD/build-windows/wineprefix wineserver -k 2>/dev/null || true
    finish $status "$what: $result"
    ;;
esac
