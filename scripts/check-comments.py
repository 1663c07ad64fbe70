#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks that the comments the module's correctness argument rests on have not drifted from the
# code (the docs stage of scripts/lib/run-suite.sh runs it):
#
#   1. Memory-order pairings. Every pairing has an ID, [P1], [P2], ..., in the table of
#      docs/architecture.md ("Memory-ordering pairings"), where it is argued once, and at each
#      of its ends in src/. An acquire, release, acq_rel or seq_cst use in src/ names the ID of
#      its pairing on its line or in the comment just above it (relaxed ones order nothing and
#      need none). Fails on an ID in the code that the table lacks, a table ID found at fewer
#      than two places in the code, and an ordering use without an ID.
#   2. Members named in comments. Every Class::member() that a comment in src/ or the
#      architecture page names, for a class defined in src/, must exist: a member function,
#      data member or nested name of that class (or a function Class::member defined in src/).
#
# Usage: scripts/check-comments.py [SOURCE-ROOT]     (default: the checkout this script is in)
# Exit status 0 when everything holds, 1 with one line per problem otherwise.

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
SRC = ROOT / "src" / "fastconnect"
ARCH = ROOT / "docs" / "architecture.md"

PAIRING_ID = re.compile(r"\[(P\d+)\]")
ORDERING_USE = re.compile(r"std::memory_order_(acquire|release|acq_rel|seq_cst)\b")
# How far above an ordering use the comment naming its pairing may be.
COMMENT_REACH = 8

problems = []


def sources():
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".h", ".cpp"))


def comment_text(line):
    """The comment part of a source line (// or a /* ... */ line), or ''."""
    i = line.find("//")
    if i >= 0:
        return line[i:]
    stripped = line.strip()
    if stripped.startswith(("/*", "*")):
        return stripped
    return ""


# ---- 1. memory-order pairings -------------------------------------------------------------

def table_ids():
    text = ARCH.read_text(encoding="utf-8")
    start = text.find("## Memory-ordering pairings")
    if start < 0:
        problems.append(f"{ARCH.relative_to(ROOT)}: no 'Memory-ordering pairings' section")
        return {}
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    ids = {}
    for line in section.splitlines():
        if not line.startswith("| ["):
            continue
        m = PAIRING_ID.match(line, 2)
        if not m:
            continue
        if m.group(1) in ids:
            problems.append(f"{ARCH.relative_to(ROOT)}: pairing {m.group(1)} listed twice")
        ids[m.group(1)] = line
    return ids


def check_pairings():
    ids = table_ids()
    found = {}  # ID -> places in the code
    for path in sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        rel = path.relative_to(ROOT)
        for n, line in enumerate(lines, 1):
            for m in PAIRING_ID.finditer(comment_text(line)):
                found.setdefault(m.group(1), []).append(f"{rel}:{n}")
                if m.group(1) not in ids:
                    problems.append(f"{rel}:{n}: pairing {m.group(1)} is not in the table of "
                                    f"{ARCH.relative_to(ROOT)}")
            code = line.split("//", 1)[0]
            if not ORDERING_USE.search(code):
                continue
            # The ID on this line, or in a comment at most COMMENT_REACH lines above it, in
            # the same paragraph of code (no blank line, not across a function's end).
            window = [comment_text(line)]
            k = n - 2
            while k >= 0 and n - 1 - k <= COMMENT_REACH:
                above = lines[k]
                if above.strip() == "" or above.startswith("}"):
                    break
                window.append(comment_text(above))
                k -= 1
            if not any(PAIRING_ID.search(c) for c in window):
                use = ORDERING_USE.search(code).group(0)
                problems.append(f"{rel}:{n}: {use} without the ID of its pairing ([Pn], "
                                f"see {ARCH.relative_to(ROOT)})")
    for pid in ids:
        places = found.get(pid, [])
        if len(places) < 2:
            where = ", ".join(places) if places else "nowhere"
            problems.append(f"{ARCH.relative_to(ROOT)}: pairing {pid} is named at fewer than "
                            f"two places in the code ({where}): both ends carry its ID")


# ---- 2. members named in comments ---------------------------------------------------------

CLASS_HEAD = re.compile(r"^\s*(?:template\s*<[^;{]*>\s*)?(?:class|struct)\s+"
                        r"(?:Q_FASTCONNECT_EXPORT\s+|alignas\([^)]*\)\s+)*(\w+)\b[^;]*$")
IDENT = re.compile(r"\b([A-Za-z_]\w*)\b")
NAMED = re.compile(r"\b(Q\w+)::(\w+)\(\)")


def strip_comments(text):
    """text with its comments blanked (newlines kept); string and character literals kept."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def class_members():
    """Class name -> every identifier in its body(ies), plus Class::name definitions."""
    members = {}
    defined_out_of_class = {}
    for path in sources():
        text = strip_comments(path.read_text(encoding="utf-8"))
        lines = text.splitlines(keepends=True)
        offsets = []
        pos = 0
        for line in lines:
            offsets.append(pos)
            pos += len(line)
        for i, line in enumerate(lines):
            m = CLASS_HEAD.match(line)
            if not m:
                continue
            # The body: from the next '{' to its matching '}'.
            start = text.find("{", offsets[i])
            nxt = text.find(";", offsets[i])
            if start < 0 or (0 <= nxt < start):
                continue  # a declaration, not a definition
            depth = 0
            for j in range(start, len(text)):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
            body = text[start:j]
            members.setdefault(m.group(1), set()).update(IDENT.findall(body))
        for cls, name in re.findall(r"\b(Q\w+)::(~?\w+)\s*\(", text):
            defined_out_of_class.setdefault(cls, set()).add(name)
    for cls, names in defined_out_of_class.items():
        if cls in members:  # a class of ours, not Qt's (whose members we only call)
            members[cls].update(names)
    return members


def check_members():
    members = class_members()
    defined = set(members)
    targets = [(p, True) for p in sources()] + [(ARCH, False)]
    for path, is_code in targets:
        rel = path.relative_to(ROOT)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            text = comment_text(line) if is_code else line
            for cls, name in NAMED.findall(text):
                if cls in defined and name not in members[cls]:
                    problems.append(f"{rel}:{n}: {cls}::{name}() does not exist")


check_pairings()
check_members()
for p in problems:
    print(p)
if problems:
    print(f"check-comments: {len(problems)} problem(s)", file=sys.stderr)
    sys.exit(1)
print("check-comments: pairing IDs and named members agree with the code")
