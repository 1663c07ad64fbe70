#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# The funnel's Qt tracepoints (src/fastconnect/qtfastconnect.tracepoints) under LTTng, end to
# end: builds the module with QT_FASTCONNECT_LTTNG=ON (LTTng tracepoints with a Qt built without
# tracing, such as Debian's), records a user-space LTTng session while tst_bench_funnel --deliver
# sends calls through a per-call and a batched connection, reads the trace with babeltrace2 and
# checks it: one qfunnel_capture per call emitted, every call in a delivery pass (qfunnel_pass_end)
# and, for the batched connection, in a qfunnel_batch, as many pass ends as pass begins, relay
# rounds that routed no more calls than were captured, and no event lost. Prints the events'
# counts. Installs LTTng's packages (liblttng-ust-dev, lttng-tools, babeltrace2) if missing and
# starts a session daemon if none runs. Root only (the daemon, apt).
#
# Usage: scripts/trace-lttng.sh [build-dir] [calls]   (defaults: build-lttng, 30000)
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-lttng}
calls=${2:-30000}
warmup=70000 # tst_bench_funnel --deliver's warm-up calls (benchmarks/funnel/deliveronly.cpp)
scripts/install-deps.sh liblttng-ust-dev lttng-tools babeltrace2 pkg-config >&2
source scripts/lib/ccache.sh

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQT_FASTCONNECT_LTTNG=ON \
    -DQT_BUILD_BENCHMARKS=ON "${ccache_cmake_args[@]}" >/dev/null
cmake --build "$build" --target tst_bench_funnel >/dev/null
binary="$build/benchmarks/funnel/tst_bench_funnel"

pgrep -x lttng-sessiond >/dev/null || lttng-sessiond --daemonize
session="qfc-trace-$$"
trace=$(mktemp -d)
trap 'lttng destroy "$session" >/dev/null 2>&1 || true; rm -rf "$trace"' EXIT
lttng create "$session" --output="$trace/out" >/dev/null
# Buffers large enough for every event: a discarded one would fail the counts below.
lttng enable-channel -u -s "$session" --subbuf-size=8M --num-subbuf=8 qfc >/dev/null
lttng enable-event -u -s "$session" -c qfc 'qtfastconnect:*' >/dev/null
lttng start "$session" >/dev/null
for path in funnel funnel-batched; do
    "$binary" --deliver "$path" "$calls" >/dev/null
done
lttng stop "$session" >/dev/null
lttng destroy "$session" >/dev/null

# babeltrace2 warns on stderr about discarded events; keep it for the check.
babeltrace2 "$trace/out" >"$trace/events.txt" 2>"$trace/babeltrace.err"
if grep -qi "discarded" "$trace/babeltrace.err"; then
    echo "trace-lttng: LTTng discarded events:" >&2
    cat "$trace/babeltrace.err" >&2
    exit 1
fi
# Per event: its count and the sum of its calls field (0 if it has none).
awk -v expected=$((2 * (warmup + calls))) -v batched=$((warmup + calls)) '
    match($0, /qtfastconnect:[a-z_]+/) {
        name = substr($0, RSTART + 14, RLENGTH - 14)
        n[name]++
        if (match($0, /calls = [0-9]+/))
            sum[name] += substr($0, RSTART + 8, RLENGTH - 8)
    }
    END {
        split("capture relay_round pass_begin pass_end batch", order)
        for (i = 1; i <= 5; i++) {
            e = "qfunnel_" order[i]
            printf "%-20s %9d events, calls %d\n", e, n[e], sum[e]
        }
        bad = 0
        if (n["qfunnel_capture"] != expected) {
            printf "qfunnel_capture: %d events for %d calls emitted\n", n["qfunnel_capture"], expected
            bad = 1
        }
        if (sum["qfunnel_pass_end"] != expected) {
            printf "qfunnel_pass_end: %d calls run for %d emitted\n", sum["qfunnel_pass_end"], expected
            bad = 1
        }
        if (n["qfunnel_pass_begin"] != n["qfunnel_pass_end"] || !n["qfunnel_pass_end"]) {
            printf "qfunnel_pass_begin/end: %d and %d\n", n["qfunnel_pass_begin"], n["qfunnel_pass_end"]
            bad = 1
        }
        if (sum["qfunnel_batch"] != batched) {
            printf "qfunnel_batch: %d calls batched for %d emitted\n", sum["qfunnel_batch"], batched
            bad = 1
        }
        if (!n["qfunnel_relay_round"] || sum["qfunnel_relay_round"] > expected) {
            printf "qfunnel_relay_round: %d rounds, %d calls\n", n["qfunnel_relay_round"], sum["qfunnel_relay_round"]
            bad = 1
        }
        exit bad
    }' "$trace/events.txt"
