#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
"""Puts the per-Qt-version sections (benchmarks/results/qt-versions/<label>.md, written by
scripts/benchmark-report.sh --qt VERSION) into REPORT.md, between two markers, replacing what
was there: a full report run rewrites REPORT.md and keeps them this way. With "platforms", the
same for the emulated platforms' sections (benchmarks/results/platforms/<name>.md, written by
scripts/benchmark-report.sh --platform NAME); with "connect", for the connect-cost section
(benchmarks/results/connect/connect.md, written by scripts/benchmark-report.sh --connect).
Usage: benchmark-sections.py RESULTS_DIR [platforms|connect]"""

import os
import sys

results = sys.argv[1]
kind = sys.argv[2] if len(sys.argv) > 2 else "qt-versions"
report = os.path.join(results, "REPORT.md")
sections_dir = os.path.join(results, kind)
BEGIN = "<!-- %s: begin -->" % kind
END = "<!-- %s: end -->" % kind

if kind == "connect":
    labels = ("connect",)
    title = "## 9. Connect cost (issue 37)"
    intro = ("What connecting and disconnecting cost, in time and memory, beside "
             "`Qt::QueuedConnection` measured in the same run (`tst_bench_connect`).")
elif kind == "platforms":
    labels = ("windows", "arm64", "armhf")
    title = "## Emulated platforms"
    intro = ("What `scripts/benchmark-report.sh --platform NAME` measured with the build of that "
             "platform's CI stage, under Wine (Windows) or qemu-user (ARM) on the x86-64 build "
             "machine: the main example's table and the relay round. These are not performance "
             "figures for those platforms: the emulator's own costs and timers are in every "
             "number. They show that the code runs there, and how long the relay's sleeps "
             "really are through the emulator's timers (on Windows, a high-resolution waitable "
             "timer; its nominal round is 50 µs).")
else:
    # Oldest Qt first; labels are run-tests.sh's --qt values.
    labels = ("6.4", "6.8", "newest")
    title = "## Per Qt version"
    intro = ("The key rows against each Qt version CI tests, one `scripts/benchmark-report.sh --qt "
             "VERSION` run per version (6.4: the host's Qt; 6.8 and newest: in the Debian roots of "
             "`scripts/qt-root.sh`) on the same shared 2-core machine. Each ratio compares two paths "
             "measured in the same run of `tst_bench_funnel throughput` (a few seconds); the table gives "
             "the median of three such runs and their range, which shows how much one run moves on this "
             "machine. Absolute rates move more: compare ratios across sections, not calls/s. "
             "Instructions per call are `scripts/callgrind-per-call.sh` medians of three runs.")
sections = []
for label in labels:
    path = os.path.join(sections_dir, label + ".md")
    if os.path.exists(path):
        with open(path) as f:
            sections.append(f.read().strip())
if not sections:
    sys.exit(0)

block = "\n".join([
    BEGIN,
    title,
    "",
    intro,
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
