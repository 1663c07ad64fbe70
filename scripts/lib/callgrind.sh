# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# Sourced by the callgrind measurement scripts (callgrind-per-call.sh, callgrind-per-thread.sh):
# the valgrind check, one run under callgrind, and the median of repeated measurements.

# require_valgrind [tool...]: exits with a hint when valgrind (or one of the tools valgrind's
# package brings, such as callgrind_annotate) is not in PATH.
require_valgrind() {
    local tool
    for tool in valgrind "$@"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "error: $tool not found in PATH; install valgrind (Debian: apt-get install" \
                 "valgrind)" >&2
            exit 1
        fi
    done
}

# callgrind_run <out-file> <log> [valgrind option...] -- <command...>: runs the command under
# callgrind, its output in <log>; prints the log and exits when the run fails.
callgrind_run() {
    local out="$1" log="$2"
    shift 2
    local opts=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do
        opts+=("$1")
        shift
    done
    [[ $# -gt 0 ]] && shift
    if ! valgrind --tool=callgrind --quiet "${opts[@]}" --callgrind-out-file="$out" "$@" \
            >"$log" 2>&1; then
        echo "error: '$*' failed under valgrind:" >&2
        cat "$log" >&2
        exit 1
    fi
}

# per_call <ir(N)> <ir(2N)> <N>: the instructions of one call, start-up and shut-down cancelled.
per_call() {
    awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { v = (b - a) / n; if (v < 0.05 && -v < 0.05) v = 0; printf "%.1f", v }'
}

# median_min_max <value...>: prints "median min max" (the lower median for an even count).
median_min_max() {
    printf '%s\n' "$@" | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}
