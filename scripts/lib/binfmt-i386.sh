#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Makes sure this machine runs 32-bit x86 (i386) programs: for the Debian root bookworm-i386
# (scripts/qt-root.sh), whose bootstrap runs the root's maintainer scripts, and for the child
# processes of the i386 stage's tests where that stage is cross-compiled and run under qemu-i386
# (scripts/lib/run-platform.sh). An x86-64 kernel runs them natively unless its 32-bit emulation is
# off (CONFIG_IA32_EMULATION unset, or disabled at boot: ia32_emulation=off, as on some virtual
# machines; the kernel then says "32-bit emulation disabled" and exec fails with "Exec format
# error"). There, the kernel's binfmt_misc handler must hand them to qemu-user, and nothing on a
# fresh machine sets that up: binfmt_misc may not be mounted, and Debian's qemu-user-static
# registers no i386 handler on amd64 (it expects i386 to run natively). So this script mounts
# binfmt_misc where needed and registers qemu's own i386 entry ("qemu-i386", flags OPF: the
# kernel opens the emulator at registration, so it runs in the root too, where it is not
# installed; mmdebstrap looks for that name and flag) with Debian 13's qemu-i386
# (scripts/lib/qemu-user.sh, cached with the roots): Debian 12's 7.2 refuses the clone() flags
# of QProcess, which the tests' child processes need. The registration lives in the kernel until
# reboot (or "echo -1 >/proc/sys/fs/binfmt_misc/qemu-i386"); nothing is installed on the host
# for it. A machine where i386 already runs (natively, or through a handler registered before)
# is left as it is.
# Prints how i386 code runs: "native" or "qemu-i386 VERSION"; fails, saying why, where neither.
# Usage: scripts/lib/binfmt-i386.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
binfmt=/proc/sys/fs/binfmt_misc
entry=$binfmt/qemu-i386

fail() { echo "binfmt-i386: $*" >&2; exit 1; }

# version_of INTERPRETER: "qemu-i386 VERSION" (or the path, if it cannot say). The emulator is
# asked under its own name: as .../i386-binfmt-P it takes its first argument for argv[0].
version_of() {
    [[ -n $1 ]] || { echo "a binfmt_misc handler"; return; }
    "$(readlink -f "$1")" --version 2>/dev/null | sed -n '1s/.* version \([0-9.]*\).*/qemu-i386 \1/p' | grep . ||
        echo "$1"
}

"$here/scripts/install-deps.sh" arch-test >&2
if arch-test -n i386 >/dev/null 2>&1; then
    echo native
    exit 0
fi
if arch-test i386 >/dev/null 2>&1; then
    version_of "$(sed -n 's/^interpreter //p' "$entry" 2>/dev/null)"
    exit 0
fi

echo "binfmt-i386: this kernel runs no i386 code natively (32-bit emulation off or not built" \
     "in); registering Debian 13's qemu-i386 with binfmt_misc" >&2
if ! mountpoint -q "$binfmt"; then
    mount -t binfmt_misc binfmt_misc "$binfmt" ||
        fail "cannot mount binfmt_misc on $binfmt (CONFIG_BINFMT_MISC?)"
fi
bin=$("$here/scripts/lib/qemu-user.sh") || fail "Debian 13's qemu-user could not be fetched"
prefix=$(cd "$bin/.." && pwd)
conf=$prefix/share/qemu/binfmt.d/qemu-i386.conf
interpreter=$prefix/libexec/qemu-binfmt/i386-binfmt-P
[[ -r $conf && -x $interpreter ]] || fail "no qemu-i386 binfmt entry or emulator in $prefix"
# An entry of that name that did not run i386 code (disabled, or its emulator gone) gives way.
if [[ -e $entry ]]; then
    echo "binfmt-i386: replacing the binfmt_misc entry qemu-i386 that did not run i386 code:" \
         "$(tr '\n' ' ' <"$entry")" >&2
    echo -1 >"$entry"
fi
# qemu's own line, its interpreter path (/usr/libexec/...) made the unpacked one's.
line=$(sed "s|:/usr/libexec/qemu-binfmt/i386-binfmt-P:|:$interpreter:|" "$conf")
[[ $line == *":$interpreter:"* ]] || fail "unexpected entry in $conf: $line"
printf '%s' "$line" >"$binfmt/register" || fail "the kernel refused the entry: $line"
arch-test i386 >&2 || fail "i386 code does not run even through $interpreter"
version_of "$interpreter"
