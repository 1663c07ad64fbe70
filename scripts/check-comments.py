#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks that the comments the module's correctness argument rests on have not drifted from the
# code. scripts/run-tests.sh runs it first, before any build, with its own tests
# (tests/check-comments/).
#
#   1. Memory-order pairings, both ends. The table in docs/architecture.md ("Memory-ordering
#      pairings") lists every pairing, P1, P2, ..., and per end its label ([P2 seal]), the
#      functions it is in, its atomic operation (`state.compare_exchange_strong`) and memory
#      order. In src/, each end carries its label on the operation's line, or in the comment
#      block directly above that line (no blank or code line between); the label covers that
#      statement (to its ';', '{' or '}': `if (x)` and the line it controls are one). The check
#      fails on
#        - a label whose pairing or end the table lacks, or an old-style [P4];
#        - a label whose statement has no operation of its end, or one with another memory
#          order than the table's (for a compare-exchange, the success order);
#        - a label in a function the table does not name for that end, and an end missing from
#          a function the table names (or from src/ altogether);
#        - an acquire, release, acq_rel or seq_cst operation or fence in src/ that no label
#          covers (relaxed ones need none), and a std::atomic operation that leaves its order
#          to the default, or an operator on one (for the names declared std::atomic in src/,
#          and only as that, for operators): the order is spelled out;
#        - a cross-reference ("see P4") to a pairing the table lacks.
#      Operations: std::atomic's load, store, exchange, compare_exchange_*, fetch_*, wait
#      (member calls, and std::atomic_thread_fence, std::atomic_*_explicit), Qt's named ones
#      (loadAcquire(), storeRelease(), fetchAndAddOrdered(), ..., and ref()/deref() on a
#      QAtomicInt, ordered: seq_cst), and the ThreadSanitizer hand-offs qfcAnnotateRelease()
#      (release) and qfcAnnotateAcquire() (acquire).
#   2. Functions named in comments. Every Class::member() that a comment in src/ or the
#      architecture page names, for a class defined in src/, must exist: a member function,
#      data member or nested name of that class (or a function Class::member defined in src/).
#      Every unqualified name() in those comments (but qdoc blocks, the user's documentation of
#      Qt's API) must be an identifier of src/'s code (a function or method defined, declared
#      or called there; a name that no longer exists fails), or one of the few outside names in
#      EXTERNAL_NAMES; Qt's other functions are named qualified (QMetaObject::activate()).
#
# Usage: scripts/check-comments.py [SOURCE-ROOT]     (default: the checkout this script is in)
# Exit status 0 when everything holds, 1 with one line per problem otherwise.

import bisect
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
ARCH = ROOT / "docs" / "architecture.md"
ARCH_REL = "docs/architecture.md"

# Functions that comments name unqualified and that src/'s code never spells: the system's, and
# Qt's where the text makes the class plain. Keep it short: name a Qt function qualified
# instead (QMetaObject::activate()).
EXTERNAL_NAMES = {
    "main", "exit", "dlopen", "nanosleep", "__tls_get_addr",  # C, POSIX, glibc
    "Sleep", "ExitProcess", "LdrShutdownThread", "RtlProcessFlsData",  # Windows
    "RtlDllShutdownInProgress", "SetThreadDescription",
    "destroyed", "exec", "finish", "sendPostedEvents", "removePostedEvents",  # Qt, where the
    "qt_metacall", "rowsInserted", "senderSignalIndex", "SIGNAL", "SLOT",  # class is plain
}

ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
ORDERING = {"consume", "acquire", "release", "acq_rel", "seq_cst"}

problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


# ---- reading C++ ---------------------------------------------------------------------------

