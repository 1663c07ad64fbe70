#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs one test function N times in a row while busy loops occupy every core, the load under
# which races show; stops at the first failure and prints its output.
# Usage: scripts/stress-test.sh [-n RUNS] [-b BUSY_LOOPS] <test-binary> [test-function]
#   e.g. scripts/stress-test.sh build-tests/tests/auto/dropin/tst_dropin orderAcrossThousandMoves
set -euo pipefail

runs=100
busy=$(nproc)
while getopts "n:b:h" opt; do
    case "$opt" in
        n) runs="$OPTARG" ;;
        b) busy="$OPTARG" ;;
        *) echo "usage: $0 [-n RUNS] [-b BUSY_LOOPS] <test-binary> [test-function]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
binary=${1:?usage: $0 [-n RUNS] [-b BUSY_LOOPS] <test-binary> [test-function]}
function=${2:-}

pids=()
for _ in $(seq 1 "$busy"); do
    ( while :; do :; done ) &
    pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

log=$(mktemp)
start=$SECONDS
for i in $(seq 1 "$runs"); do
    if ! timeout 600 "$binary" ${function:+"$function"} >"$log" 2>&1; then
        cat "$log" >&2
        echo "stress: run $i of $runs failed (${busy} busy loops)" >&2
        rm -f "$log"
        exit 1
    fi
done
rm -f "$log"
echo "stress: $runs of $runs runs passed with $busy busy loops in $((SECONDS - start)) s"
