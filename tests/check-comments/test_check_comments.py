#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# The tests of scripts/check-comments.py. It must pass on this checkout and on the fixture
# (fixture/: a mini src/fastconnect and docs/architecture.md), and fail, with the message
# expected, on each deliberate break below: issue 39's list (the ones the old check caught and
# the ones it missed) and one more of each kind, each applied to a fresh copy of the fixture;
# and the issue's own breaks, applied to a copy of this checkout's src/ and architecture page.
# A break is a text replacement that must apply exactly once: when the tree it aims at changes,
# the test says so instead of passing unchecked.
#
# Usage: python3 tests/check-comments/test_check_comments.py [-v]     (stdlib only, a second)
# scripts/run-tests.sh runs it in its first step, the source checks, before any build.

import importlib.util
import pathlib
import re
import shutil
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
FIXTURE = HERE / "fixture"

_spec = importlib.util.spec_from_file_location("check_comments",
                                               CHECKOUT / "scripts" / "check-comments.py")
check_comments = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_comments)

BATCH = "src/fastconnect/qfunnelbatch_p.h"
CORE = "src/fastconnect/qfunnelcore_p.h"
RELAY_H = "src/fastconnect/qfunnelrelay_p.h"
RELAY = "src/fastconnect/qfunnelrelay.cpp"
POOL = "src/fastconnect/pool/qpoolallocator.h"
ARCH = "docs/architecture.md"