class Source:
    """One file: its code with comments and literals blanked, its comments, and per offset the
    function it is in."""

    def __init__(self, path):
        self.path = path
        self.rel = path.relative_to(ROOT).as_posix()
        self.text = path.read_text(encoding="utf-8")
        self.code, self.comments = split_code(self.text)
        self.code_lines = self.code.split("\n")
        self.comment_lines = self.comments.split("\n")
        self.line_starts = [0]
        for line in self.code_lines[:-1]:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        self.statement_of = statements(self.code_lines)
        self.scope_starts, self.scope_names = functions(self.code)

    def line_of(self, offset):
        return bisect.bisect_right(self.line_starts, offset) - 1  # 0-based

    def function_at(self, offset):
        return self.scope_names[bisect.bisect_right(self.scope_starts, offset) - 1]


LEXEME = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?",
                    re.S)
NOT_NEWLINE = re.compile(r"[^\n]")


def split_code(text):
    """(code, comments): text twice, same length and lines. code has the comments blanked and
    string and character literals emptied; comments has everything but the comments blanked."""
    code = []
    comments = []
    pos = 0
    for m in LEXEME.finditer(text):
        between = text[pos:m.start()]
        code.append(between)
        comments.append(NOT_NEWLINE.sub(" ", between))
        lexeme = m.group(0)
        blank = NOT_NEWLINE.sub(" ", lexeme)
        if lexeme[0] == "/":
            code.append(blank)
            comments.append(lexeme)
        else:  # a literal: its quotes kept
            code.append(lexeme[0] + blank[1:-1] + lexeme[-1] if len(lexeme) > 1 else lexeme)
            comments.append(blank)
        pos = m.end()
    code.append(text[pos:])
    comments.append(NOT_NEWLINE.sub(" ", text[pos:]))
    return "".join(code), "".join(comments)


def statements(code_lines):
    """Per line, the (first, last) line of the statement it is part of: from a line with code to
    the next that ends in ';', '{', '}' or ':' outside parentheses (so `if (x)` takes the line
    that follows it), or to a preprocessor line."""
    out = [None] * len(code_lines)
    first = None
    depth = 0
    for k, line in enumerate(code_lines):
        code = line.strip()
        if first is None:
            if not code:
                out[k] = (k, k)
                continue
            first = k
            depth = 0
        depth += line.count("(") - line.count(")")
        if depth <= 0 and (code.endswith((";", "{", "}", ":")) or code.startswith("#")):
            for m in range(first, k + 1):
                out[m] = (first, k)
            first = None
    if first is not None:
        for m in range(first, len(code_lines)):
            out[m] = (first, len(code_lines) - 1)
    return out


CONTROL = re.compile(r"\s*(?:if|else|for|while|switch|catch|do|return|case|try)\b")
LAMBDA_END = re.compile(r"\]\s*(?:\((?:[^()]|\([^()]*\))*\))?\s*(?:mutable\s*)?(?:noexcept\s*)?"
                        r"(?:->\s*[\w:<>*&\s]+)?$")
MACRO_LINE = re.compile(r"(?m)^\s*Q_[A-Z0-9_]+\s*\([^()\n]*\)\s*$")


def drop_templates(head):
    """head without its template<...> parameter lists."""
    while True:
        m = re.search(r"\btemplate\s*<", head)
        if not m:
            return head
        depth = 0
        for j in range(m.end() - 1, len(head)):
            depth += {"<": 1, ">": -1}.get(head[j], 0)
            if depth == 0:
                break
        head = head[:m.start()] + head[j + 1:]


