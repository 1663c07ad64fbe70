#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# What the main example and the relay look like on an emulated platform, for
# scripts/benchmark-report.sh --platform NAME: hashfunnel's table (the module's own library as
# input, as its CI test hashes it) and tst_bench_relayround (the relay round's real length,
# flush()'s latency), run under Wine (windows) or qemu-user (arm64, armhf) from the build that
# platform's CI stage made (build-NAME; scripts/run-tests.sh --platform NAME makes it). Under
# emulation these are not performance figures: they show that the code runs there, and the
# order of magnitude of the relay's timers through the emulator.
# Writes the Markdown section benchmarks/results/platforms/NAME.md; raw output goes to
# benchmarks/results/raw/platform-NAME/.
# Usage: scripts/lib/benchmark-platform.sh windows|arm64|armhf
set -euo pipefail
cd "$(dirname "$0")/../.."

platform=${1:-}
build=build-$platform
roots=${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}
case "$platform" in
windows)
    exe=.exe
    prefix=$(scripts/lib/mingw-deps.sh)
    emulator=(env "QFC_WINE_BUILD=$PWD/$build" "QFC_MINGW_PREFIX=$prefix" scripts/lib/wine-run.sh)
    input=$build/bin/Qt6FastConnect.dll
    how="MinGW-w64 g++ $(x86_64-w64-mingw32-g++-posix -dumpfullversion), under $(wine --version)"
    ;;
arm64|armhf)
    exe=
    if [[ $platform == arm64 ]]; then qemu=qemu-aarch64; else qemu=qemu-arm; fi
    qemu=$(scripts/lib/qemu-user.sh)/$qemu
    emulator=("$qemu" -L "$roots/bookworm-$platform-sysroot")
    input=$(find "$build/lib" -name 'libQt6FastConnect.so.*.*.*' | head -n 1)
    how="cross-compiled, under $("$qemu" --version | sed -n '1s/.*version \([0-9.]*\).*/qemu-user \1/p')"
    ;;
*)
    echo "usage: $0 windows|arm64|armhf" >&2
    exit 2
    ;;
esac
[[ -f $build/CMakeCache.txt ]] ||
    { echo "$build is not configured: run scripts/run-tests.sh --platform $platform first" >&2; exit 1; }

raw=benchmarks/results/raw/platform-$platform
out=benchmarks/results/platforms/$platform.md
mkdir -p "$raw" "$(dirname "$out")"
echo "building hashfunnel and tst_bench_relayround in $build" >&2
cmake "$build" -DQT_BUILD_BENCHMARKS=ON >"$raw/configure.log" 2>&1 ||
    { tail -n 30 "$raw/configure.log" >&2; exit 1; }
cmake --build "$build" --target hashfunnel tst_bench_relayround >"$raw/build.log" 2>&1 ||
    { tail -n 30 "$raw/build.log" >&2; exit 1; }

echo "running hashfunnel under the emulator" >&2
"${emulator[@]}" "$build/examples/fastconnect/hashfunnel/hashfunnel$exe" --threads 1,4,32 \
    --block-size 256 --min-seconds 0.5 "$input" 2>"$raw/hashfunnel.log" | tr -d '\r' \
    >"$raw/hashfunnel.txt" || { tail -n 30 "$raw/hashfunnel.log" >&2; exit 1; }
echo "running tst_bench_relayround under the emulator" >&2
"${emulator[@]}" "$build/benchmarks/relayround/tst_bench_relayround$exe" 2>&1 | tr -d '\r' \
    >"$raw/relayround.txt"
grep -q '^Totals: .* 0 failed' "$raw/relayround.txt" ||
    { tail -n 30 "$raw/relayround.txt" >&2; exit 1; }

{
    echo "### $platform"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $how," \
         "on a $(nproc)-core x86-64 host."
    echo
    echo "hashfunnel (the module's library, $(stat -c %s "$input") bytes, in 256-byte blocks):"
    echo
    echo '```'
    cat "$raw/hashfunnel.txt"
    echo '```'
    echo
    echo "tst_bench_relayround:"
    echo
    echo '```'
    sed -n 's/^QINFO  : tst_BenchRelayRound:://p' "$raw/relayround.txt"
    echo '```'
} >"$out"
cat "$out"
