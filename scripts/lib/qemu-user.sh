#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# A qemu-user that can start child processes, for the ARM stages: Debian 12's qemu-user 7.2
# refuses clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD), which Qt's QProcess uses where the
# kernel has pidfds (forkfd), so every test that starts a child process had to skip under it.
# Debian 13's qemu-user (10.0) accepts it. Its package is downloaded from the host's mirror
# through a private apt configuration (the host's apt sources are not changed) and unpacked,
# not installed: the emulators in it are static executables. Cached outside the clone like the
# roots: ${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}/qemu-user-trixie. A child process the
# emulated test starts runs through the kernel's binfmt_misc handler for its architecture (when
# one is registered), which reads QEMU_LD_PREFIX for the root.
# Prints the directory of the emulators (qemu-aarch64, qemu-arm), or fails.
# Usage: scripts/lib/qemu-user.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/scripts/lib/host-mirror.sh"

roots=${QFC_ROOTS_DIR:-/var/cache/qtfastconnect-roots}
dir=$roots/qemu-user-trixie
if [[ ! -x $dir/usr/bin/qemu-aarch64 ]]; then
    mkdir -p "$roots"
    exec 9>"$roots/.qemu-user.lock"
    flock 9
    if [[ ! -x $dir/usr/bin/qemu-aarch64 ]]; then
        work=$dir.partial
        rm -rf "$work"
        private_apt "$work/apt" "deb trixie main"
        (cd "$work" && apt-get "${private_apt_opts[@]}" update -qq &&
         apt-get "${private_apt_opts[@]}" download qemu-user &&
         dpkg-deb -x qemu-user_*.deb unpacked) >"$work.log" 2>&1 ||
            { tail -n 20 "$work.log" >&2; exit 1; }
        mv "$work/unpacked" "$dir"
        rm -rf "$work"
    fi
fi
echo "$dir/usr/bin"
