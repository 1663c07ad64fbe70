#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs one test function N times in a row while busy loops occupy every core, the load under
# which races show; stops at the first failure and prints its output.
# Usage: scripts/stress-test.sh [-n RUNS] [-b BUSY_LOOPS] [-s VAR=FIRST] <test-binary> [test-function]
#   -s VAR=FIRST sets the environment variable VAR to FIRST, FIRST+1, ... in the runs, so a
#   randomized test gets a known seed range and a failing run names its seed.
#   e.g. scripts/stress-test.sh build-tests/tests/auto/dropin/tst_dropin orderAcrossThousandMoves
#        scripts/stress-test.sh -s QFC_LIFETIME_SEED=1 build-tests/tests/auto/lifetime/tst_lifetime torture
set -euo pipefail

runs=100
busy=$(nproc)
seed_var=""
seed_first=0
while getopts "n:b:s:h" opt; do
    case "$opt" in
        n) runs="$OPTARG" ;;
        b) busy="$OPTARG" ;;
        s) seed_var=${OPTARG%%=*}; seed_first=${OPTARG#*=} ;;
        *) echo "usage: $0 [-n RUNS] [-b BUSY_LOOPS] [-s VAR=FIRST] <test-binary> [test-function]" >&2
           exit 2 ;;
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
seeds=""
for i in $(seq 1 "$runs"); do
    if [[ -n $seed_var ]]; then
        export "$seed_var=$((seed_first + i - 1))"
        seeds=", $seed_var $seed_first..$((seed_first + runs - 1))"
    fi
    if ! timeout 600 "$binary" ${function:+"$function"} >"$log" 2>&1; then
        cat "$log" >&2
        echo "stress: run $i of $runs failed (${busy} busy loops${seed_var:+, $seed_var=${!seed_var}})" >&2
        rm -f "$log"
        exit 1
    fi
done
rm -f "$log"
echo "stress: $runs of $runs runs passed with $busy busy loops$seeds in $((SECONDS - start)) s"