def classify(head, classes):
    """What a '{' after head opens: ('class', name), ('function', qualified name), or ('block',)."""
    head = MACRO_LINE.sub("", drop_templates(head)).strip()
    if not head:
        return ("block",)
    cls = re.match(r"(?:typedef\s+)?(enum\s+)?(?:class|struct|union)\b(.*)$", head, re.S)
    if cls and not cls.group(1) and "(" not in re.sub(r"alignas\s*\([^)]*\)", "", cls.group(2)):
        rest = re.sub(r"alignas\s*\([^)]*\)", "", cls.group(2))
        rest = re.split(r"(?<!:):(?!:)", rest)[0]
        while re.search(r"<[^<>]*>", rest):
            rest = re.sub(r"<[^<>]*>", "", rest)
        names = [w for w in re.findall(r"\w+", rest) if w != "final" and not w.endswith("_EXPORT")]
        return ("class", names[-1]) if names else ("block",)
    if "(" not in head or CONTROL.match(head) or LAMBDA_END.search(head):
        return ("block",)
    if head.count("(") != head.count(")"):
        return ("block",)  # a braced initializer inside an expression
    depth = 0
    for j, c in enumerate(head):
        if c == "(":
            if depth == 0:
                break
            depth += 1
        elif c == ")":
            depth -= 1
    m = re.search(r"((?:[\w~]+::)*(?:operator\s*\S+?|~?\w+))\s*$", head[:j])
    if not m or m.group(1) in ("sizeof", "decltype", "alignas", "noexcept"):
        return ("block",)
    name = m.group(1)
    if "::" not in name and classes:
        name = "::".join(classes) + "::" + name
    return ("function", name)


STRUCTURE = re.compile(r"[(){};]")


def functions(code):
    """(starts, names): from each offset in starts on, the code is in function names[i]
    (qualified by its classes, as Class::member), or in none (None)."""
    # Preprocessor lines (and macro bodies) are not declarations.
    scan = re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  code)
    stack = []  # (kind, name)
    starts = [0]
    names = [None]
    head_start = 0
    depth = 0

    def current():
        for kind in reversed(stack):
            if kind[0] == "function":
                return kind[1]
        return None

    for m in STRUCTURE.finditer(scan):
        i, c = m.start(), m.group(0)
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == ";" and depth <= 0:
            head_start = i + 1
        elif c == "{":
            if depth > 0:
                stack.append(("block",))  # a lambda or initializer in an argument list
            else:
                classes = [k[1] for k in stack if k[0] == "class"]
                stack.append(classify(scan[head_start:i], classes))
            head_start = i + 1
            starts.append(i)
            names.append(current())
        elif c == "}":
            if stack:
                stack.pop()
            head_start = i + 1
            starts.append(i + 1)
            names.append(current())
    return starts, names


def sources():
    return [Source(p) for p in sorted(SRC.rglob("*")) if p.suffix in (".h", ".cpp")]


# ---- atomic operations ---------------------------------------------------------------------

STD_OPS = ("load|store|exchange|compare_exchange_weak|compare_exchange_strong|fetch_add|fetch_sub|"
           "fetch_and|fetch_or|fetch_xor|wait|test_and_set|clear")
STD_MEMBER = re.compile(r"(?:\.|->)\s*(" + STD_OPS + r")\s*\(")
STD_FREE = re.compile(r"\bstd::(atomic_thread_fence|atomic_signal_fence|atomic_\w+?)\s*\(")
QT_MEMBER = re.compile(r"(?:\.|->)\s*((?:load|store)(?:Relaxed|Acquire|Release)|"
                       r"(?:fetchAnd(?:Add|Sub|And|Or|Xor|Store)|testAndSet)"
                       r"(?:Relaxed|Acquire|Release|Ordered))\s*\(")
QT_REF = re.compile(r"\.\s*(ref|deref)\s*\(\s*\)")
ANNOTATION = re.compile(r"\b(qfcAnnotateRelease|qfcAnnotateAcquire)\s*\(")
OPERATOR = re.compile(r"(?:\+\+|--)\s*(?<![\w.>])((?:m_|g_|qfc)\w+)\b(?!\s*(?:\.|->|\())|"
                      r"(?<![\w.>])((?:m_|g_|qfc)\w+)\s*(?:\+\+|--|[-+&|^]?=(?!=))")
ORDER_ARG = re.compile(r"std::memory_order(?:_|::)(\w+)$")
QT_SUFFIX = {"Relaxed": "relaxed", "Acquire": "acquire", "Release": "release", "Ordered": "seq_cst"}
DEFAULTED = {"load", "store", "exchange", "compare_exchange_weak", "compare_exchange_strong",
             "fetch_add", "fetch_sub", "fetch_and", "fetch_or", "fetch_xor", "test_and_set"}


