#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# The benchmark report's connect-cost section (issue 37), for scripts/benchmark-report.sh
# --connect: tst_bench_connect's three experiments, each comparing funnel connections with
# Qt::QueuedConnection in the same run:
#   connectDisconnect     connect + disconnect by handle, 1,000 senders to 10 receivers and to a
#                         receiver each, typed and functor connections taking turns block by block
#   memoryPerConnection   heap per live connection (mallinfo2()), each row in a process of its own
#   destroyRace           Qt's tst_qobjectrace::destroyRace with every connection one or the
#                         other: the main thread's 1.9 M connects, the threads' run, peak RSS
#                         (medians of 3 runs each; 1 with --quick)
# Writes the Markdown section benchmarks/results/connect/connect.md
# (scripts/lib/benchmark-connect.py); raw output goes to benchmarks/results/raw/connect/.
# Usage: scripts/lib/benchmark-connect.sh BUILD-DIR [--quick] [--no-build]
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${1:?usage: $0 BUILD-DIR [--quick] [--no-build]}
shift
quick=0
dobuild=1
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        --no-build) dobuild=0 ;;
        *) echo "usage: $0 BUILD-DIR [--quick] [--no-build]" >&2; exit 2 ;;
    esac
done
raw=benchmarks/results/raw/connect
out=benchmarks/results/connect/connect.md
mkdir -p "$raw" "$(dirname "$out")"
rm -f "$raw/results.csv"
started=$SECONDS

if [[ $dobuild -eq 1 ]]; then
    echo "building tst_bench_connect in $build (Release)" >&2
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQT_BUILD_BENCHMARKS=ON \
          >"$raw/configure.log" 2>&1 || { tail -n 30 "$raw/configure.log" >&2; exit 1; }
    cmake --build "$build" --target tst_bench_connect >"$raw/build.log" 2>&1 ||
        { tail -n 30 "$raw/build.log" >&2; exit 1; }
fi
bench=$build/benchmarks/connect/tst_bench_connect
[[ -x $bench ]] || { echo "error: $bench not built" >&2; exit 1; }

echo "running tst_bench_connect (connect + disconnect, memory, destroyRace)" >&2
if [[ $quick -eq 1 ]]; then
    export QFC_BENCH_QUICK=1 QFC_BENCH_REPEAT=1
else
    unset QFC_BENCH_QUICK
    export QFC_BENCH_REPEAT=3
fi
QFC_BENCH_CSV=$PWD/$raw/results.csv "$bench" >"$raw/tst_bench_connect.log" 2>&1 ||
    { tail -n 30 "$raw/tst_bench_connect.log" >&2; exit 1; }

{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "mode=$([[ $quick -eq 1 ]] && echo quick || echo full)"
    echo "seconds=$((SECONDS - started))"
    echo "cores=$(nproc)"
    echo "load=$(cut -d ' ' -f 1-3 /proc/loadavg)"
    echo "qt=$(qmake6 -query QT_VERSION 2>/dev/null || echo unknown)"
    echo "compiler=$(c++ --version | head -n 1)"
    # The report's own files do not count as changes: they are what this run rewrites.
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . ':(exclude)benchmarks/results' 2>/dev/null || echo '+changes')"
} >"$raw/machine.txt"
python3 scripts/lib/benchmark-connect.py "$raw" "$out"
