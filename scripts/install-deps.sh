#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Installs the Debian packages QtFastConnect builds with, if any is missing.
# Usage: scripts/install-deps.sh [--docs] [extra-package ...]
#   --docs  also qdoc (qt6-documentation-tools), for the docs target
set -euo pipefail

packages=(qt6-base-dev qt6-base-private-dev libtbb-dev cmake ninja-build g++)
if [ "${1:-}" = "--docs" ]; then
    packages+=(qt6-documentation-tools)
    shift
fi
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "Missing Debian packages: ${missing[*]}" >&2
    echo "Install them as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "Installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
