# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the scripts that bootstrap Debian roots or fetch Debian packages of their own
# (scripts/qt-root.sh, scripts/lib/run-platform.sh, qemu-user.sh, mingw-deps.sh). host_mirror
# prints the Debian mirror the host's apt sources use: roots are made from it alone, never from
# the host's other sources (security, updates, other vendors' repositories), and the host's
# sources are never changed. The mirror is the first URI of an enabled "deb" entry of a Debian
# suite (a name of letters only: not bookworm-security, bookworm-updates, ...) with the
# component main and no key but Debian's own (no signed-by, or debian-archive-keyring):
# deb822 files first (/etc/apt/sources.list.d/*.sources), then the one-line format
# (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list). Where there is none, it fails,
# saying where it looked: there is no fixed fallback mirror (a machine that configures none may
# reach no mirror, or only one of its own).
host_mirror() {
    local d=/etc/apt/sources.list.d uri nullglob
    local -a deb822 one_line
    nullglob=$(shopt -p nullglob || true)
    shopt -s nullglob
    deb822=("$d"/*.sources)
    one_line=(/etc/apt/sources.list "$d"/*.list)
    eval "$nullglob"
    uri=$(awk '
        function take(   u) {
            if (!found && uris != "" && types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" &&
                suites ~ /(^| )[a-z]+( |$)/ && comps ~ /(^| )main( |$)/ &&
                (signed == "" || signed ~ /debian-archive-keyring/)) {
                split(uris, u, " ")
                print u[1]
                found = 1
            }
            types = uris = suites = comps = signed = enabled = ""
        }
        FNR == 1 { take() }
        /^[ \t]*$/ { take(); next }
        /^[ \t#]/ { next }
        {
            name = tolower($1)
            $1 = ""
            sub(/^ +/, "")
            if (name == "types:") types = $0
            else if (name == "uris:") uris = $0
            else if (name == "suites:") suites = $0
            else if (name == "components:") comps = $0
            else if (name == "signed-by:") signed = $0 == "" ? "inline" : $0
            else if (name == "enabled:") enabled = $0
        }
        END { take() }
    ' /dev/null ${deb822[@]+"${deb822[@]}"})
    if [[ -z "$uri" ]]; then
        local f
        for f in "${one_line[@]}"; do
            [[ -r $f ]] || continue
            uri=$(awk '
                $1 == "deb" {
                    i = 2
                    opts = ""
                    if ($2 ~ /^\[/) {
                        while (i < NF && $i !~ /\]$/) opts = opts " " $(i++)
                        opts = opts " " $(i++)
                    }
                    main = 0
                    for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
                    if ($(i + 1) ~ /^[a-z]+$/ && main &&
                        (opts !~ /signed-by/ || opts ~ /debian-archive-keyring/)) {
                        print $i
                        exit
                    }
                }' "$f")
            [[ -z "$uri" ]] || break
        done
    fi
    if [[ -z "$uri" ]]; then
        echo "host_mirror: no Debian mirror in this machine's apt sources: looked for an enabled" \
             "deb entry of a Debian suite (e.g. bookworm) with the component main in" \
             "$d/*.sources, /etc/apt/sources.list and $d/*.list; configure one (e.g. in" \
             "$d/debian.sources): the Debian roots are made from the machine's own mirror, no" \
             "other" >&2
        return 1
    fi
    echo "$uri"
}

# private_apt DIR LINE: sets private_apt_opts, the apt-get options of an apt configuration in
# DIR that knows one sources line (e.g. "deb-src ... bookworm main") from the host's mirror and
# nothing of the host's own sources, lists or package state, which stay untouched. Run
# "apt-get "${private_apt_opts[@]}" update" first. Fails (host_mirror's message) without a mirror.
private_apt() {
    local dir=$1 line=$2 mirror
    mirror=$(host_mirror) || return 1
    mkdir -p "$dir"/{lists/partial,cache/archives/partial}
    echo "${line/ / [check-valid-until=no] $mirror }" >"$dir/sources.list"
    private_apt_opts=(-o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
                      -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache"
                      -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
}
