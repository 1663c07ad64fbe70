# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the scripts that bootstrap Debian roots (scripts/qt-root.sh,
# scripts/lib/run-platform.sh). host_mirror prints the Debian mirror the host's apt sources use
# (deb822 sources first, then the one-line format): roots are made from it alone, never from the
# host's other sources (security, updates), and the host's sources are never changed.
host_mirror() {
    local uri=""
    if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
        uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
    fi
    if [[ -z "$uri" && -r /etc/apt/sources.list ]]; then
        uri=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}
