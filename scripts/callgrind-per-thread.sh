#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Instructions per delivered call on each thread, for one producer thread delivering quint64
# calls to a slot in the main thread: the producer, the funnel's relay, the receiver (the main
# thread) with and without the slot's own body, for FunnelConnection, QtFastConnect::invoke,
# Qt::QueuedConnection and QMetaObject::invokeMethod queued. And the ceiling that follows: the
# calls per second one receiver thread can take, however many cores produce, measured in CPU
# time. callgrind-per-call.sh counts all threads together; this one says where they run.
#
# Each path runs under callgrind with --separate-threads=yes (one out file per thread, OUT-01,
# OUT-02, ...) for N and for 2N calls (tst_bench_funnel --deliver, as callgrind-per-call.sh),
# and each thread's total difference divided by N is its share of one call. Threads are told
# apart by what they ran, not by number: the receiver is the one that ran main(), the producer
# ran ProducerPool::run, the relay QFunnelRelay::run; any other thread is "other". The slot's
# own body is the receiver thread's inclusive cost of Receiver::onValue (callgrind_annotate;
# Receiver::onValues, its loop over a batch included, for connectBatched's path),
# per call the same way. Valgrind serializes the threads, so how many calls each wake-up of the
# receiver finds, and how the pool recycles the producer's pages, follow its thread schedule and
# move from run to run, warm-up included: the receiver without the slot comes with its min and
# max over the runs. One run of 20,000 calls can be 100 instructions per call off; quote the
# default N's median of 3. The backlog column takes the schedule out: the receiver thread's
# instructions per call, slot excluded, while it drains a backlog the producer emitted first
# (--receiver-cost under callgrind, rounds of N and 2N calls), so that every wake-up finds a
# full pass: what the receiver costs when it is the bottleneck.
#
# The ceiling is tst_bench_funnel --receiver-cost, outside valgrind: the main thread's CPU time
# (CLOCK_THREAD_CPUTIME_ID) per call while it drains a backlog the producer emitted first, so
# that it is never idle (a producer flooding alongside does not keep it busy: the funnel's
# producer is slower per call than its receiver), the mean of 10 rounds per process; ceiling =
# 1 / that time, and its ratio to Qt queued's is taken within each process. The median over
# the R processes is shown.
#
# Usage: scripts/callgrind-per-thread.sh [-n N] [-r R] [-b CALLS] [-k DIR] [-p PATHS] [-c CSV]
#                                        <build-dir | tst_bench_funnel>
#   -n N      calls in the shorter callgrind run (default 100000)
#   -r R      measure each path R times and report the median (default 3); also the number of
#             --receiver-cost processes (10 rounds each)
#   -b CALLS  the backlog each --receiver-cost round drains (default 50000; 0: no ceiling)
#   -k DIR    keep the callgrind out files in DIR, with threads.txt naming each file's thread
#   -p PATHS  space-separated --deliver paths (default "funnel funnel-invoke funnel-batched
#             funnel-batched-invoke queued invoke-queued")
#   -c CSV    also append "per-thread,<path>,1,8,<metric>,<value>" lines to CSV

set -euo pipefail
source "$(dirname "$0")/lib/benchmark-run.sh"
source "$(dirname "$0")/lib/callgrind.sh"

usage() {
    echo "usage: $0 [-n N] [-r R] [-b CALLS] [-k DIR] [-p PATHS] [-c CSV]" \
         "<build-dir | path/to/tst_bench_funnel>" >&2
    exit 2
}

calls=100000
repeats=3
backlog=50000
keep=""
paths="funnel funnel-invoke funnel-batched funnel-batched-invoke queued invoke-queued"
csv=""
while getopts "n:r:b:k:p:c:h" opt; do
    case "$opt" in
        n) calls="$OPTARG" ;;
        r) repeats="$OPTARG" ;;
        b) backlog="$OPTARG" ;;
        k) keep="$OPTARG" ;;
        p) paths="$OPTARG" ;;
        c) csv="$OPTARG" ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -eq 1 ]] || usage
[[ "$calls" =~ ^[1-9][0-9]*$ ]] || { echo "error: -n needs a positive integer" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "error: -r needs a positive integer" >&2; exit 2; }
[[ "$backlog" =~ ^[0-9]+$ ]] || { echo "error: -b needs a number of calls" >&2; exit 2; }

require_valgrind callgrind_annotate

resolve_benchmark "$1" benchmarks/funnel/tst_bench_funnel
make_output_dir "$keep"
: >"$outdir/threads.txt"

