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

# private_apt DIR LINE: sets private_apt_opts, the apt-get options of an apt configuration in
# DIR that knows one sources line (e.g. "deb-src ... bookworm main") from the host's mirror and
# nothing of the host's own sources, lists or package state, which stay untouched. Run
# "apt-get "${private_apt_opts[@]}" update" first.
private_apt() {
    local dir=$1 line=$2
    mkdir -p "$dir"/{lists/partial,cache/archives/partial}
    echo "${line/ / [check-valid-until=no] $(host_mirror) }" >"$dir/sources.list"
    private_apt_opts=(-o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
                      -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache"
                      -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
}