# name: (edits [(file, old text, new text)], expected messages [regular expressions]).
FIXTURE_BREAKS = {
    # ---- dropped label: issue 39's, then one more
    "dropped_label": (
        [(RELAY, "// [P27 start] release:", "// release:")],
        [r"qfunnelrelay\.cpp:15: `m_running\.store` \(release\) carries no end label",
         r"end \[P27 start\] is labelled nowhere in src/"]),
    "dropped_label_2": (  # a ThreadSanitizer annotation's
        [(RELAY, "qfcAnnotateRelease(e); // [P21 post]", "qfcAnnotateRelease(e);")],
        [r"qfunnelrelay\.cpp:\d+: `qfcAnnotateRelease` \(release\) carries no end label",
         r"end \[P21 post\] is labelled nowhere"]),
    # ---- renamed label: issue 39's, then one more
    "renamed_label": (
        [(BATCH, "[P2 seal]", "[P2 sealed]")],
        [r"qfunnelbatch_p\.h:\d+: \[P2 sealed\]: P2 has no end 'sealed' .*\(its ends: seal, see\)",
         r"end \[P2 seal\] is labelled nowhere"]),
    "renamed_label_2": (  # to a pairing the table lacks, and to the old form
        [(RELAY_H, "[P27 check]", "[P72 check]"), (RELAY, "[P27 start]", "[P27]")],
        [r"qfunnelrelay_p\.h:\d+: \[P72 check\]: pairing P72 is not in the table",
         r"qfunnelrelay\.cpp:\d+: \[P27\] is no end label",
         r"end \[P27 check\] is labelled nowhere", r"end \[P27 start\] is labelled nowhere"]),
    # ---- deleted comment: issue 39's, then one more
    "deleted_comment": (
        [(RELAY_H, "        // [P27 check] acquire: with start()'s release.\n", "")],
        [r"qfunnelrelay_p\.h:14: `m_running\.load` \(acquire\) carries no end label",
         r"end \[P27 check\] is labelled nowhere"]),
    "deleted_comment_2": (
        [(BATCH, "        // [P2 seal] acq_rel: release, the relay is done reading; acquire, see "
                 "P1.\n", "")],
        [r"`state\.compare_exchange_strong` \(acq_rel\) carries no end label",
         r"end \[P2 seal\] is labelled nowhere"]),
    # ---- a new ordered operation after a blank line: issue 39's, then one more
    "release_store_after_blank_line": (
        [(RELAY, "    m_running.store(true, std::memory_order_release);\n",
          "    m_running.store(true, std::memory_order_release);\n\n"
          "    m_idle.store(false, std::memory_order_release);\n")],
        [r"qfunnelrelay\.cpp:17: `m_idle\.store` \(release\) carries no end label"]),
    "store_after_blank_line_2": (  # a seq_cst one, in another file
        [(CORE, "        sweep();\n",
          "        sweep();\n\n        m_stopped.store(false, std::memory_order_seq_cst);\n")],
        [r"qfunnelcore_p\.h:\d+: `m_stopped\.store` \(seq_cst\) carries no end label"]),
    # ---- a stale Class::member(): issue 39's, then one more
    "stale_member": (
        [(RELAY, "// A fixture of tests/check-comments: not built. The relay thread, and its "
                 "wake-ups.",
          "// A fixture of tests/check-comments: not built. QFunnelRelay::isQuiet() says it.")],
        [r"qfunnelrelay\.cpp:4: QFunnelRelay::isQuiet\(\) does not exist"]),
    "stale_member_2": (  # in the architecture page
        [(ARCH, "hands it back with\n`trySeal()`", "hands it back with\n`QFunnelBatch::seal()`")],
        [r"docs/architecture\.md:4: QFunnelBatch::seal\(\) does not exist"]),
    # ---- the relay's end of a pairing labelled as another pairing's: issue 39's, then one more
    "relay_end_relabelled": (  # the relay's end of P2 as P9's
        [(BATCH, "// [P2 seal] acq_rel:", "// [P9 stop] acq_rel:")],
        [r"qfunnelbatch_p\.h:\d+: \[P9 stop\]: no `m_halted\.store` in the labelled statement",
         r"end \[P2 seal\] is labelled nowhere",
         r"`state\.compare_exchange_strong` \(acq_rel\) carries no end label"]),
    "relay_end_relabelled_2": (  # the relay's end of P27 as P10's
        [(RELAY, "// [P27 start] release:", "// [P10 stop] release:")],
        [r"\[P10 stop\]: no `m_stopped\.exchange` in the labelled statement",
         r"end \[P27 start\] is labelled nowhere",
         r"`m_running\.store` \(release\) carries no end label"]),
    # ---- the producer's end labelled as another pairing's: issue 39's, then one more
    "producer_end_relabelled": (  # the producer's end of P2 as P10's: still two P2 mentions
        [(BATCH, "[P2 see] Acquire", "[P10 stop] Acquire")],
        [r"\[P10 stop\]: no `m_stopped\.exchange` in the labelled statement",
         r"end \[P2 see\] is labelled nowhere"]),
    "producer_end_relabelled_2": (  # the producer's end of P1 as P9's
        [(BATCH, "[P1 publish] Release", "[P9 check] Release")],
        [r"\[P9 check\]: no `m_halted\.load` in the labelled statement",
         r"end \[P1 publish\] is labelled nowhere"]),
    # ---- a labelled operation's order changed: issue 39's, then one more
    "load_acquire_to_relaxed": (  # QFunnelBatch::load()
        [(BATCH, "state.load(std::memory_order_acquire)", "state.load(std::memory_order_relaxed)")],
        [r"qfunnelbatch_p\.h:26: \[P1 read\]: `state\.load` is relaxed, the table says acquire"]),
    "order_changed_2": (  # a compare-exchange's success order
        [(BATCH, "seen | Sealed, std::memory_order_acq_rel,",
          "seen | Sealed, std::memory_order_release,")],
        [r"\[P2 seal\]: `state\.compare_exchange_strong` is release, the table says acq_rel"]),
    # ---- a new ordered operation within 8 lines of a label: issue 39's, then one more
    "release_store_near_label": (  # the line right after a labelled one
        [(RELAY, "    m_running.store(true, std::memory_order_release);\n",
          "    m_running.store(true, std::memory_order_release);\n"
          "    m_idle.store(false, std::memory_order_release);\n")],
        [r"qfunnelrelay\.cpp:16: `m_idle\.store` \(release\) carries no end label"]),
    "fence_near_label": (  # a fence, just above a labelled statement's comment
        [(BATCH, "        calls[i] = call;\n",
          "        calls[i] = call;\n"
          "        std::atomic_thread_fence(std::memory_order_release);\n")],
        [r"qfunnelbatch_p\.h:20: `std::atomic_thread_fence` \(release\) carries no end label"]),
    # ---- a stale unqualified name(): issue 39's, then one more
    "stale_unqualified_name": (  # qPoolRefill(), gone
        [(POOL, "// the owner's; refilled by qPoolRefillShared()",
          "// the owner's; refilled by qPoolRefill()")],
        [r"qpoolallocator\.h:\d+: qPoolRefill\(\) is named nowhere in src/'s code"]),
    "stale_unqualified_name_2": (
        [(RELAY, "ensureStarted() may skip the lock", "ensureRunning() may skip the lock")],
        [r"qfunnelrelay\.cpp:\d+: ensureRunning\(\) is named nowhere in src/'s code"]),
    # ---- more ways to break it
    "label_in_another_function": (  # the right end and operation, where the table says not
        [(CORE, "    bool isStopped() const noexcept",
          "    bool isHalted() const noexcept { return m_stopped.load(std::memory_order_seq_cst); }"
          " // [P10 check]\n    bool isStopped() const noexcept")],
        [r"qfunnelcore_p\.h:18: \[P10 check\] is in QFunnelCore::isHalted\(\), not where the "
         r"table puts it \(QFunnelCore::isStopped\(\)\)"]),
    "qt_operation_unlabelled": (  # Qt's named operations order too
        [(RELAY, " // [P31 read] as Qt's readers", "")],
        [r"qfunnelrelay\.cpp:\d+: `theMainThread\.loadAcquire` \(acquire\) carries no end label",
         r"end \[P31 read\] is labelled nowhere"]),
    "qt_operation_relaxed": (
        [(RELAY, "theMainThread.loadAcquire()", "theMainThread.loadRelaxed()")],
        [r"\[P31 read\]: no `theMainThread\.loadAcquire` in the labelled statement"]),
    "default_order": (  # seq_cst by default, unsaid
        [(RELAY, "        m_rounds.fetch_add(1, std::memory_order_relaxed);\n",
          "        m_rounds.fetch_add(1);\n")],
        [r"qfunnelrelay\.cpp:\d+: `m_rounds\.fetch_add` leaves its memory order to the default"]),
    "operator_on_atomic": (
        [(RELAY, "        m_rounds.fetch_add(1, std::memory_order_relaxed);\n",
          "        ++m_rounds;\n")],
        [r"qfunnelrelay\.cpp:\d+: an operator on the std::atomic `m_rounds`"]),
    "unknown_reference": (
        [(BATCH, "acquire, see P1.", "acquire, see P77.")],
        [r"qfunnelbatch_p\.h:\d+: P77 is not a pairing"]),
    # ---- the table's side
    "table_function_moved": (
        [(ARCH, "| `[P2 seal]` | `QFunnelBatch::trySeal()` |",
          "| `[P2 seal]` | `QFunnelBatch::load()` |")],
        [r"qfunnelbatch_p\.h:\d+: \[P2 seal\] is in QFunnelBatch::trySeal\(\), not where the "
         r"table puts it \(QFunnelBatch::load\(\)\)",
         r"end \[P2 seal\] is not labelled in QFunnelBatch::load\(\)"]),
    "table_order_changed": (
        [(ARCH, "| `m_running.store` | release |", "| `m_running.store` | seq_cst |")],
        [r"\[P27 start\]: `m_running\.store` is release, the table says seq_cst"]),
    "table_row_dropped": (
        [(ARCH, "| | `[P19 ask]` | `QFunnelRelay::isIdle()` | `m_idle.load` | relaxed |\n", "")],
        [r"qfunnelrelay_p\.h:\d+: \[P19 ask\]: P19 has no end 'ask'"]),
}

