#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds the benchmarks (Release), runs every experiment with machine-readable output and writes
# benchmarks/results/REPORT.md plus SVG charts (gnuplot) next to it. Raw output (CSV lines of
# every binary, logs, callgrind files) goes to benchmarks/results/raw/, which git ignores.
#
#   1 one producer, every path          tst_bench_funnel oneProducer + callgrind-per-call.sh
#     per thread, receiver ceiling      callgrind-per-thread.sh (instructions per call on the
#                                       producer, relay and receiver threads; the receiver
#                                       thread's CPU time per call: tst_bench_funnel
#                                       --receiver-cost)
#   2 many producers -> main thread     tst_bench_manyproducers
#   3 copies, payload size, latency     tst_bench_payload (when the tree has benchmarks/payload)
#   4 allocator                         allocator-comparison.sh (tst_bench_poolallocator)
#   5 ping-pong round trip              tst_bench_pingpong
#   6 timer lateness, paced flood       tst_bench_pacedflood
#   7 responsiveness, unpaced flood     tst_bench_responsiveness (Qt Widgets, offscreen; each
#                                       row in its own process; full mode also with one busy
#                                       process competing; QFC_BENCH_REPEAT=N repeats)
#   8 rows into a model/view            tst_bench_modelview (Qt Widgets and Concurrent, Linux;
#                                       each row in its own process, medians of 3)
#   9 connect cost                      tst_bench_connect, with --connect (a section of its own,
#                                       kept by a full run)
#
# Usage: scripts/benchmark-report.sh [--quick] [--build-dir DIR] [--no-build] [--skip LIST]
#        scripts/benchmark-report.sh --qt 6.4|6.8|newest [--quick]
#        scripts/benchmark-report.sh --platform windows|arm64|armhf
#        scripts/benchmark-report.sh --connect [--quick] [--build-dir DIR] [--no-build]
#   --quick          fewer threads, shorter passes, fewer callgrind runs: under 3 minutes on
#                    2 cores once the build is done
#   --build-dir DIR  the Release build to use or create (default: build-bench)
#   --no-build       use DIR as it is
#   --skip LIST      comma-separated experiments to leave out: one-producer, many-producers,
#                    ping-pong, paced-flood, responsiveness, responsiveness-busy, modelview,
#                    payload, callgrind, per-thread, allocator (the report keeps only what ran: do not
#                    commit a REPORT.md made with --skip)
#   --qt VERSION     only the key rows (1 and 32 producers: funnel ÷ Qt queued calls/s;
#                    instructions per call: funnel, invoke, Qt queued, direct) against that Qt:
#                    6.4 the host's, 6.8 and newest in the Debian roots of scripts/qt-root.sh
#                    (as scripts/run-tests.sh --qt). They become that version's section of
#                    REPORT.md (benchmarks/results/qt-versions/, scripts/lib/benchmark-qt-version.sh);
#                    a full run keeps those sections.
#   --platform NAME  windows, arm64 or armhf: hashfunnel's table and tst_bench_relayround under
#                    Wine or qemu-user, from that platform's CI build (build-NAME); that
#                    platform's section of REPORT.md (benchmarks/results/platforms/,
#                    scripts/lib/benchmark-platform.sh), kept by a full run. Emulated: not
#                    performance figures.
#   --connect        connect + disconnect time and memory per connection, typed and functor,
#                    and Qt's destroyRace, funnel beside Qt queued (tst_bench_connect, Release,
#                    scripts/lib/benchmark-connect.sh): section 9 of REPORT.md
#                    (benchmarks/results/connect/), kept by a full run. About 5 minutes.
#
# Compare rows of one run only: every table is a ratio against plain Qt measured in the same
# run. gnuplot is installed with apt-get (package gnuplot-nox) when missing and run as root.

set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: $0 [--quick] [--build-dir DIR] [--no-build] [--skip LIST] | --qt 6.4|6.8|newest [--quick]" \
         "| --platform windows|arm64|armhf | --connect [--quick] [--build-dir DIR] [--no-build]" >&2
    exit 2
}

quick=0
build=build-bench
dobuild=1
skip=","
qt=""
platform=""
connect=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1 ;;
        --build-dir) [[ $# -ge 2 ]] || usage; build="$2"; shift ;;
        --no-build) dobuild=0 ;;
        --skip) [[ $# -ge 2 ]] || usage; skip=",$2,"; shift ;;
        --qt) [[ $# -ge 2 ]] || usage; qt="$2"; shift ;;
        --platform) [[ $# -ge 2 ]] || usage; platform="$2"; shift ;;
        --connect) connect=1 ;;
        -h|--help) usage ;;
        *) echo "error: unknown argument $1" >&2; usage ;;
    esac
    shift
done
skipped() { [[ "$skip" == *",$1,"* ]]; }

if [[ -n "$platform" ]]; then
    case "$platform" in windows|arm64|armhf) ;; *) usage ;; esac
    scripts/lib/benchmark-platform.sh "$platform"
    python3 scripts/lib/benchmark-sections.py benchmarks/results platforms
    echo "wrote the $platform section of benchmarks/results/REPORT.md" >&2
    exit 0
