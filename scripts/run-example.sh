#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds QtFastConnect and its examples (Release) and runs hashfunnel, by default on the
# installed Qt libraries. Arguments are passed to hashfunnel (try --help).
# scripts/run-example.sh workermonitor [args] runs the GUI demo instead, and
# scripts/run-example.sh logview [args] the log view demo (they need a display, or
# QT_QPA_PLATFORM=offscreen with --seconds N --screenshot FILE.png).
set -euo pipefail
cd "$(dirname "$0")/.."

example=hashfunnel
if [[ "${1:-}" == workermonitor || "${1:-}" == logview || "${1:-}" == hashfunnel ]]; then
    example=$1
    shift
fi

scripts/install-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$PWD/stage" -DQT_BUILD_EXAMPLES=ON >/dev/null
cmake --build build-release
exe=$(find build-release -type f -name "$example" -perm -u+x | head -n 1)
[ -n "$exe" ] || { echo "$example was not built" >&2; exit 1; }
exec "$exe" "$@"
