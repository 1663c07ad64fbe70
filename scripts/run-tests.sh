#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs the whole test suite (scripts/lib/run-suite.sh: build and ctest, CMake and qmake
# applications against a staged install, docs, the qmake module build where Qt still supports
# it, ASan+UBSan, TSan) against each Qt version CI supports:
#   6.4     the host's Qt (Debian 12: Qt 6.4.2)
#   6.8     Qt 6.8 LTS, in a Debian 13 "trixie" root (scripts/qt-root.sh trixie)
#   newest  the newest Qt 6, in a Debian unstable "sid" root (scripts/qt-root.sh sid)
# Without --qt it runs all three in that order, each to its end, and fails if any failed. Each
# version prints one summary line; the last lines repeat them with the total time.
# The roots are bootstrapped on first use (about a minute each) and cached outside the clone.
#
# Usage: scripts/run-tests.sh [--qt 6.4|6.8|newest] [--no-sanitizers]
#   --no-sanitizers  skips the ASan+UBSan and TSan runs (a quicker developer loop)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 [--qt 6.4|6.8|newest] [--no-sanitizers]" >&2; exit 2; }
versions=(6.4 6.8 newest)
suite_args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --qt) [[ $# -ge 2 ]] || usage
              case "$2" in 6.4|6.8|newest) versions=("$2") ;; *) usage ;; esac
              shift ;;
        --no-sanitizers) suite_args+=(--no-sanitizers) ;;
        *) usage ;;
    esac
    shift
done

started=$SECONDS
summaries=()
status=0
for v in "${versions[@]}"; do
    case "$v" in
        6.4) root="" ;;
        6.8) root=trixie ;;
        newest) root=sid ;;
    esac
    summary=build-summaries/qt-$v.txt
    rm -f "$summary"
    echo "==== Qt $v${root:+ (Debian $root root)}" >&2
    if [[ -z "$root" ]]; then
        scripts/lib/run-suite.sh "${suite_args[@]}" --summary "$summary" || status=1
    else
        scripts/qt-root.sh "$root" scripts/lib/run-suite.sh "${suite_args[@]}" \
            --summary "$summary" || status=1
    fi
    # A run that died before its summary (a root that could not be made, ...) still gets a line.
    if [[ -s "$summary" ]]; then
        summaries+=("$(cat "$summary")")
    else
        summaries+=("qt $v: FAILED before any stage ran")
    fi
done

echo
printf '%s\n' "${summaries[@]}"
echo "total: $((SECONDS - started)) s for Qt ${versions[*]}$([[ $status -eq 0 ]] || echo ', FAILED')"
exit $status