fi

if [[ $connect -eq 1 ]]; then
    connect_args=("$build")
    [[ $quick -eq 1 ]] && connect_args+=(--quick)
    [[ $dobuild -eq 0 ]] && connect_args+=(--no-build)
    scripts/lib/benchmark-connect.sh "${connect_args[@]}"
    python3 scripts/lib/benchmark-sections.py benchmarks/results connect
    echo "wrote the connect-cost section of benchmarks/results/REPORT.md" >&2
    exit 0
fi

if [[ -n "$qt" ]]; then
    case "$qt" in
        6.4) root="" ;;
        6.8) root=trixie ;;
        newest) root=sid ;;
        *) usage ;;
    esac
    # The root sees the tree but not a worktree's git directory: name the commit here.
    QFC_COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo '+changes')"
    export QFC_COMMIT
    version_args=("$qt")
    [[ $quick -eq 1 ]] && version_args+=(--quick)
    if [[ -n "$root" ]]; then
        scripts/qt-root.sh "$root" scripts/lib/benchmark-qt-version.sh "${version_args[@]}"
    else
        scripts/lib/benchmark-qt-version.sh "${version_args[@]}"
    fi
    python3 scripts/lib/benchmark-sections.py benchmarks/results
    echo "wrote the Qt $qt section of benchmarks/results/REPORT.md" >&2
    exit 0
fi

