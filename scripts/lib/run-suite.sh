#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# The whole test suite against the one Qt of the system it runs on: the host, or a Debian root
# entered by scripts/qt-root.sh. scripts/run-tests.sh calls it once per Qt version.
#
#   tests      module and tests built (RelWithDebInfo), with the examples and benchmarks on the
#              host; every ctest test
#   consumers  staged install; a CMake and a qmake application built and run against it; an
#              application that takes the source tree with FetchContent (run-subproject.sh)
#   abi        Qt 6.4 only: the ABI of the public headers against the baseline in abi/
#              (scripts/abi-check.sh, abigail-tools)
#   docs       qdoc, any warning fails (scripts/run-tests.sh checks the comments first)
#   qmake      the qmake module build (qt_module.pro) and tst_qfunnel against it, where Qt still
#              has qmake's module support (Qt <= 6.4)
#   asan       every ctest test under AddressSanitizer + UndefinedBehaviorSanitizer
#   tsan       the concurrency tests under ThreadSanitizer (g++), with tests/tsan/clockjoin.c
#              preloaded where the runtime cannot join QThreads without it (not with --no-tsan)
# The ctest stages run as many tests at a time as there are cores: the tests must pass beside a
# busy neighbour anyway, and CI's time is mostly builds and waits.
#
# A failed stage ends the run; its entry names the failed tests, whose output is kept beside
# --summary FILE (qt-6.4.txt: qt-6.4-failed.log). A skipped stage says why. The last line of
# output, also written to --summary FILE, is e.g. "qt 6.8.2: tests 14/14, consumers ok, abi
# skipped (...), docs ok, ... (344 s)".
# Usage: scripts/lib/run-suite.sh [--no-sanitizers | --no-tsan] [--summary FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."

sanitizers=1
tsan=1
summary_file=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-sanitizers) sanitizers=0 ;;
        --no-tsan) tsan=0 ;;
        --summary) summary_file=$2; shift ;;
        *) echo "usage: $0 [--no-sanitizers | --no-tsan] [--summary FILE]" >&2; exit 2 ;;
    esac
    shift
done

# Build directories per system: build-tests on the host (as always), build-trixie-tests, ...
prefix=build${QFC_QT_ROOT:+-$QFC_QT_ROOT}
jobs=$(nproc)
started=$SECONDS

scripts/install-deps.sh --docs qmake6 make python3
source scripts/lib/ccache.sh
source scripts/lib/ctest-failures.sh
qt_version=$(qmake6 -query QT_VERSION)
results=()

finish() {  # status
    local line
    line="qt $qt_version: $(IFS=,; echo "${results[*]}" | sed 's/,/, /g') ($((SECONDS - started)) s)"
    if [[ -n "$summary_file" ]]; then
        mkdir -p "$(dirname "$summary_file")"
        echo "$line" >"$summary_file"
    fi
    echo "$line"
    exit "$1"
}
fail() {  # stage
    results+=("$1 FAILED")
    echo "== qt $qt_version: $1 failed" >&2
    finish 1
}
# record result: a stage that passed, with its time (configure, build and run) in seconds, so that
# the summary shows where CI's time goes.
step_started=$SECONDS
record() {  # result
    results+=("$1 ($((SECONDS - step_started)) s)")
    step_started=$SECONDS
}
skip() {  # stage short-reason [full-reason]
    step_started=$SECONDS
    results+=("$1 skipped ($2)")
    echo "== qt $qt_version: $1 skipped: ${3:-$2}" >&2
}

configure() {  # build-dir extra-cmake-args...
    local dir=$1; shift
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DCMAKE_INSTALL_PREFIX="$PWD/stage-${dir#build-}" -DQT_BUILD_TESTS=ON \
          "${ccache_cmake_args[@]}" "$@" >/dev/null
}