# The issue's own breaks, on a copy of this checkout.
TREE_BREAKS = {
    "tree_relay_end_relabelled": (
        [(BATCH, "// [P2 seal] acq_rel:", "// [P9 stop] acq_rel:")],
        [r"\[P9 stop\]: no `m_stopped\.store`", r"end \[P2 seal\] is labelled nowhere"]),
    "tree_producer_end_relabelled": (
        [(BATCH, "[P2 see] Acquire", "[P10 stop] Acquire")],
        [r"\[P10 stop\]: no `m_stopped\.exchange`", r"end \[P2 see\] is labelled nowhere"]),
    "tree_load_acquire_to_relaxed": (
        [(BATCH, "return state.load(std::memory_order_acquire);",
          "return state.load(std::memory_order_relaxed);")],
        [r"\[P1 read\]: `state\.load` is relaxed, the table says acquire"]),
    "tree_release_store_near_label": (
        [(BATCH, "        return state.fetch_or(Abandoned, std::memory_order_acq_rel) & Sealed;\n",
          "        state.store(Abandoned, std::memory_order_release);\n"
          "        return state.fetch_or(Abandoned, std::memory_order_acq_rel) & Sealed;\n")],
        [r"qfunnelbatch_p\.h:\d+: `state\.store` \(release\) carries no end label"]),
    "tree_stale_unqualified_name": (
        [(POOL, "taking the whole list (the library's adoptBacklog())",
          "taking the whole list (the library's qPoolRefill())")],
        [r"pool/qpoolallocator\.h:\d+: qPoolRefill\(\) is named nowhere"]),
}


def copy_tree(base, into):
    shutil.copytree(base / "src", into / "src")
    (into / "docs").mkdir()
    shutil.copy2(base / ARCH, into / ARCH)


def apply(root, edits):
    for rel, old, new in edits:
        path = root / rel
        text = path.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise AssertionError(f"the break no longer applies: {rel} holds {text.count(old)} "
                                 f"of {old!r}")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")


class CheckComments(unittest.TestCase):
    def check_broken(self, base, edits, expected):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            copy_tree(base, root)
            apply(root, edits)
            found = check_comments.check(root)
        self.assertTrue(found, "the check passed on a broken tree")
        for pattern in expected:
            self.assertTrue(any(re.search(pattern, p) for p in found),
                            f"no problem matches {pattern!r}; the check said:\n"
                            + "\n".join(found))

    def test_fixture_passes(self):
        self.assertEqual(check_comments.check(FIXTURE), [])

    def test_checkout_passes(self):
        self.assertEqual(check_comments.check(CHECKOUT), [])


def _add(name, base, edits, expected):
    setattr(CheckComments, f"test_{name}",
            lambda self: self.check_broken(base, edits, expected))


for _name, (_edits, _expected) in FIXTURE_BREAKS.items():
    _add(_name, FIXTURE, _edits, _expected)
for _name, (_edits, _expected) in TREE_BREAKS.items():
    _add(_name, CHECKOUT, _edits, _expected)

if __name__ == "__main__":
    sys.exit(not unittest.main(exit=False).result.wasSuccessful())