class Op:
    def __init__(self, src, offset, receiver, name, order):
        self.src = src
        self.offset = offset
        self.line = src.line_of(offset)
        self.receiver = receiver  # None for a free function
        self.name = name
        self.order = order
        self.claimed = False

    def spelled(self):
        return f"{self.receiver}.{self.name}" if self.receiver else self.name

    def where(self):
        return f"{self.src.rel}:{self.line + 1}"


def receiver_of(code, dot):
    """The name an operation at dot ('.' or '->') is called on, or '?' (an expression's value)."""
    m = re.search(r"(\w+)\s*$", code[max(0, dot - 60):dot])
    return m.group(1) if m else "?"


def arguments(code, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, stripped."""
    args = []
    depth = 0
    start = open_paren + 1
    for j in range(open_paren, len(code)):
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(code[start:j])
                break
        elif c == "," and depth == 1:
            args.append(code[start:j])
            start = j + 1
    return [" ".join(a.split()) for a in args]


def atomic_names(srcs):
    """Names declared as std::atomic and as Qt atomics in src/, and names declared otherwise."""
    aliases = {"std::atomic"}
    for s in srcs:
        aliases.update(re.findall(r"\busing\s+(\w+)\s*=\s*std::atomic\s*<", s.code))
    alias = "|".join(sorted(re.escape(a) for a in aliases))
    std_decl = re.compile(r"\b(?:" + alias + r")\b(?:\s*<[^;{}()]*?>)?\s*[*&]?\s*(?:const\s+)?"
                          r"(\w+)\s*(?![\w(])")
    qt_decl = re.compile(r"\b(?:QAtomicInt|QAtomicInteger\s*<[^>]*>|QBasicAtomicInt|"
                         r"QBasicAtomicInteger\s*<[^>]*>)\s*[*&]?\s*(\w+)\s*(?![\w(])")
    other_decl = re.compile(r"\b(bool|int|char|qint64|quint64|quint32|qsizetype|quintptr|auto|"
                            r"Qt::HANDLE|void\s*\*|Q[A-Z]\w*\s*\*)\s+(\w+)\s*[;={]")
    std_names, qt_names, other = set(), set(), set()
    for s in srcs:
        std_names.update(std_decl.findall(s.code))
        qt_names.update(qt_decl.findall(s.code))
        other.update(m.group(2) for m in other_decl.finditer(s.code))
    return std_names, qt_names, other


def find_ops(src, std_names, qt_names, unambiguous):
    code = src.code
    ops = []
    for m in STD_MEMBER.finditer(code):
        receiver, name = receiver_of(code, m.start()), m.group(1)
        orders = [o.group(1) for a in arguments(code, m.end() - 1) if (o := ORDER_ARG.match(a))]
        if orders:
            ops.append(Op(src, m.start(1), receiver, name, orders[0]))
        elif name in DEFAULTED and receiver in std_names:
            op = Op(src, m.start(1), receiver, name, "seq_cst")
            problem(op.where(), f"`{op.spelled()}` leaves its memory order to the default "
                                f"(seq_cst): spell it out")
            op.claimed = True  # reported once
            ops.append(op)
    for m in STD_FREE.finditer(code):
        name = m.group(1)
        orders = [o.group(1) for a in arguments(code, m.end() - 1) if (o := ORDER_ARG.match(a))]
        if name in ("atomic_thread_fence", "atomic_signal_fence") or name.endswith("_explicit"):
            ops.append(Op(src, m.start(1), None, "std::" + name, orders[0] if orders else "?"))
        elif name.startswith(("atomic_load", "atomic_store", "atomic_exchange", "atomic_fetch_",
                               "atomic_compare_exchange_")):
            ops.append(Op(src, m.start(1), None, "std::" + name, "seq_cst"))
    for m in QT_MEMBER.finditer(code):
        suffix = re.search(r"(Relaxed|Acquire|Release|Ordered)$", m.group(1)).group(1)
        ops.append(Op(src, m.start(1), receiver_of(code, m.start()), m.group(1), QT_SUFFIX[suffix]))
    for m in QT_REF.finditer(code):
        receiver = receiver_of(code, m.start())
        if receiver in qt_names or receiver == "ref":  # QObjectPrivate::ConnectionData::ref
            ops.append(Op(src, m.start(1), receiver, m.group(1), "seq_cst"))
    for m in ANNOTATION.finditer(code):
        if re.search(r"\bvoid\s*$", code[max(0, m.start() - 20):m.start()]):
            continue  # the definition
        ops.append(Op(src, m.start(1), None, m.group(1),
                      "release" if m.group(1).endswith("Release") else "acquire"))
    # Operators on a std::atomic are seq_cst, and say nothing of it.
    for m in OPERATOR.finditer(code):
        name = m.group(1) or m.group(2)
        if name not in unambiguous:
            continue
        line = src.code_lines[src.line_of(m.start())]
        if re.search(r"std::atomic|\busing\b", line):
            continue  # a declaration
        op = Op(src, m.start(), name, "operator", "seq_cst")
        problem(op.where(), f"an operator on the std::atomic `{name}` (seq_cst, unsaid): call "
                            f"the operation with its memory order")
    return ops


# ---- the pairing table ---------------------------------------------------------------------

LABEL = re.compile(r"\[P(\d+) ([a-z][a-z0-9-]*)\]")
ANY_LABEL = re.compile(r"\[P\d+[^\]\n]*\]")
REFERENCE = re.compile(r"(?<![\w\[])P(\d+)\b(?![\w\]])")


class End:
    def __init__(self, pid, name, functions, specs, order, line):
        self.pid = pid
        self.name = name
        self.functions = functions  # ['QFunnelBatch::append', 'trySeal']
        self.specs = specs  # [(receiver or None, operation)]
        self.order = order
        self.line = line
        self.places = []  # (op, function)

    def label(self):
        return f"[P{self.pid} {self.name}]"


def table():
    """(pairing IDs, {(id, end name): End})."""
    text = ARCH.read_text(encoding="utf-8")
    start = text.find("## Memory-ordering pairings")
    if start < 0:
        problem(ARCH_REL, "no 'Memory-ordering pairings' section")
        return set(), {}
    first_line = text.count("\n", 0, start) + 1
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    ids, ends = set(), {}
    columns = None
    pid = None
    for k, line in enumerate(section.splitlines()):
        where = f"{ARCH_REL}:{first_line + k}"
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if columns is None:
            columns = {c.lower(): j for j, c in enumerate(cells)}
            missing = {"pairing", "end", "function", "operation", "order"} - set(columns)
            if missing:
                problem(where, f"the pairing table has no column {', '.join(sorted(missing))}")
                return ids, ends
            continue
        if set(line) <= set("|-: "):
            continue
        cell = {name: cells[j] if j < len(cells) else "" for name, j in columns.items()}
        if cell["pairing"]:
            m = re.match(r"\*\*P(\d+)\*\*", cell["pairing"])
            if not m:
                problem(where, "a pairing's first row starts with its ID in bold (**P4**)")
                continue
            pid = m.group(1)
            if pid in ids:
                problem(where, f"pairing P{pid} listed twice")
            ids.add(pid)
        if pid is None:
            continue
        if cell["end"] == "Qt":
            continue  # an end outside src/: Qt's own code
        m = re.fullmatch(r"`?\[P(\d+) ([a-z][a-z0-9-]*)\]`?", cell["end"])
        if not m or m.group(1) != pid:
            problem(where, f"end '{cell['end']}': an end is `[P{pid} name]` (lowercase name), "
                           f"or Qt for one outside src/")
            continue
        funcs = re.findall(r"`([\w:~]+)\(\)`", cell["function"])
        specs = []
        for spec in re.findall(r"`([^`]+)`", cell["operation"]):
            sm = re.fullmatch(r"(?:(\w+)\s*(?:\.|->)\s*)?([\w:]+)(?:\(\))?", spec)
            if sm:
                specs.append((sm.group(1), sm.group(2)))
        order = cell["order"].split()[0].strip(",;") if cell["order"] else ""
        if not funcs:
            problem(where, f"end [P{pid} {m.group(2)}] names no function (`Class::member()`)")
        if not specs:
            problem(where, f"end [P{pid} {m.group(2)}] names no operation (`m_head.exchange`)")
        if order not in ORDERS:
            problem(where, f"end [P{pid} {m.group(2)}]: order '{cell['order']}' is none of "
                           f"{', '.join(ORDERS)}")
        key = (pid, m.group(2))
        if key in ends:
            problem(where, f"end [P{pid} {m.group(2)}] listed twice")
        ends[key] = End(pid, m.group(2), funcs, specs, order, where)
    if columns is None:
        problem(ARCH_REL, "no pairing table in 'Memory-ordering pairings'")
    return ids, ends


def function_matches(listed, actual):
    """Whether the table's name (Class::member or member) names the function actual."""
    return actual is not None and (actual == listed or actual.endswith("::" + listed))


def spec_matches(spec, op):
    receiver, name = spec
    if name.startswith("std::") or op.name.startswith("std::"):
        return name == op.name and receiver is None
    return name == op.name and (receiver is None) == (op.receiver is None) \
        and (receiver is None or receiver == op.receiver)


def check_pairings(srcs):
    ids, ends = table()
    std_names, qt_names, other = atomic_names(srcs)
    unambiguous = {n for n in std_names - other if re.match(r"(m_|g_|qfc)\w+$", n)}
    for src in srcs:
        ops = find_ops(src, std_names, qt_names, unambiguous)
        by_line = {}
        for op in ops:
            by_line.setdefault(op.line, []).append(op)
        for k, comment in enumerate(src.comment_lines):
            where = f"{src.rel}:{k + 1}"
            labels = []
            for m in ANY_LABEL.finditer(comment):
                lm = LABEL.fullmatch(m.group(0))
                if not lm:
                    problem(where, f"{m.group(0)} is no end label: an end carries [Pn end] (see "
                                   f"{ARCH_REL}), a cross-reference says (see Pn)")
                    continue
                labels.append(lm)
            for m in REFERENCE.finditer(LABEL.sub("", comment)):
                if m.group(1) not in ids:
                    problem(where, f"P{m.group(1)} is not a pairing of {ARCH_REL}")
            if not labels:
                continue
            statement = labelled_statement(src, k)
            for lm in labels:
                pid, name = lm.group(1), lm.group(2)
                label = lm.group(0)
                if pid not in ids:
                    problem(where, f"{label}: pairing P{pid} is not in the table of {ARCH_REL}")
                    continue
                end = ends.get((pid, name))
                if end is None:
                    known = sorted(e.name for e in ends.values() if e.pid == pid)
                    problem(where, f"{label}: P{pid} has no end '{name}' in {ARCH_REL} "
                                   f"(its ends: {', '.join(known) or 'none in src/'})")
                    continue
                if statement is None:
                    problem(where, f"{label} labels no statement: put it on the operation's "
                                   f"line or in the comment block directly above it")
                    continue
                first, last = statement
                mine = [op for j in range(first, last + 1) for op in by_line.get(j, [])
                        if any(spec_matches(s, op) for s in end.specs)]
                if not mine:
                    wanted = " or ".join(f"`{r + '.' if r else ''}{n}`" for r, n in end.specs)
                    problem(f"{src.rel}:{first + 1}", f"{label}: no {wanted} in the labelled "
                                                      f"statement (lines {first + 1}-{last + 1})")
                    continue
                for op in mine:
                    op.claimed = True
                    if op.order != end.order:
                        problem(op.where(), f"{label}: `{op.spelled()}` is {op.order}, the table "
                                            f"says {end.order}")
                    end.places.append((op, src.function_at(op.offset)))
        for op in ops:
            if not op.claimed and op.order in ORDERING | {"?"}:
                problem(op.where(), f"`{op.spelled()}` ({op.order}) carries no end label "
                                    f"([Pn end] on its line or in the comment just above it; "
                                    f"see {ARCH_REL})")
    for end in ends.values():
        if not end.places:
            problem(end.line, f"end {end.label()} is labelled nowhere in src/ (the table puts it "
                              f"in {', '.join(f + '()' for f in end.functions)})")
            continue
        for op, function in end.places:
            if not any(function_matches(f, function) for f in end.functions):
                problem(op.where(), f"{end.label()} is in {function or 'no function'}(), not "
                                    f"where the table puts it "
                                    f"({', '.join(f + '()' for f in end.functions)})")
        for f in end.functions:
            if not any(function_matches(f, function) for _, function in end.places):
                problem(end.line, f"end {end.label()} is not labelled in {f}() (labelled in "
                                  f"{', '.join(sorted({str(fn) + '()' for _, fn in end.places}))})")


def labelled_statement(src, k):
    """The (first, last) lines of the statement a label on line k covers, or None."""
    if src.code_lines[k].strip():
        return src.statement_of[k]
    j = k + 1
    while j < len(src.code_lines):
        if src.code_lines[j].strip():
            return src.statement_of[j]
        if not src.comment_lines[j].strip():
            return None  # a blank line
        j += 1
    return None


# ---- functions named in comments -----------------------------------------------------------

CLASS_HEAD = re.compile(r"^\s*(?:template\s*<[^;{]*>\s*)?(?:class|struct)\s+"
                        r"(?:Q_FASTCONNECT_EXPORT\s+|alignas\([^)]*\)\s+)*(\w+)\b[^;]*$")
IDENT = re.compile(r"\b([A-Za-z_]\w*)\b")
NAMED = re.compile(r"\b(Q\w+)::(\w+)\(\)")
QDOC = re.compile(r"/\*!.*?(?:\*/|\Z)", re.S)
UNQUALIFIED = re.compile(r"(?<![\w:.>~])([A-Za-z_]\w*)\(\)")


def class_members(srcs):
    """Class name -> every identifier in its body(ies), plus Class::name definitions."""
    members = {}
    defined_out_of_class = {}
    for src in srcs:
        text = src.code
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


def check_names(srcs):
    members = class_members(srcs)
    defined = set(members)
    identifiers = set()
    for src in srcs:
        identifiers.update(IDENT.findall(src.code))
    targets = [(src.rel, src.comment_lines, QDOC.sub(lambda m: NOT_NEWLINE.sub(" ", m.group(0)),
                                                     src.comments).split("\n"))
               for src in srcs]
    arch = ARCH.read_text(encoding="utf-8").splitlines()
    targets.append((ARCH_REL, arch, arch))
    for rel, lines, unqualified in targets:
        for n, text in enumerate(lines, 1):
            for cls, name in NAMED.findall(text):
                if cls in defined and name not in members[cls]:
                    problem(f"{rel}:{n}", f"{cls}::{name}() does not exist")
            # Not in qdoc blocks: the user's documentation names Qt's API for the user.
            for name in UNQUALIFIED.findall(unqualified[n - 1]):
                if name not in identifiers and name not in EXTERNAL_NAMES:
                    problem(f"{rel}:{n}", f"{name}() is named nowhere in src/'s code (Qt's "
                                          f"or the system's: qualify it, QThread::wait(), or "
                                          f"add it to EXTERNAL_NAMES)")


def check(root):
    """The problems of the tree at root, one line each (none: it holds)."""
    global ROOT, SRC, ARCH
    ROOT = pathlib.Path(root).resolve()
    SRC = ROOT / "src"
    ARCH = ROOT / "docs" / "architecture.md"
    problems.clear()
    srcs = sources()
    check_pairings(srcs)
    check_names(srcs)
    return list(problems)


def main():
    found = check(sys.argv[1] if len(sys.argv) > 1 else ROOT)
    for p in found:
        print(p)
    if found:
        print(f"check-comments: {len(found)} problem(s)", file=sys.stderr)
        return 1
    print("check-comments: both ends of every memory-order pairing, and the functions comments "
          "name, agree with the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