# thread_costs <out file>: prints "<role> <Ir> <slot Ir or ->" for one thread's out file.
thread_costs() {
    local file="$1" total thread annotated
    total="$(awk '/^(summary|totals):/ { print $2; exit }' "$file")"
    [[ -n "$total" ]] || { echo "error: no summary line in $file" >&2; exit 1; }
    thread="$(awk '/^thread:/ { print $2; exit }' "$file")"
    annotated="$(callgrind_annotate --inclusive=yes --threshold=100 "$file" 2>&1)" ||
        { echo "error: callgrind_annotate $file failed:" >&2; echo "$annotated" >&2; exit 1; }
    # Lines look like "10,800,018 (24.17%)  ???:func(args) [object]": the count, its share,
    # the source file (??? without debug information), the function and its object file.
    awk -v total="$total" -v thread="$thread" -v file="$file" -v list="$outdir/threads.txt" '
        match($0, /^ *[0-9,]+ +\( *[0-9.]+%\) +/) {
            cost = $1
            gsub(",", "", cost)
            name = substr($0, RLENGTH + 1)
            sub(/ \[[^]]*\]$/, "", name)
            sub(/^[^:]*:/, "", name)
            if (name == "main")
                isMain = 1
            else if (name ~ /^ProducerPool::run\(/)
                isProducer = 1
            else if (name ~ /(^|::)QFunnelRelay::run\(\)$/)
                isRelay = 1
            else if (name == "Receiver::onValue(unsigned long long)" ||
                     name ~ /^Receiver::onValues\(QList<unsigned long long>\)$/)
                slot += cost
        }
        END {
            role = isMain ? "receiver" : isProducer ? "producer" : isRelay ? "relay" : "other"
            print role, total, (role == "receiver" && slot == "") ? "-" : slot + 0
            printf "%s thread %s %s %s\n", file, thread, role, total >> list
        }' <<<"$annotated"
}

# measure <path> <calls> <run> [backlog]: one run under callgrind; prints the Ir of each role
# and the slot's: "<producer> <relay> <receiver> <other> <slot or ->". With backlog, the run is
# --receiver-cost's: a warm-up round and one measured round of <calls> each, every call emitted
# before the main thread delivers any.
measure() {
    local path="$1" n="$2" run="$3" mode="${4:-}"
    local out="$outdir/callgrind.$path.$n.$run${mode:+.$mode}.out"
    local args=(--deliver "$path" "$n")
    [[ -n "$mode" ]] && args=(--receiver-cost "$n" 1 1 "$path")
    callgrind_run "$out" "$outdir/$path.$n.$run${mode:+.$mode}.log" --separate-threads=yes -- \
        "$binary" "${args[@]}"
    [[ -s "$out" ]] || rm -f "$out" # --separate-threads leaves the base name empty
    local files=("$out"-[0-9]*)
    [[ -e "${files[0]}" ]] || { echo "error: callgrind wrote no per-thread file $out-01" >&2; exit 1; }
    local f costs=""
    for f in "${files[@]}"; do
        costs+="$(thread_costs "$f")"$'\n'
    done
    awk '
        NF == 3 { ir[$1] += $2; if ($1 == "receiver") slot = $3 }
        END {
            if (!ir["receiver"]) { print "error: no thread ran main()" > "/dev/stderr"; exit 1 }
            print ir["producer"] + 0, (("relay" in ir) ? ir["relay"] : "-"), ir["receiver"],
                  ir["other"] + 0, slot
        }' <<<"$costs"
}

label_of() {
    case "$1" in
        funnel) echo "FunnelConnection" ;;
        funnel-invoke) echo "QtFastConnect::invoke" ;;
        funnel-batched-invoke) echo "invokeBatched" ;;
        queued) echo "Qt::QueuedConnection" ;;
        invoke-queued) echo "invokeMethod, queued" ;;
        direct) echo "Qt::DirectConnection" ;;
        plain) echo "plain member call" ;;
        *) echo "$1" ;;
    esac
}

emit_csv() {
    [[ -n "$csv" ]] && echo "per-thread,$1,1,8,$2,$3" >>"$csv"
    return 0
}