# ctest-stage name build-dir ctest-args...: runs ctest and records "name passed/total".
ctest_stage() {
    local name=$1 dir=$2; shift 2
    local log=$dir/ctest-summary.log status=0
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log" || status=$?
    local counts
    counts=$(sed -n 's/.* tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$log")
    if [[ $status -ne 0 || -z "$counts" ]]; then
        [[ -z "$counts" ]] ||
            results+=("$name $(( ${counts#* } - ${counts% *} ))/${counts#* } (failed: $(ctest_failed "$log"))")
        ctest_keep_failures "$log" "qt $qt_version $name" "${summary_file:+${summary_file%.txt}-failed.log}"
        fail "$name"
    fi
    record "$name $(( ${counts#* } - ${counts% *} ))/${counts#* }"
}

echo "== qt $qt_version: tests" >&2
# The examples and benchmarks with the host's Qt only: in the roots the ASan build has the
# examples (and runs the main one), and the benchmarks, tools of ours, are built against a
# root's Qt where scripts/benchmark-report.sh --qt measures with it.
# (Explicitly off: newer Qt builds a module's examples by default.)
examples_args=(-DQT_BUILD_EXAMPLES=ON -DQT_BUILD_BENCHMARKS=ON)
[[ -z "${QFC_QT_ROOT:-}" ]] || examples_args=(-DQT_BUILD_EXAMPLES=OFF -DQT_BUILD_BENCHMARKS=OFF)
configure "$prefix-tests" "${examples_args[@]}" || fail tests
cmake --build "$prefix-tests" --parallel "$jobs" || fail tests
ctest_stage tests "$prefix-tests" --timeout 600

echo "== qt $qt_version: install, and CMake and qmake applications built against the install" >&2
tests/consumers/run.sh "$prefix-tests" || fail consumers
# The subproject from a git clone too, once (with the host's Qt): the same build otherwise.
subproject_args=()
[[ -z "${QFC_QT_ROOT:-}" ]] && subproject_args+=(--git)
tests/consumers/run-subproject.sh "${subproject_args[@]}" "$prefix-subproject" || fail consumers
record "consumers ok"

# The ABI baseline (abi/) is the library's as built against the host's Qt 6.4: the module's ABI
# follows the Qt it is built with, so other Qt versions have none to compare with.
if [[ $qt_version == 6.4.* ]]; then
    echo "== qt $qt_version: ABI of the public headers against abi/ (scripts/abi-check.sh)" >&2
    scripts/abi-check.sh "$prefix-tests" || fail abi
    record "abi ok"
else
    skip abi "baseline is Qt 6.4's" "the ABI baseline in abi/ is that of the library built against Qt 6.4; the module's ABI follows the Qt it is built with"
fi

echo "== qt $qt_version: documentation (qdoc, no warnings allowed)" >&2
cmake --build "$prefix-tests" --target docs || fail docs
record "docs ok"

# Qt 6.5 removed qmake's module build support (qt_build_config.prf, qt_module.prf, syncqt.pl):
# qt_module.pro can only be built where it still exists.
features=$(qmake6 -query QT_HOST_DATA)/mkspecs/features
if [[ -e "$features/qt_build_config.prf" && -e "$features/qt_module.prf" ]]; then
    echo "== qt $qt_version: qmake build of the module (qt_module.pro), and tst_qfunnel against it" >&2
    rm -rf "$prefix-qmake" && mkdir "$prefix-qmake"
    (cd "$prefix-qmake" && qmake6 ../qt_module.pro >/dev/null && make -s -j"$jobs" >/dev/null &&
     make -s sub-tst_qfunnel >/dev/null && make -s -C tests/auto/qfunnel check) || fail "qmake module"
    record "qmake module ok"
else
    skip "qmake module" "Qt >= 6.5" "Qt $qt_version has no qmake module build support (qt_build_config.prf and qt_module.prf were removed in Qt 6.5); qmake applications are tested by the consumers stage"
fi

if [[ $sanitizers -eq 0 ]]; then
    skip asan "--no-sanitizers"
    skip tsan "--no-sanitizers"
    finish 0
fi

# UBSan's vptr check needs the typeinfo of Qt's unexported private classes.
asan="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer"
echo "== qt $qt_version: tests under AddressSanitizer + UndefinedBehaviorSanitizer (leak check at exit)" >&2
configure "$prefix-asan" -DQT_BUILD_EXAMPLES=ON "-DCMAKE_CXX_FLAGS=$asan" "-DCMAKE_C_FLAGS=$asan" \
          "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
          "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" || fail asan
cmake --build "$prefix-asan" --parallel "$jobs" || fail asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest_stage asan "$prefix-asan" --timeout 900
if [[ $tsan -eq 0 ]]; then
    skip tsan "--no-tsan"
    finish 0
fi

# tsan_probe [PRELOAD]: can g++'s ThreadSanitizer runtime start and join QThreads? GCC 16's (and
# clang 21's) cannot with Qt 6.11: QThread::wait() joins with pthread_clockjoin_np(), which they
# do not intercept, so the next thread that reuses the pthread_t aborts the runtime ("CHECK
# failed: sanitizer_thread_registry.cpp ... live_.try_emplace"). Preloading
# tests/tsan/clockjoin.c, which joins through the intercepted calls, closes that gap. Race
# reports are off in the probe: Qt's own code is not instrumented, and the tests judge races.
probe_dir=$prefix-tsan-probe
tsan_probe() {
    local preload=${1:-} cxx=g++
    mkdir -p "$probe_dir"
    cat >"$probe_dir/probe.cpp" <<'EOF'
#include <QtCore/qthread.h>
int main()
{
    for (int i = 0; i < 3; ++i) {
        QThread *t = QThread::create([] {});
        t->start();
        const bool joined = t->wait();
        delete t;
        if (!joined)
            return 1;
    }
    return 0;
}
EOF
    local inc lib
    inc=$(qmake6 -query QT_INSTALL_HEADERS)
    lib=$(qmake6 -query QT_INSTALL_LIBS)
    "$cxx" -std=c++17 -fPIC -fsanitize=thread -I"$inc" -I"$inc/QtCore" "$probe_dir/probe.cpp" \
        -L"$lib" -lQt6Core -o "$probe_dir/probe-${cxx##*/}" >"$probe_dir/${cxx##*/}.log" 2>&1 &&
        LD_PRELOAD=$preload TSAN_OPTIONS=report_bugs=0 "$probe_dir/probe-${cxx##*/}" \
            >>"$probe_dir/${cxx##*/}.log" 2>&1
}
first_error() { grep -m1 -i 'ThreadSanitizer\|error' "$1" 2>/dev/null || echo 'the probe failed'; }

echo "== qt $qt_version: concurrency tests under ThreadSanitizer" >&2
mkdir -p "$probe_dir"
shim=$PWD/$probe_dir/libclockjoin.so
gcc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$shim" tests/tsan/clockjoin.c || fail tsan
tsan_preload=""
if ! tsan_probe; then
    echo "ThreadSanitizer (g++ $(g++ -dumpfullversion)) cannot join QThreads here:" \
         "$(first_error "$probe_dir/g++.log")" >&2
    if ! tsan_probe "$shim"; then
        skip tsan "runtime cannot join QThreads" "g++ $(g++ -dumpfullversion)'s ThreadSanitizer runtime cannot start and join QThreads with Qt $qt_version, not even with tests/tsan/clockjoin.c preloaded: $(first_error "$probe_dir/g++.log") (see $probe_dir/g++.log)"
        finish 0
    fi
    echo "ThreadSanitizer with tests/tsan/clockjoin.c preloaded (pthread_clockjoin_np)" >&2
    tsan_preload=$shim
fi

# Not tst_soak and tst_badinput: they make connections and move receivers while other threads
# emit, and Qt publishes connections and queued calls through its own, uninstrumented atomics,
# which ThreadSanitizer reports as races in the tests' own objects. (tst_dropin moves receivers
# too, but hands every object over through atomics ThreadSanitizer sees.)
tsan_tests="tst_qfastconnect|tst_qfunnel|tst_qpoolallocator|tst_qfunnelpolicy|tst_copies|tst_conformance|tst_dropin|tst_receiverguard|tst_lifetime|tst_eventorder|tst_nextprocessing|tst_isolation|tst_causalorder|tst_batched"
configure "$prefix-tsan" "-DCMAKE_CXX_FLAGS=-fsanitize=thread" "-DCMAKE_C_FLAGS=-fsanitize=thread" \
          "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" \
          "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread" || fail tsan
# Only those tests (and what they start): a third of the build.
cmake --build "$prefix-tsan" --parallel "$jobs" --target ${tsan_tests//|/ } || fail tsan
LD_PRELOAD=$tsan_preload TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" \
    ctest_stage tsan "$prefix-tsan" -R "^($tsan_tests)\$" --timeout 900
[[ -z "$tsan_preload" ]] || results[${#results[@]}-1]+=" (clockjoin shim)"
finish 0
