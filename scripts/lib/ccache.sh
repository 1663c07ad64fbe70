# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by scripts/lib/run-suite.sh and scripts/lib/run-platform.sh: compiles through ccache,
# with its cache outside the clone like the Debian roots
# (${QFC_CCACHE_DIR:-/var/cache/qtfastconnect-ccache}; scripts/qt-root.sh mounts it into the
# roots), so that a machine that ran CI before rebuilds only what changed. A fresh machine pays
# ccache's small overhead on every miss. Sets ccache_cmake_args for the cmake configure step;
# empty (no launcher) where ccache cannot be installed.
ccache_cmake_args=()
if scripts/install-deps.sh ccache >&2; then
    # One directory per system (host, each root): their ccache versions differ.
    export CCACHE_DIR=${QFC_CCACHE_DIR:-/var/cache/qtfastconnect-ccache}/${QFC_QT_ROOT:-host}
    # Paths below the source tree count relative to it, the build directory's name not at all:
    # a clean clone elsewhere, or another build directory, still hits.
    export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
    mkdir -p "$CCACHE_DIR"
    ccache --max-size=4G >/dev/null # per system: a full CI stage fills well under 1 GB
    ccache_cmake_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