# Per path: the callgrind columns, medians over the runs.
declare -A col slotFrom receiverRuns
slotBodies=()
for path in $paths; do
    declare -A runs=()
    for ((run = 1; run <= repeats; ++run)); do
        # Assignments first: a failed measure ends the script here (set -e).
        m1="$(measure "$path" "$calls" "$run")"
        m2="$(measure "$path" $((2 * calls)) "$run")"
        read -r p1 l1 r1 o1 s1 <<<"$m1"
        read -r p2 l2 r2 o2 s2 <<<"$m2"
        runs[producer]+=" $(per_call "$p1" "$p2" "$calls")"
        [[ "$l1" != "-" && "$l2" != "-" ]] && runs[relay]+=" $(per_call "$l1" "$l2" "$calls")"
        runs[receiver]+=" $(per_call "$r1" "$r2" "$calls")"
        runs[other]+=" $(per_call "$o1" "$o2" "$calls")"
        runs[total]+=" $(per_call $((p1 + ${l1/-/0} + r1 + o1)) $((p2 + ${l2/-/0} + r2 + o2)) "$calls")"
        if [[ "$s1" != "-" && "$s2" != "-" ]]; then
            slot="$(per_call "$s1" "$s2" "$calls")"
            runs[slot]+=" $slot"
            runs[excl]+=" $(awk -v r="$(per_call "$r1" "$r2" "$calls")" -v s="$slot" \
                               'BEGIN { printf "%.1f", r - s }')"
        fi
    done
    for key in producer relay receiver other total slot; do
        if [[ -n "${runs[$key]:-}" ]]; then
            # shellcheck disable=SC2086
            read -r "col[$path.$key]" _ _ <<<"$(median_min_max ${runs[$key]})"
        else
            col[$path.$key]="-"
        fi
    done
    receiverRuns[$path]="${runs[receiver]}"
    # The receiver draining a backlog: every wake-up finds a full pass, so its count no longer
    # depends on valgrind's thread schedule; the basis of the ceiling. Rounds of N and 2N calls,
    # two rounds each (warm-up and measured): the difference is 2N calls.
    case "$path" in direct|plain) ;; *)
        for ((run = 1; run <= repeats; ++run)); do
            m1="$(measure "$path" "$calls" "$run" backlog)"
            m2="$(measure "$path" $((2 * calls)) "$run" backlog)"
            read -r _ _ r1 _ s1 <<<"$m1"
            read -r _ _ r2 _ s2 <<<"$m2"
            [[ "$s1" != "-" && "$s2" != "-" ]] || continue
            runs[backlogExcl]+=" $(per_call $((r1 - s1)) $((r2 - s2)) $((2 * calls)))"
        done ;;
    esac
    if [[ -n "${runs[backlogExcl]:-}" ]]; then
        # shellcheck disable=SC2086
        read -r "col[$path.backlogExcl]" _ _ <<<"$(median_min_max ${runs[backlogExcl]})"
    else
        col[$path.backlogExcl]="-"
    fi
    if [[ -n "${runs[excl]:-}" ]]; then
        # shellcheck disable=SC2086
        read -r "col[$path.excl]" "col[$path.exclMin]" "col[$path.exclMax]" \
            <<<"$(median_min_max ${runs[excl]})"
        slotBodies+=("${col[$path.slot]}")
    fi
    unset runs
done

