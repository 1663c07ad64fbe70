#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds QtFastConnect with its tests, examples and benchmarks and runs every test (ctest),
# installs it into a staging directory and builds and runs a CMake and a qmake application
# against that install, builds the documentation (any qdoc warning fails), builds the module
# once more with qmake (qt_module.pro) and runs a test against that build, then runs the suite
# under AddressSanitizer + UndefinedBehaviorSanitizer and the concurrency tests under
# ThreadSanitizer. --no-sanitizers skips the sanitizer runs (a quicker developer loop).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=1
[ "${1:-}" = "--no-sanitizers" ] && sanitizers=0

scripts/install-deps.sh --docs

configure() {  # build-dir extra-cmake-args...
    local dir=$1; shift
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DCMAKE_INSTALL_PREFIX="$PWD/stage-$dir" -DQT_BUILD_TESTS=ON "$@" >/dev/null
}

echo "== tests" >&2
configure build-tests -DQT_BUILD_EXAMPLES=ON -DQT_BUILD_BENCHMARKS=ON
cmake --build build-tests
ctest --test-dir build-tests --output-on-failure --timeout 600

echo "== install, and CMake and qmake applications built against the install" >&2
tests/consumers/run.sh build-tests

echo "== documentation (qdoc, no warnings allowed)" >&2
cmake --build build-tests --target docs

echo "== qmake build of the module (qt_module.pro), and tst_qfunnel against it" >&2
rm -rf build-qmake && mkdir build-qmake
(cd build-qmake && qmake6 ../qt_module.pro >/dev/null && make -s -j"$(nproc)" >/dev/null &&
 make -s sub-tst_qfunnel >/dev/null && make -s -C tests/auto/qfunnel check)

[ $sanitizers -eq 1 ] || exit 0

# UBSan's vptr check needs the typeinfo of Qt's unexported private classes.
asan="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer"
echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (leak check at exit)" >&2
configure build-asan "-DCMAKE_CXX_FLAGS=$asan" "-DCMAKE_C_FLAGS=$asan" \
          "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
          "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined"
cmake --build build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 900

echo "== concurrency tests under ThreadSanitizer" >&2
# Not tst_soak and tst_badinput: they make connections and move receivers while other threads
# emit, and Qt publishes connections and queued calls through its own, uninstrumented atomics,
# which ThreadSanitizer reports as races in the tests' own objects.
tsan_tests="tst_qfastconnect|tst_qfunnel|tst_qpoolallocator|tst_qfunnelpolicy|tst_copies|tst_conformance"
configure build-tsan "-DCMAKE_CXX_FLAGS=-fsanitize=thread" "-DCMAKE_C_FLAGS=-fsanitize=thread" \
          "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" \
          "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread"
cmake --build build-tsan
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan -R "^($tsan_tests)\$" --output-on-failure --timeout 900
