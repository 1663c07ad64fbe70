# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the measurement scripts: finds a benchmark binary and the directory its output
# goes to.

# resolve_benchmark <build-dir | binary> <path-in-build-dir>: sets $binary, or exits with a hint.
resolve_benchmark() {
    binary="$1"
    if [[ -d "$binary" ]]; then
        binary="$binary/$2"
    fi
    if [[ ! -x "$binary" ]]; then
        echo "error: $binary is not an executable; configure with -DQT_BUILD_BENCHMARKS=ON" \
             "and build the $(basename "$2") target" >&2
        exit 1
    fi
}

# make_output_dir <keep-dir or "">: sets $outdir; a temporary one is removed at exit.
make_output_dir() {
    if [[ -n "$1" ]]; then
        mkdir -p "$1"
        outdir="$1"
    else
        outdir="$(mktemp -d)"
        trap 'rm -rf "$outdir"' EXIT
    fi
}
