#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# The module's two builds list its sources twice: the CMake build (src/fastconnect/CMakeLists.txt,
# the SOURCES of qt_internal_add_module) and the qmake module build (src/fastconnect/
# fastconnect.pro, HEADERS and SOURCES). This checks that both list the same files, and that
# they list every header and source file in src/fastconnect/ and nothing that is not there, so
# that a file added to one build is not missing from the other. Run before any build (CI runs it
# first, with scripts/check-comments.py).
#
# Usage: scripts/check-sources.py [SOURCE-DIR]    (default: src/fastconnect of this tree)
# Exit status: 0 the lists agree; 1 they differ (each difference printed); 2 a list not found.
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = {".h", ".cpp"}


def strip_comment(line):
    return line.split("#", 1)[0]


def cmake_sources(path):
    """The file names between SOURCES and the next keyword of qt_internal_add_module()."""
    text = path.read_text()
    call = re.search(r"qt_internal_add_module\((.*?)\n\)", text, re.S)
    if not call:
        return None
    files, listing = [], False
    for line in call.group(1).splitlines():
        for word in strip_comment(line).split():
            if re.fullmatch(r"[A-Z_]+", word):
                listing = word == "SOURCES"
            elif listing:
                files.append(word)
    return files


def pro_sources(path):
    """The file names of HEADERS and SOURCES (+= with backslash continuations)."""
    files, listing = [], False
    for line in path.read_text().splitlines():
        code = strip_comment(line).strip()
        match = re.match(r"(\w+)\s*\+?=\s*(.*)", code)
        if match:
            listing = match.group(1) in ("HEADERS", "SOURCES")
            code = match.group(2)
        if listing:
            files.extend(word for word in code.rstrip("\\").split())
        if not code.endswith("\\"):
            listing = False
    return files


def duplicates(files):
    seen, repeated = set(), []
    for f in files:
        if f in seen:
            repeated.append(f)
        seen.add(f)
    return repeated


def main():
    source_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "src" / "fastconnect"
    cmake_file, pro_file = source_dir / "CMakeLists.txt", source_dir / "fastconnect.pro"
    cmake = cmake_sources(cmake_file) if cmake_file.exists() else None
    pro = pro_sources(pro_file) if pro_file.exists() else None
    if cmake is None or pro is None:
        print(f"check-sources: no source list in {cmake_file if cmake is None else pro_file}",
              file=sys.stderr)
        return 2
    on_disk = {p.relative_to(source_dir).as_posix() for p in source_dir.rglob("*")
               if p.suffix in SOURCE_SUFFIXES and p.is_file()}
    problems = []
    for name, files in (("CMakeLists.txt", cmake), ("fastconnect.pro", pro)):
        problems += [f"{name} lists {f} twice" for f in duplicates(files)]
        problems += [f"{name} lists {f}, which does not exist" for f in sorted(set(files) - on_disk)]
        problems += [f"{name} does not list {f}" for f in sorted(on_disk - set(files))]
    if problems:
        for p in problems:
            print(f"check-sources: {p}", file=sys.stderr)
        return 1
    print(f"check-sources: CMakeLists.txt and fastconnect.pro list the same {len(on_disk)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
