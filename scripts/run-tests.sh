#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs the whole test suite (scripts/lib/run-suite.sh: build and ctest, CMake and qmake
# applications against a staged install, docs, the qmake module build where Qt still supports
# it, ASan+UBSan and TSan except with Qt 6.8) against each Qt version CI supports:
#   6.4     the host's Qt (Debian 12: Qt 6.4.2)
#   6.8     Qt 6.8 LTS, in a Debian 13 "trixie" root (scripts/qt-root.sh trixie)
#   newest  the newest Qt 6, in a Debian unstable "sid" root (scripts/qt-root.sh sid)
# and then each platform stage (scripts/lib/run-platform.sh):
#   clang    the host's clang (libstdc++), warnings as errors
#   i386     32-bit x86 in a Debian 12 i386 root (scripts/qt-root.sh bookworm-i386)
#   arm64, armhf   cross-compiled against Debian 12 roots of those architectures, tests under
#            qemu-user
#   windows  64-bit Windows: MinGW-w64 against Qt and oneTBB built from Debian's sources
#            (scripts/lib/mingw-deps.sh, cached), tests under Wine
# It first checks the sources (scripts/check-comments.py and its own tests in
# tests/check-comments/, scripts/check-sources.py), whatever --qt or --platform asks for, and with
# the host's Qt the formatting (scripts/check-format.sh, clang-format 14).
# After the Qt versions it builds the Debian packages for Qt 6.4 and 6.8 and tries them, and
# checks the Qt tracepoints under LTTng (scripts/trace-lttng.sh) with the host's Qt.
# Without --qt or --platform it runs all of them in that order, each to its end, and fails if
# any failed. Each prints one summary line; the last lines repeat them with the total time.
# The roots are bootstrapped on first use (a minute or a few each) and cached outside the clone.
#
# Usage: scripts/run-tests.sh [--qt 6.4|6.8|newest | --platform NAME] [--no-sanitizers]
#   --qt V           only that Qt version
#   --platform NAME  only that platform stage (clang, i386, arm64, armhf, windows)
#   --no-sanitizers  skips the ASan+UBSan and TSan runs (a quicker developer loop)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: $0 [--qt 6.4|6.8|newest | --platform clang|i386|arm64|armhf|windows]" \
         "[--no-sanitizers]" >&2
    exit 2
}
versions=(6.4 6.8 newest)
platforms=(clang i386 arm64 armhf windows)
suite_args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --qt) [[ $# -ge 2 ]] || usage
              case "$2" in 6.4|6.8|newest) versions=("$2"); platforms=() ;; *) usage ;; esac
              shift ;;
        --platform) [[ $# -ge 2 ]] || usage
              case "$2" in clang|i386|arm64|armhf|windows) platforms=("$2"); versions=() ;;
                           *) usage ;; esac
              shift ;;
        --no-sanitizers) suite_args+=(--no-sanitizers) ;;
        *) usage ;;
    esac
    shift
done

started=$SECONDS
summaries=()
failure_logs=()
status=0
# The checks of the sources, first, before any build, whatever the stages: the comments'
# memory-order pairings (both ends of each, against docs/architecture.md's table) and the
# functions they name (scripts/check-comments.py), that check's own tests (each deliberate break
# must fail it: tests/check-comments/), and the two builds' source lists
# (scripts/check-sources.py). Python only, a few seconds.
echo "==== source checks" >&2
command -v python3 >/dev/null || scripts/install-deps.sh python3 # a fresh machine has none
if python3 scripts/check-comments.py && python3 tests/check-comments/test_check_comments.py \
    && python3 scripts/check-sources.py; then
    summaries+=("source checks: ok")
else
    summaries+=("source checks: FAILED")
    status=1
fi
# Formatting, once per run (the pinned clang-format is the host's): with the host's Qt.
if [[ " ${versions[*]} " == *" 6.4 "* ]]; then
    echo "==== format" >&2
    if scripts/check-format.sh; then
        summaries+=("format: ok")
    else
        summaries+=("format: FAILED")
        status=1
    fi
