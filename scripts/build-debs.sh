#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds the Debian packages of debian/ (libqt6fastconnect6, qt6-fastconnect-dev,
# qt6-fastconnect-private-dev) against the Qt of the machine, or of a Debian root, with the
# module's tests run at build time (offscreen), then checks them with lintian. Run as root on a
# fresh Debian 12: it installs what the build needs (debhelper, lintian, the Build-Depends).
# The packages land in build-debs/<suite>/ (bookworm, trixie), with a copy of the tree built
# there, so the checkout itself stays clean.
#
# Usage: scripts/build-debs.sh [--root trixie] [--no-check]
#   --root trixie  build in the cached Debian 13 root (Qt 6.8; scripts/qt-root.sh)
#   --no-check     skip the tests at build time (DEB_BUILD_OPTIONS=nocheck)
set -euo pipefail
cd "$(dirname "$0")/.."

root=""
nocheck=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --root) [[ $# -ge 2 ]] || { echo "usage: $0 [--root trixie] [--no-check]" >&2; exit 2; }
                root=$2; shift ;;
        --no-check) nocheck=1 ;;
        *) echo "usage: $0 [--root trixie] [--no-check]" >&2; exit 2 ;;
    esac
    shift
done
if [[ -n "$root" ]]; then
    args=()
    [[ $nocheck -eq 1 ]] && args+=(--no-check)
    exec scripts/qt-root.sh "$root" scripts/build-debs.sh "${args[@]}"
fi

suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
out=build-debs/$suite
started=$SECONDS

# What dpkg-buildpackage needs, and the Build-Depends of debian/control.
build_deps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' debian/control | sed '1s/^Build-Depends://;$d' \
             | tr ',' '\n' | sed 's/([^)]*)//; s/[[:space:]]//g; s/^debhelper-compat$/debhelper/' \
             | grep -v '^$')
# shellcheck disable=SC2086
scripts/install-deps.sh build-essential dpkg-dev fakeroot lintian $build_deps

# A copy of the tracked files (and the working tree's changes to them): the build writes next
# to its source (obj-*, debian/tmp, ...), which must not happen in the checkout.
rm -rf "$out" && mkdir -p "$out/src"
git ls-files -z --cached --others --exclude-standard | grep -zv '^build' \
    | xargs -0 cp --parents -t "$out/src"

echo "build-debs: building in $out/src against Qt $(qmake6 -query QT_VERSION)" >&2
(
    cd "$out/src"
    opts="parallel=$(nproc)"
    [[ $nocheck -eq 1 ]] && opts+=" nocheck"
    export DEB_BUILD_OPTIONS=$opts
    dpkg-buildpackage -b -us -uc
) > "$out/build.log" 2>&1 || { tail -n 40 "$out/build.log" >&2; echo "build-debs: the build failed ($out/build.log)" >&2; exit 1; }

changes=$(ls "$out"/*.changes)
echo "build-debs: lintian" >&2
# Errors fail; warnings are listed (the README says why each one that is left stays).
lintian --fail-on error --tag-display-limit 0 "$changes" | tee "$out/lintian.txt"
ls -1 "$out"/*.deb
echo "build-debs: $(ls "$out"/*.deb | wc -l) packages in $out ($((SECONDS - started)) s)"
