#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Instructions per delivered call, all threads counted, for one producer thread delivering
# quint64 calls to a slot in the main thread: FunnelConnection, Qt::QueuedConnection,
# QMetaObject::invokeMethod queued and, as references, Qt::DirectConnection and a plain member
# call.
#
# Each path runs under callgrind for N and for 2N calls (tst_bench_funnel --deliver, after the
# same warm-up in both runs, so that the pool has carved its pages before either count); the
# difference of the two totals, divided by N, cancels start-up and shut-down costs. Valgrind
# serializes the threads, which leaves instruction counts meaningful (not timings).
#
# Usage: scripts/callgrind-per-call.sh [-n N] [-r R] [-k DIR] [-p PATHS] [-c CSV]
#                                      <build-dir | tst_bench_funnel>
#   -n N      calls in the shorter run (default 100000)
#   -r R      measure each path R times and report the median (default 3)
#   -k DIR    keep the callgrind out files in DIR (for callgrind_annotate)
#   -p PATHS  space-separated --deliver paths (default "funnel funnel-invoke queued invoke-queued direct plain")
#   -c CSV    also append "one-producer,<path>,1,8,instructions_per_call,<median>" lines to CSV

set -euo pipefail
source "$(dirname "$0")/lib/benchmark-run.sh"
source "$(dirname "$0")/lib/callgrind.sh"

usage() {
    echo "usage: $0 [-n N] [-r R] [-k DIR] <build-dir | path/to/tst_bench_funnel>" >&2
    exit 2
}

calls=100000
repeats=3
keep=""
paths="funnel funnel-invoke queued invoke-queued direct plain"
csv=""
while getopts "n:r:k:p:c:h" opt; do
    case "$opt" in
        n) calls="$OPTARG" ;;
        r) repeats="$OPTARG" ;;
        k) keep="$OPTARG" ;;
        p) paths="$OPTARG" ;;
        c) csv="$OPTARG" ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -eq 1 ]] || usage
[[ "$calls" =~ ^[1-9][0-9]*$ ]] || { echo "error: -n needs a positive integer" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "error: -r needs a positive integer" >&2; exit 2; }

require_valgrind

resolve_benchmark "$1" benchmarks/funnel/tst_bench_funnel
make_output_dir "$keep"

# Prints the total Ir of one run.
measure() {
    local path="$1" n="$2" run="$3"
    local out="$outdir/callgrind.$path.$n.$run.out"
    callgrind_run "$out" "$outdir/$path.$n.$run.log" -- "$binary" --deliver "$path" "$n"
    # "summary:" is the whole-program total (all threads: --separate-threads is off).
    local ir
    ir="$(awk '/^summary:/ { print $2; exit }' "$out")"
    [[ -n "$ir" ]] || { echo "error: no summary line in $out" >&2; exit 1; }
    echo "$ir"
}

printf '%-22s %10s %10s %10s   (N=%d, %d runs per path)\n' "path" "Ir/call" "min" "max" \
    "$calls" "$repeats"
for path in $paths; do
    case "$path" in
        funnel) label="FunnelConnection" ;;
        queued) label="Qt::QueuedConnection" ;;
        invoke-queued) label="invokeMethod, queued" ;;
        direct) label="Qt::DirectConnection" ;;
        plain) label="plain member call" ;;
        *) label="$path" ;;
    esac
    perCall=()
    for ((run = 1; run <= repeats; ++run)); do
        ir1="$(measure "$path" "$calls" "$run")"
        ir2="$(measure "$path" $((2 * calls)) "$run")"
        perCall+=("$(per_call "$ir1" "$ir2" "$calls")")
    done
    # The funnel's count depends a little on how valgrind interleaves the threads (how full
    # the batches get): report the median and the spread.
    read -r median lo hi <<<"$(median_min_max "${perCall[@]}")"
    printf '%-22s %10.0f %10.0f %10.0f\n' "$label" "$median" "$lo" "$hi"
    if [[ -n "$csv" ]]; then
        echo "one-producer,$path,1,8,instructions_per_call,$median" >>"$csv"
    fi
done
if [[ -n "$keep" ]]; then
    echo "callgrind out files kept in $keep (e.g. callgrind_annotate --inclusive=yes" \
         "$keep/callgrind.funnel.$((2 * calls)).1.out)"
fi
