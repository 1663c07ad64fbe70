#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
"""Puts the per-Qt-version sections (benchmarks/results/qt-versions/<label>.md, written by
scripts/benchmark-report.sh --qt VERSION) into REPORT.md, between two markers, replacing what
was there: a full report run rewrites REPORT.md and keeps them this way.
Usage: benchmark-qt-sections.py RESULTS_DIR"""

import os
import sys

results = sys.argv[1]
report = os.path.join(results, "REPORT.md")
sections_dir = os.path.join(results, "qt-versions")
BEGIN = "<!-- qt-versions: begin -->"
END = "<!-- qt-versions: end -->"

# Oldest Qt first; labels are run-tests.sh's --qt values.
sections = []
for label in ("6.4", "6.8", "newest"):
    path = os.path.join(sections_dir, label + ".md")
    if os.path.exists(path):
        with open(path) as f:
            sections.append(f.read().strip())
if not sections:
    sys.exit(0)

block = "\n".join([
    BEGIN,
    "## Per Qt version",
    "",
    "The key rows against each Qt version CI tests, one `scripts/benchmark-report.sh --qt "
    "VERSION` run per version (6.4: the host's Qt; 6.8 and newest: in the Debian roots of "
    "`scripts/qt-root.sh`) on the same shared 2-core machine. Each ratio compares two paths "
    "measured in the same run of `tst_bench_funnel throughput` (a few seconds); the table gives "
    "the median of three such runs and their range, which shows how much one run moves on this "
    "machine. Absolute rates move more: compare ratios across sections, not calls/s. "
    "Instructions per call are `scripts/callgrind-per-call.sh` medians of three runs.",
    "",
    "\n\n".join(sections),
    END,
])

with open(report) as f:
    text = f.read()
if BEGIN in text and END in text:
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    text = head + block + tail
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
with open(report, "w") as f:
    f.write(text)
