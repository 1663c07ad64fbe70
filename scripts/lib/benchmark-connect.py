#!/usr/bin/env python3
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the benchmark report's connect-cost section from what scripts/lib/benchmark-connect.sh
left in its raw dir: results.csv (tst_bench_connect's experiment,series,threads,bytes,metric,value
lines) and machine.txt. benchmark-sections.py puts it into REPORT.md.
Usage: benchmark-connect.py RAW_DIR OUT_MD"""

import csv
import os
import sys

raw, out = sys.argv[1], sys.argv[2]

# data[(experiment, series, threads, bytes)][metric] = value
data = {}
with open(os.path.join(raw, "results.csv")) as f:
    for row in csv.reader(f):
        if len(row) == 6:
            exp, series, threads, size, metric, value = row
            data.setdefault((exp, series, int(threads), int(size)), {})[metric] = float(value)
machine = {}
with open(os.path.join(raw, "machine.txt")) as f:
    for line in f:
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            machine[k] = v

TARGET = 1.5
KINDS = (("typed", "typed"), ("functor", "functor"))


def get(exp, series, threads, size, metric):
    return data.get((exp, series, threads, size), {}).get(metric)


def sizes(exp, metric):
    return sorted({k[3] for k, v in data.items() if k[0] == exp and metric in v})


def fmt_ratio(r):
    return "–" if r is None else f"{r:.2f}×"


verdicts = []  # (what, ratio)
md = []
md.append(f"{machine.get('date', '?')}, commit {machine.get('commit', '?')}, Qt "
          f"{machine.get('qt', '?')}, {machine.get('compiler', '?')}, Release, "
          f"{machine.get('cores', '?')} cores, load {machine.get('load', '?')}, "
          f"{machine.get('mode', '?')} run, {machine.get('seconds', '?')} s "
          "(`scripts/benchmark-report.sh --connect`).\n")


def per_kind_rows(metric, what, cell, funnel_over_qt):
    """One row per receivers row and connection kind: Qt's cell, the funnel's, their ratio
    (funnel ÷ Qt; funnel_over_qt(q, f) gives it from the raw values)."""
    rows = []
    for receivers in sizes("connect", metric):
        label = "10 receivers" if receivers <= 10 else "a receiver per sender"
        for kind, name in KINDS:
            q = get("connect", f"qt-queued-{kind}", 0, receivers, metric)
            fn = get("connect", f"funnel-{kind}", 0, receivers, metric)
            if not q or not fn:
                continue
            r = funnel_over_qt(q, fn)
            verdicts.append((f"{what}, {name}, {label}", r))
            rows.append(f"| {name} | {label} | {cell(q)} | {cell(fn)} | {fmt_ratio(r)} |")
    return rows


# Connect + disconnect: ns per pair from pairs per second.
rows = per_kind_rows("pairs_per_s", "connect + disconnect", lambda v: f"{1e9 / v:,.0f}",
                     lambda q, fn: q / fn)
if rows:
    md.append("Connect + disconnect by handle (`tst_bench_connect connectDisconnect`): 1,000 "
              "senders in the main thread, receivers in another thread, the four connections "
              "taking turns block by block; medians of the blocks.\n")
    md.append("| connection | receivers | Qt queued ns per pair | funnel ns per pair | funnel ÷ Qt |")
    md.append("|---|---|---:|---:|---:|")
    md += rows
    md.append("")

rows = per_kind_rows("bytes_per_connection", "bytes per connection", lambda v: f"{v:,.0f}",
                     lambda q, fn: fn / q)
if rows:
    md.append("Heap per live connection (`tst_bench_connect memoryPerConnection`, `mallinfo2()`, "
              "fresh senders and receivers, each row in a process of its own).\n")
    md.append("| connection | receivers | Qt queued bytes | funnel bytes | funnel ÷ Qt |")
    md.append("|---|---|---:|---:|---:|")
    md += rows
    md.append("")

rows = []
race = [k for k in data if k[0] == "destroyrace" and k[1] == "funnel"]
for key in sorted(race):
    _, _, threads, per_thread = key
    for metric, name in (("connect_ms", "main thread's connects, ms"),
                         ("threads_ms", "threads, until all finished, ms"),
                         ("peak_rss_mib", "peak RSS growth, MiB")):
        q = get("destroyrace", "qt-queued", threads, per_thread, metric)
        fn = get("destroyrace", "funnel", threads, per_thread, metric)
        if not q or fn is None:
            continue
        r = fn / q
        verdicts.append((f"destroyRace, {name.split(',')[0]}", r))
        rows.append(f"| {name} | {q:,.0f} | {fn:,.0f} | {fmt_ratio(r)} |")
    if rows:
        md.append(f"Qt's `tst_qobjectrace::destroyRace` with every connection a funnel connection or "
                  f"`Qt::QueuedConnection` (`tst_bench_connect destroyRace`: {threads} threads × "
                  f"{per_thread:,} objects, 68 connects per object from the main thread, two by "
                  "name, one typed, one functor per step; then each thread connects, emits, "
                  "disconnects and deletes its objects), each in a process of its own; medians.\n")
        md.append("| | Qt queued | funnel | funnel ÷ Qt |")
        md.append("|---|---:|---:|---:|")
        md += rows
        md.append("")

met = [w for w, r in verdicts if r <= TARGET]
missed = [f"{w} ({r:.2f}×)" for w, r in verdicts if r > TARGET]
summary = (f"Target (issue 37): funnel ≤ {TARGET}× Qt's time and memory in every row. "
           + ("**Met.**" if verdicts and not missed else
              f"**Missed** in {len(missed)} of {len(verdicts)} rows: " + "; ".join(missed) + ".")
           + " What a connect and a receiver still cost beyond Qt's own, and what was changed so "
           "far, with callgrind's per-function counts: `docs/connect-cost.md`.\n")
md.insert(1, summary)

os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out, "w") as f:
    f.write("\n".join(md).rstrip("\n") + "\n")
