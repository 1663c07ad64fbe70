#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# The benchmark report's key rows against the one Qt of the system it runs on (the host, or a
# Debian root entered by scripts/qt-root.sh), for scripts/benchmark-report.sh --qt VERSION:
#   - calls/s with 1 and 32 producer threads, Qt::QueuedConnection and the funnel measured in
#     the same run (tst_bench_funnel throughput), and their ratio: the median of 3 runs (the
#     binary runs a few seconds, and the shared machine moves one run's ratio a lot), with the
#     calls/s of the run that gave it and the range of the ratios;
#   - instructions per delivered call for the funnel, QtFastConnect::invoke, Qt::QueuedConnection
#     and Qt::DirectConnection (scripts/callgrind-per-call.sh).
# Writes the Markdown section benchmarks/results/qt-versions/<label>.md; raw output goes to
# benchmarks/results/raw/qt-<label>/.
# Usage: scripts/lib/benchmark-qt-version.sh LABEL [--quick]
set -euo pipefail
cd "$(dirname "$0")/../.."

label=${1:?usage: $0 LABEL [--quick]}
quick=0
[[ "${2:-}" == "--quick" ]] && quick=1

scripts/install-deps.sh valgrind
qt_version=$(qmake6 -query QT_VERSION)
build=build-bench${QFC_QT_ROOT:+-$QFC_QT_ROOT}
raw=benchmarks/results/raw/qt-$label
out=benchmarks/results/qt-versions/$label.md
mkdir -p "$raw" "$(dirname "$out")"
csv=$PWD/$raw/results.csv
rm -f "$csv"
started=$SECONDS

echo "building tst_bench_funnel against Qt $qt_version in $build (Release)" >&2
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQT_BUILD_BENCHMARKS=ON \
      >"$raw/configure.log" 2>&1 || { tail -n 30 "$raw/configure.log" >&2; exit 1; }
cmake --build "$build" --target tst_bench_funnel >"$raw/build.log" 2>&1 ||
    { tail -n 30 "$raw/build.log" >&2; exit 1; }
bench=$build/benchmarks/funnel/tst_bench_funnel

if [[ $quick -eq 1 ]]; then runs=1; else runs=3; fi
for ((r = 1; r <= runs; ++r)); do
    echo "running tst_bench_funnel throughput (1, 4 and 32 producers), run $r of $runs" >&2
    QFC_BENCH_CSV=$PWD/$raw/throughput.$r.csv "$bench" throughput \
        >"$raw/throughput.$r.log" 2>&1 || { tail -n 30 "$raw/throughput.$r.log" >&2; exit 1; }
done

echo "running callgrind-per-call.sh" >&2
if [[ $quick -eq 1 ]]; then cg=(-n 20000 -r 1); else cg=(-n 100000 -r 3); fi
scripts/callgrind-per-call.sh "${cg[@]}" -p "funnel funnel-invoke queued direct" -c "$csv" \
    "$build" >"$raw/callgrind.txt" 2>&1 || { tail -n 30 "$raw/callgrind.txt" >&2; exit 1; }

# value experiment series threads metric [csv]
value() {
    awk -F, -v e="$1" -v s="$2" -v t="$3" -v m="$4" \
        '$1 == e && $2 == s && $3 == t && $5 == m { v = $6 } END { print v }' "${5:-$csv}"
}
ir() { awk -v v="$(value one-producer "$1" 1 instructions_per_call)" 'BEGIN { printf "%.0f", v }'; }
# throughput_row N: "| N | queued | funnel | median ratio | range |" over the runs.
throughput_row() {
    local n=$1 r q f
    for ((r = 1; r <= runs; ++r)); do
        q=$(value producers queued "$n" calls_per_s "$raw/throughput.$r.csv")
        f=$(value producers funnel "$n" calls_per_s "$raw/throughput.$r.csv")
        awk -v q="$q" -v f="$f" 'BEGIN { printf "%.6f %s %s\n", f / q, q, f }'
    done | sort -g | awk -v n="$n" '
        { ratio[NR] = $1; q[NR] = $2; f[NR] = $3 }
        END {
            m = int((NR + 1) / 2)
            printf "| %d | %.2f M | %.2f M | %.2f× | %.2f–%.2f× |\n", n, q[m] / 1e6, f[m] / 1e6,
                   ratio[m], ratio[1], ratio[NR]
        }'
}

compiler=$(c++ --version | head -n 1)
tbb=$(dpkg-query -W -f='${Version}' libtbb-dev 2>/dev/null || echo unknown)
commit=${QFC_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
    echo "### Qt $qt_version"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, ${QFC_QT_ROOT:+Debian $QFC_QT_ROOT root, }$compiler," \
         "oneTBB $tbb, $(nproc) cores, load $(cut -d ' ' -f 1-3 /proc/loadavg)," \
         "$([[ $quick -eq 1 ]] && echo 'quick run' || echo 'full run'), $((SECONDS - started)) s."
    echo
    echo "| producers | Qt::QueuedConnection calls/s | funnel calls/s | funnel ÷ Qt, median of $runs run(s) | range |"
    echo "|---|---|---|---|---|"
    throughput_row 1
    throughput_row 32
    echo
    echo "Instructions per delivered call (one producer, \`quint64\`, all threads): funnel" \
         "**$(ir funnel)**, \`QtFastConnect::invoke\` **$(ir funnel-invoke)**," \
         "\`Qt::QueuedConnection\` $(ir queued), \`Qt::DirectConnection\` $(ir direct)."
} >"$out"
cat "$out"
