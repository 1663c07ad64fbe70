#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks that every C++ file in the repository is formatted as .clang-format says, with the
# pinned clang-format 14 (Debian 12's; installed if missing, as root). Different clang-format
# releases format the same file differently, so the check runs with that one only.
#
# Usage: scripts/check-format.sh [--fix]
#   --fix  reformat the files instead of checking them
set -euo pipefail
cd "$(dirname "$0")/.."

formatter=clang-format-14
if ! command -v "$formatter" >/dev/null; then
    scripts/install-deps.sh "$formatter"
fi
mapfile -t files < <(git ls-files '*.h' '*.cpp')
if [[ "${1:-}" == "--fix" ]]; then
    "$formatter" -i "${files[@]}"
    exit 0
fi
if ! "$formatter" --dry-run --Werror "${files[@]}"; then
    echo "check-format: not formatted as .clang-format says; scripts/check-format.sh --fix" \
         "reformats them" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files formatted as .clang-format says ($("$formatter" --version | grep -o '[0-9][0-9.]*' | head -1))"
