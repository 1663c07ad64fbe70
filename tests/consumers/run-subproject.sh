#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds and runs tests/consumers/subproject, an application that takes this source tree into
# its own CMake build with FetchContent: from the checkout (SOURCE_DIR) and, with --git, also
# from a git clone of it (GIT_REPOSITORY, the committed HEAD). Each must receive its funnel call, and the
# application's cache must not have been changed by Qt's module tooling where it matters: its
# install prefix stays CMake's default, and no BUILD_SHARED_LIBS or unprefixed INSTALL_*DIR
# entry appears.
# Usage: tests/consumers/run-subproject.sh [--git] <work-dir>
set -euo pipefail
with_git=0
[[ "${1:-}" == "--git" ]] && { with_git=1; shift; }
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
work=$(mkdir -p "${1:?usage: $0 <work-dir>}" && cd "$1" && pwd)
fail() { echo "subproject: $*" >&2; exit 1; }

check() {  # build-dir
    local cache=$1/CMakeCache.txt
    grep -q '^CMAKE_INSTALL_PREFIX:PATH=/usr/local$' "$cache" ||
        fail "the application's install prefix changed: $(grep '^CMAKE_INSTALL_PREFIX' "$cache")"
    ! grep -qE '^(BUILD_SHARED_LIBS|INSTALL_[A-Z_]+DIR):' "$cache" ||
        fail "left in the application's cache: $(grep -E '^(BUILD_SHARED_LIBS|INSTALL_[A-Z_]+DIR):' "$cache" | tr '\n' ' ')"
    "$1/subproject_consumer" || fail "the application failed ($1)"
}

rm -rf "$work/source" "$work/git"
cmake -S "$here/subproject" -B "$work/source" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DQTFASTCONNECT_SOURCE_DIR="$source_dir" >/dev/null
cmake --build "$work/source" >/dev/null
check "$work/source"
echo "subproject: FetchContent from the source tree: built and ran" >&2

if [[ $with_git -eq 1 ]] && git -C "$source_dir" rev-parse --verify -q HEAD >/dev/null; then
    cmake -S "$here/subproject" -B "$work/git" -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DQTFASTCONNECT_GIT_REPOSITORY="$source_dir" \
          -DQTFASTCONNECT_GIT_TAG="$(git -C "$source_dir" rev-parse HEAD)" >/dev/null
    cmake --build "$work/git" >/dev/null
    check "$work/git"
    echo "subproject: FetchContent from a git clone (HEAD): built and ran" >&2
fi