results=benchmarks/results
raw=$results/raw
mkdir -p "$raw"
csv=$raw/results.csv
rm -f "$csv" "$raw"/*.log "$raw"/*.txt "$raw"/responsiveness-frames.csv
started=$(date +%s)

if ! command -v gnuplot >/dev/null 2>&1; then
    if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "installing gnuplot-nox" >&2
        apt-get install -y gnuplot-nox >"$raw/apt-get.log" 2>&1 ||
            { apt-get update >>"$raw/apt-get.log" 2>&1 &&
              apt-get install -y gnuplot-nox >>"$raw/apt-get.log" 2>&1; } ||
            echo "note: could not install gnuplot-nox; the report will have no charts" >&2
    else
        echo "note: gnuplot not found (apt-get install gnuplot-nox); no charts" >&2
    fi
fi

targets=(tst_bench_funnel tst_bench_manyproducers tst_bench_pingpong tst_bench_pacedflood
         tst_bench_responsiveness tst_bench_modelview tst_bench_poolallocator)
[[ -d benchmarks/payload ]] && ! skipped payload && targets+=(tst_bench_payload)
if [[ $dobuild -eq 1 ]]; then
    echo "building ${targets[*]} in $build (Release)" >&2
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQT_BUILD_BENCHMARKS=ON \
          >"$raw/configure.log" 2>&1 || { tail -n 30 "$raw/configure.log" >&2; exit 1; }
    cmake --build "$build" --target "${targets[@]}" >"$raw/build.log" 2>&1 ||
        { tail -n 30 "$raw/build.log" >&2; exit 1; }
fi

export QFC_BENCH_CSV="$PWD/$csv"
if [[ $quick -eq 1 ]]; then
    export QFC_BENCH_QUICK=1
fi

# run <name> <binary> [args...]: a failed run is reported and noted, the others still run.
failures=()
run() {
    local name="$1" binary="$2"
    shift 2
    if skipped "$name"; then
        echo "skipping $name" >&2
        return 0
    fi
    echo "running $name" >&2
    if [[ ! -x "$binary" ]]; then
        echo "note: $binary missing; $name skipped" >&2
        failures+=("$name (not built)")
        return 0
    fi
    if ! "$binary" "$@" >"$raw/$name.log" 2>&1; then
        echo "error: $name failed, see $raw/$name.log" >&2
        failures+=("$name")
    fi
}

if [[ $quick -eq 1 ]]; then
    run one-producer "$build/benchmarks/funnel/tst_bench_funnel" oneProducer idleLatency
else
    run one-producer "$build/benchmarks/funnel/tst_bench_funnel"
fi
run many-producers "$build/benchmarks/manyproducers/tst_bench_manyproducers"
run ping-pong "$build/benchmarks/pingpong/tst_bench_pingpong"
run paced-flood "$build/benchmarks/pacedflood/tst_bench_pacedflood"
# Every frame of the first repetition goes to the paint-interval chart; the busy run (one extra
# process spinning, as another application would) is too long for --quick.
QFC_BENCH_FRAMES="$PWD/$raw/responsiveness-frames.csv" \
    run responsiveness "$build/benchmarks/responsiveness/tst_bench_responsiveness"
if [[ $quick -eq 0 ]]; then
    QFC_BENCH_BUSY=1 \
        run responsiveness-busy "$build/benchmarks/responsiveness/tst_bench_responsiveness"
fi
run modelview "$build/benchmarks/modelview/tst_bench_modelview"

if [[ -d benchmarks/payload ]] && ! skipped payload; then
    # Issue 4's benchmark: its QTest CSV (one line per data tag) is read as it is.
    run payload "$build/benchmarks/payload/tst_bench_payload" -o "$PWD/$raw/payload.csv,csv" \
        -o -,txt
fi

if ! skipped callgrind; then
    echo "running callgrind-per-call.sh" >&2
    rm -rf "$raw/callgrind"
    if [[ $quick -eq 1 ]]; then cg=(-n 20000 -r 1); else cg=(-n 100000 -r 3); fi
    if scripts/callgrind-per-call.sh "${cg[@]}" -k "$raw/callgrind" -c "$csv" "$build" \
            >"$raw/callgrind.txt" 2>&1; then
        # Inclusive cost per function of the funnel's N and 2N runs: their difference divided
        # by N is each function's share of one delivered call, start-up cancelled.
        n=${cg[1]}
        echo "$n" >"$raw/callgrind-funnel.calls"
        for calls in "$n" $((2 * n)); do
            callgrind_annotate --inclusive=yes --threshold=100 \
                "$raw/callgrind/callgrind.funnel.$calls.1.out" \
                >"$raw/callgrind-funnel.$calls.txt" 2>&1 || true
        done
    else
        echo "error: callgrind-per-call.sh failed, see $raw/callgrind.txt" >&2
        failures+=("callgrind")
    fi
fi

if ! skipped per-thread; then
    # Instructions per call on each thread (callgrind --separate-threads=yes) and the receiver
    # thread's ceiling in calls/s; its out files, and which thread each is, stay in per-thread/.
    echo "running callgrind-per-thread.sh" >&2
    rm -rf "$raw/per-thread"
    if [[ $quick -eq 1 ]]; then pt=(-n 20000 -r 1); else pt=(-n 100000 -r 3); fi
    scripts/callgrind-per-thread.sh "${pt[@]}" -k "$raw/per-thread" -c "$csv" "$build" \
        >"$raw/per-thread.txt" 2>&1 || {
        echo "error: callgrind-per-thread.sh failed, see $raw/per-thread.txt" >&2
        failures+=("per-thread")
    }
fi

if ! skipped allocator; then
    echo "running allocator-comparison.sh" >&2
    rm -rf "$raw/allocator"
    if [[ $quick -eq 1 ]]; then rounds=1; else rounds=3; fi
    scripts/allocator-comparison.sh --repeat "$rounds" --keep "$raw/allocator" "$build" \
        >"$raw/allocator.txt" 2>"$raw/allocator.log" || {
        echo "error: allocator-comparison.sh failed, see $raw/allocator.log" >&2
        failures+=("allocator")
    }
fi

printf '%s\n' "${failures[@]}" >"$raw/failures.txt"
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "mode=$([[ $quick -eq 1 ]] && echo quick || echo full)"
    echo "seconds=$(($(date +%s) - started))"
    echo "cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)"
    echo "cores=$(nproc)"
    echo "load=$(cut -d ' ' -f 1-3 /proc/loadavg)"
    echo "kernel=$(uname -r)"
    echo "qt=$(qtpaths6 --qt-version 2>/dev/null || echo unknown)"
    echo "tbb=$(dpkg-query -W -f='${Version}' libtbb-dev 2>/dev/null || echo unknown)"
    echo "compiler=$(c++ --version | head -n 1)"
    echo "dispatcher=$([[ -n "${QT_NO_GLIB:-}" ]] && echo 'UNIX (QT_NO_GLIB)' || echo 'glib (default)')"
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo '+changes')"
} >"$raw/machine.txt"

python3 scripts/lib/benchmark-report.py "$raw" "$results"
python3 scripts/lib/benchmark-sections.py "$results" connect
python3 scripts/lib/benchmark-sections.py "$results"
python3 scripts/lib/benchmark-sections.py "$results" platforms
echo "wrote $results/REPORT.md ($(($(date +%s) - started)) s)" >&2