fi
for v in "${versions[@]}"; do
    case "$v" in
        6.4) root="" ;;
        6.8) root=trixie ;;
        newest) root=sid ;;
    esac
    summary=build-summaries/qt-$v.txt
    rm -f "$summary" "${summary%.txt}-failed.log"
    echo "==== Qt $v${root:+ (Debian $root root)}" >&2
    # The sanitizers with the oldest and the newest Qt: their builds are most of CI's time (a
    # build of the module with its tests takes 300 s on two cores without ccache), and where
    # Qt's private API differs (qfunnelqtcompat_p.h) Qt 6.8 takes one of their branches.
    stage_args=("${suite_args[@]}")
    [[ $v != 6.8 ]] || stage_args+=(--no-sanitizers)
    if [[ -z "$root" ]]; then
        scripts/lib/run-suite.sh "${stage_args[@]}" --summary "$summary" || status=1
    else
        scripts/qt-root.sh "$root" scripts/lib/run-suite.sh "${stage_args[@]}" \
            --summary "$summary" || status=1
    fi
    # A run that died before its summary (a root that could not be made, ...) still gets a line.
    if [[ -s "$summary" ]]; then
        summaries+=("$(cat "$summary")")
    else
        summaries+=("qt $v: FAILED before any stage ran")
    fi
    [[ ! -s "${summary%.txt}-failed.log" ]] || failure_logs+=("${summary%.txt}-failed.log")
done

# The Debian packages (debian/, scripts/build-debs.sh), built and tried in a clean root (tests/consumers/run-packages.sh): Debian 12 with the host's Qt 6.4, Debian 13
# with Qt 6.8.
for v in "${versions[@]}"; do
    case "$v" in
        6.4) suite=bookworm; root_args=() ;;
        6.8) suite=trixie; root_args=(--root trixie) ;;
        *) continue ;;
    esac
    echo "==== packages, Qt $v (Debian $suite)" >&2
    pkg_started=$SECONDS
    # --no-check: the Qt stages above ran the same tests against the same Qt.
    if scripts/build-debs.sh --no-check "${root_args[@]}" \
        && tests/consumers/run-packages.sh "build-debs/$suite" "$suite"; then
        summaries+=("packages $suite: built, lintian clean of errors, installed, consumers ok ($((SECONDS - pkg_started)) s)")
    else
        summaries+=("packages $suite: FAILED")
        status=1
    fi
done

# The Qt tracepoints under LTTng (scripts/trace-lttng.sh), with the host's Qt, which has no
# tracing backend of its own.
if [[ " ${versions[*]} " == *" 6.4 "* ]]; then
    echo "==== tracing (LTTng)" >&2
    trace_started=$SECONDS
    if trace_out=$(scripts/trace-lttng.sh build-lttng); then
        summaries+=("tracing lttng: $(awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}' <<<"$trace_out") events, counts ok ($((SECONDS - trace_started)) s)")
    else
        printf '%s\n' "$trace_out" >&2
        summaries+=("tracing lttng: FAILED")
        status=1
    fi
fi

for p in "${platforms[@]}"; do
    summary=build-summaries/platform-$p.txt
    rm -f "$summary" "${summary%.txt}-failed.log"
    echo "==== platform $p" >&2
    scripts/lib/run-platform.sh --summary "$summary" "$p" || status=1
    if [[ -s "$summary" ]]; then
        summaries+=("$(cat "$summary")")
    else
        summaries+=("platform $p: FAILED before any stage ran")
    fi
    [[ ! -s "${summary%.txt}-failed.log" ]] || failure_logs+=("${summary%.txt}-failed.log")
done

# The failed tests' own output, kept by the stages (scripts/lib/ctest-failures.sh): near the end,
# where a CI log that keeps only the tail still shows it.
for f in "${failure_logs[@]}"; do
    echo
    echo "==== failed tests ($f)"
    cat "$f"
done
echo
printf '%s\n' "${summaries[@]}"
echo "total: $((SECONDS - started)) s for${versions[*]:+ Qt ${versions[*]}}${platforms[*]:+${versions[*]:+,} platforms ${platforms[*]}}$([[ $status -eq 0 ]] || echo ', FAILED')"
exit $status