# A path whose receiver thread has no Receiver::onValue of its own had the slot inlined into its
# caller (invokeMethod's lambda): subtract the body the other paths measured, the same code.
for path in $paths; do
    [[ -z "${col[$path.excl]:-}" ]] || continue
    col[$path.excl]="-"; col[$path.exclMin]="-"; col[$path.exclMax]="-"
    # Qt::DirectConnection and the plain call run the slot in the producer: nothing to take.
    [[ ${#slotBodies[@]} -gt 0 ]] || continue
    awk -v r="${col[$path.receiver]}" 'BEGIN { exit !(r >= 1) }' || continue
    read -r body _ _ <<<"$(median_min_max "${slotBodies[@]}")"
    slotFrom[$path]="$body"
    col[$path.slot]="$body"
    excls=()
    for r in ${receiverRuns[$path]}; do
        excls+=("$(awk -v r="$r" -v s="$body" 'BEGIN { printf "%.1f", r - s }')")
    done
    read -r "col[$path.excl]" "col[$path.exclMin]" "col[$path.exclMax]" \
        <<<"$(median_min_max "${excls[@]}")"
done

# The ceiling: --receiver-cost, R processes, median of each path's median and of the ratio.
declare -A ceil
receiving=""
for path in $paths; do
    case "$path" in direct|plain) ;; *) receiving+=" $path" ;; esac
done
if [[ "$backlog" -gt 0 && -n "$receiving" ]]; then
    for ((run = 1; run <= repeats; ++run)); do
        log="$outdir/receiver-cost.$run.txt"
        # shellcheck disable=SC2086
        if ! "$binary" --receiver-cost "$backlog" 10 1 $receiving >"$log" 2>&1; then
            echo "error: '$binary --receiver-cost $backlog 10 1$receiving' failed:" >&2
            head -n 20 "$log" >&2
            echo "(a tst_bench_funnel without --receiver-cost needs a rebuild; -b 0 leaves the" \
                 "ceiling out)" >&2
            exit 1
        fi
        while read -r path ns lo hi _ vsQueued sleeps; do
            ceil[$path.ns]+=" $ns"
            ceil[$path.lo]+=" $lo"
            ceil[$path.hi]+=" $hi"
            [[ "$vsQueued" != "-" ]] && ceil[$path.vs]+=" $vsQueued"
            ceil[$path.sleeps]+=" $sleeps"
        done < <(grep -v -e '^#' -e '^path ' "$log")
    done
fi

printf '%-22s %8s %6s %8s %5s %9s %-15s %8s %7s %7s %10s %8s\n' "path" "producer" "relay" \
    "receiver" "slot" "recv-slot" "(min-max)" "backlog" "total" "recv ns" "ceiling/s" "x queued"
for path in $paths; do
    excl="${col[$path.excl]}"
    range="${col[$path.exclMin]}-${col[$path.exclMax]}"
    [[ "$excl" == "-" ]] && range="-"
    ns="-"; perSecond="-"; vs="-"
    if [[ -n "${ceil[$path.ns]:-}" ]]; then
        # shellcheck disable=SC2086
        read -r ns _ _ <<<"$(median_min_max ${ceil[$path.ns]})"
        perSecond="$(awk -v ns="$ns" 'BEGIN { printf "%.0f", 1e9 / ns }')"
        if [[ -n "${ceil[$path.vs]:-}" ]]; then
            # shellcheck disable=SC2086
            read -r vs _ _ <<<"$(median_min_max ${ceil[$path.vs]})"
        fi
    fi
    printf '%-22s %8s %6s %8s %5s %9s %-15s %8s %7s %7s %10s %8s\n' "$(label_of "$path")" \
        "${col[$path.producer]}" "${col[$path.relay]}" "${col[$path.receiver]}" \
        "${col[$path.slot]}${slotFrom[$path]:+*}" "$excl" "($range)" "${col[$path.backlogExcl]}" \
        "${col[$path.total]}" "$ns" "$perSecond" "$vs"
    [[ "${col[$path.backlogExcl]}" != "-" ]] &&
        emit_csv "$path" receiver_excl_slot_backlog "${col[$path.backlogExcl]}"
    for key in producer relay receiver slot other total; do
        [[ "${col[$path.$key]}" != "-" ]] && emit_csv "$path" "$key" "${col[$path.$key]}"
    done
    if [[ "$excl" != "-" ]]; then
        emit_csv "$path" receiver_excl_slot "$excl"
        emit_csv "$path" receiver_excl_slot_min "${col[$path.exclMin]}"
        emit_csv "$path" receiver_excl_slot_max "${col[$path.exclMax]}"
    fi
    [[ -n "${slotFrom[$path]:-}" ]] && emit_csv "$path" slot_inlined 1
    if [[ "$ns" != "-" ]]; then
        # shellcheck disable=SC2086
        read -r _ lo _ <<<"$(median_min_max ${ceil[$path.lo]})"
        # shellcheck disable=SC2086
        read -r _ _ hi <<<"$(median_min_max ${ceil[$path.hi]})"
        # shellcheck disable=SC2086
        read -r _ _ sleeps <<<"$(median_min_max ${ceil[$path.sleeps]})"
        emit_csv "$path" receiver_ns_per_call "$ns"
        emit_csv "$path" receiver_ns_min "$lo"
        emit_csv "$path" receiver_ns_max "$hi"
        emit_csv "$path" ceiling_calls_per_s "$perSecond"
        emit_csv "$path" receiver_sleeps_per_1k "$sleeps"
        [[ "$vs" != "-" ]] && emit_csv "$path" ceiling_vs_queued "$vs"
    fi
    emit_csv "$path" calls "$calls"
    emit_csv "$path" runs "$repeats"
    emit_csv "$path" backlog "$backlog"
done

echo "instructions per delivered call: N=$calls, 2N minus N, median of $repeats run(s) per path;" \
     "slot = Receiver::onValue inclusive; total = all threads; backlog = the receiver excl. slot" \
     "draining a backlog (--receiver-cost under callgrind, rounds of N and 2N)"
for path in $paths; do
    if [[ "${col[$path.other]}" != "-" && "${col[$path.other]}" != "0.0" ]]; then
        echo "note: $(label_of "$path"): threads other than producer, relay and receiver ran" \
             "${col[$path.other]} instructions per call (see threads.txt with -k)"
    fi
    if [[ -n "${slotFrom[$path]:-}" ]]; then
        echo "note: $(label_of "$path"): * the slot was inlined into its caller; the body the" \
             "other paths measured (${slotFrom[$path]}) is subtracted"
    fi
done
if [[ "$backlog" -gt 0 && -n "$receiving" ]]; then
    echo "ceiling: tst_bench_funnel --receiver-cost $backlog 10 1$receiving, $repeats" \
         "process(es): receiver (main) thread CPU ns per call draining a $backlog-call backlog" \
         "(mean of 10 rounds, median over processes); ceiling/s = 1e9 / ns; x queued = Qt" \
         "queued's ns / this path's, median over processes"
fi
if [[ -n "$keep" ]]; then
    echo "callgrind out files kept in $keep, which thread is which in $keep/threads.txt"
fi
