#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Compares the ABI of libQt6FastConnect, as its installed public headers declare it, with the
# baseline in abi/ (Debian's abigail-tools: abidw writes the ABI of the library restricted to the
# public headers, abidiff compares it with the baseline).
#
#   scripts/abi-check.sh [BUILD-DIR]            check; fails on any change that is not only an
#                                               addition
#   scripts/abi-check.sh --update [BUILD-DIR]   rewrite the baseline (then review and commit it)
#
# BUILD-DIR is a configured and built RelWithDebInfo build of the module (scripts/lib/run-suite.sh
# passes build-tests); without it the script configures and builds build-abi itself. The
# library needs debug info: abidw reads the types from DWARF.
#
# Qt 6.4 only: the module's version, its soname's library file and the Qt types in its
# signatures are those of the Qt it is built against, so one baseline holds for one Qt. The
# baseline is that of the host's Qt (Debian 12's Qt 6.4.2, g++ 12); on another Qt the script
# refuses to run (exit 2). The output is deterministic: no paths, no source locations, type ids
# hashed from the types, so regenerating it on an unchanged tree gives the same file.
#
# Exit status: 0 the ABI is the baseline's, or only adds to it (then it says so: record the
# additions with --update); 1 the ABI changed otherwise (removed or changed functions, variables
# or types), or abidw/abidiff failed; 2 usage, or not Qt 6.4.
set -euo pipefail
caller=$PWD

usage() { echo "usage: $0 [--update] [BUILD-DIR]" >&2; exit 2; }
update=0
build=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --update) update=1 ;;
        -h|--help) usage ;;
        -*) usage ;;
        *) [[ -z "$build" ]] || usage; build=$1 ;;
    esac
    shift
done
# BUILD-DIR as the caller named it (relative to the caller's directory, or absolute); made
# absolute before the script moves to the checkout, so that the install below stages inside it.
if [[ -n "$build" ]]; then
    [[ "$build" == /* ]] || build=$caller/$build
    [[ -d "$build" ]] || { echo "abi-check: no build directory $build" >&2; exit 2; }
fi
cd "$(dirname "$0")/.."

baseline=abi/libQt6FastConnect-qt6.4.abi

scripts/install-deps.sh abigail-tools
qt_version=$(qmake6 -query QT_VERSION)
if [[ "$qt_version" != 6.4.* ]]; then
    echo "abi-check: the baseline is for Qt 6.4; this Qt is $qt_version (the module's ABI depends" \
         "on the Qt it is built against): not checked" >&2
    exit 2
fi

if [[ -z "$build" ]]; then
    build=build-abi
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DCMAKE_INSTALL_PREFIX="$PWD/$build/prefix" >/dev/null
    nice -n 5 cmake --build "$build" --parallel "$(nproc)" --target FastConnect >/dev/null
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [[ "$build_type" != RelWithDebInfo ]]; then
    echo "abi-check: $build is a '$build_type' build; the baseline is of a RelWithDebInfo build" >&2
    exit 2
fi

# The installed public headers: the module's include directory without its private ones
# (QtFastConnect/<version>/QtFastConnect/private/).
stage=$build/abi-install
rm -rf "$stage"
DESTDIR=$(realpath -m "$stage") cmake --install "$build" >/dev/null
incdir=$(find "$stage" -type d -path '*/include/*/QtFastConnect' -prune | head -n1)
library=$(find "$stage" -name 'libQt6FastConnect.so.*.*.*' -type f | head -n1)
if [[ -z "$incdir" || -z "$library" ]]; then
    echo "abi-check: no installed headers or library under $stage" >&2
    exit 1
fi
headers=$build/abi-headers
rm -rf "$headers" && mkdir -p "$headers"
find "$incdir" -maxdepth 1 -type f -name '*.h' -exec cp {} "$headers/" \;

current=$build/libQt6FastConnect.abi
# Types not defined in a public header are left out (--drop-private-types); exported functions
# and variables stay, whatever declares them.
abidw --headers-dir "$headers" --drop-private-types --no-corpus-path --no-comp-dir-path \
      --no-show-locs --type-id-style hash --out-file "$current.tmp" "$library"
# Translation units are named by their source path: relative to the checkout, so that the
# baseline does not depend on where the tree is.
sed -e "s|path='$PWD/|path='|g" "$current.tmp" >"$current"
rm -f "$current.tmp"

if [[ $update -eq 1 ]]; then
    mkdir -p "$(dirname "$baseline")"
    cp "$current" "$baseline"
    echo "abi-check: wrote $baseline from $library (Qt $qt_version); review 'git diff $baseline'" \
         "and commit it with the change that made it"
    exit 0
fi

if [[ ! -f "$baseline" ]]; then
    echo "abi-check: no baseline $baseline; create it with: scripts/abi-check.sh --update" >&2
    exit 1
fi

report=$build/abidiff.txt
status=0
abidiff --no-show-locs "$baseline" "$current" >"$report" 2>&1 || status=$?
# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible
# ABI change (a change without bit 8 may still be incompatible: a human decides).
if [[ $status -eq 0 ]]; then
    echo "abi-check: the ABI is the baseline's ($baseline)"
    exit 0
fi
if (( status & 3 )); then
    echo "abi-check: abidiff failed (status $status):" >&2
    cat "$report" >&2
    exit 1
fi
# Only additions: every "summary" line of the report removes and changes nothing.
only_additions=1
while read -r line; do
    if [[ "$line" =~ ([0-9]+)\ Removed ]] && [[ ${BASH_REMATCH[1]} -ne 0 ]]; then only_additions=0; fi
    if [[ "$line" =~ ([0-9]+)\ Changed ]] && [[ ${BASH_REMATCH[1]} -ne 0 ]]; then only_additions=0; fi
done < <(grep -i 'summary:' "$report")
if (( status & 8 )) || [[ $only_additions -eq 0 ]]; then
    cat "$report" >&2
    if (( status & 8 )); then
        echo "abi-check: INCOMPATIBLE ABI change against $baseline (abidiff status $status, above)." >&2
    else
        echo "abi-check: the ABI changed against $baseline (abidiff status $status, above): binaries" \
             "built against the old headers may break." >&2
    fi
    echo "abi-check: if the change is intended (and reviewed), record it: scripts/abi-check.sh" \
         "--update, and commit $baseline with the change." >&2
    exit 1
fi
cat "$report"
echo "abi-check: the ABI only adds to the baseline (above); record the additions with" \
     "scripts/abi-check.sh --update"
exit 0
