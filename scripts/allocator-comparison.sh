#!/usr/bin/env bash
# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# QPoolAllocator against glibc's malloc and, where installed, mimalloc, jemalloc and tcmalloc:
# one combined table of ns per allocate+free pair and the ratios the project must reach.
#
# Runs tst_bench_poolallocator (builds nothing) once as it is, then its singleThread and
# crossThread rows for malloc and MultiThreaded again with each other allocator in LD_PRELOAD.
# The pool rows do not depend on malloc, so each preloaded run measures MultiThreaded again:
# the ratio against an allocator is taken within that allocator's run (the machine may be
# shared; ratios within one run are what count). The benchmark writes its results as CSV
# (TST_BENCH_POOLALLOCATOR_CSV); nothing here reads its free-text output.
#
# Targets:
#   single thread: MultiThreaded >= 3x faster than glibc malloc
#   single thread: MultiThreaded >= 1.5x faster than the fastest of mimalloc/jemalloc/tcmalloc
#   cross thread:  MultiThreaded >= 1.7x faster than glibc malloc
# Each is judged on the geometric mean over the 9 chunk-size x batch-size rows; the worst row is
# shown next to it. With --repeat N every run is made N times (in turns) and each row keeps its
# lowest ns per pair over the N, which damps what other work on the machine adds to a row.
#
# Usage: scripts/allocator-comparison.sh [--install] [--check] [--repeat N] [--keep DIR]
#                                        <build-dir | path/to/tst_bench_poolallocator>
#        scripts/allocator-comparison.sh [--check] --tabulate DIR
#   --install       apt-get install the missing allocator packages first (as root)
#   --check         exit with status 3 when a target is missed
#   --repeat N      make every run N times (default 1; one round takes about a minute)
#   --keep DIR      keep the benchmark logs and CSV files in DIR
#   --tabulate DIR  run nothing: print the table from the CSV files an earlier --keep DIR left

set -euo pipefail
source "$(dirname "$0")/lib/benchmark-run.sh"

usage() {
    echo "usage: $0 [--install] [--check] [--repeat N] [--keep DIR]" \
         "<build-dir | path/to/tst_bench_poolallocator>" >&2
    echo "       $0 [--check] --tabulate DIR" >&2
    exit 2
}

install=0
check=0
keep=""
tabulate=""
repeat=1
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --install) install=1 ;;
        --check) check=1 ;;
        --keep) [[ $# -ge 2 ]] || usage; keep="$2"; shift ;;
        --tabulate) [[ $# -ge 2 ]] || usage; tabulate="$2"; shift ;;
        --repeat) [[ $# -ge 2 ]] || usage; repeat="$2"; shift ;;
        -h|--help) usage ;;
        -*) echo "error: unknown option $1" >&2; usage ;;
        *) args+=("$1") ;;
    esac
    shift
done
[[ -n "$tabulate" || ${#args[@]} -eq 1 ]] || usage
if [[ -n "$tabulate" ]]; then
    [[ ${#args[@]} -eq 0 && $install -eq 0 && -z "$keep" ]] || usage
fi
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "error: --repeat needs a positive integer" >&2; exit 2; }

# name, Debian package, file name of the library in that package
allocators=(
    "mimalloc libmimalloc2.0 libmimalloc.so.2"
    "jemalloc libjemalloc2 libjemalloc.so.2"
    "tcmalloc libtcmalloc-minimal4 libtcmalloc_minimal.so.4"
)

package_installed() {
    command -v dpkg-query >/dev/null 2>&1 &&
        [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# Prints the library's path from the package's file list, or nothing.
library_path() {
    local package="$1" file="$2"
    package_installed "$package" || return 0
    dpkg -L "$package" 2>/dev/null | grep -E "/${file//./\\.}\$" | head -n 1 || true
}

install_missing() {
    local entry package missing=()
    for entry in "${allocators[@]}"; do
        read -r _ package _ <<<"$entry"
        package_installed "$package" || missing+=("$package")
    done
    [[ ${#missing[@]} -gt 0 ]] || return 0
    if [[ $EUID -ne 0 ]]; then
        echo "note: --install needs root; not installing ${missing[*]}" >&2
    elif ! command -v apt-get >/dev/null 2>&1; then
        echo "note: --install needs apt-get; not installing ${missing[*]}" >&2
    else
        echo "installing ${missing[*]}" >&2
        if ! apt-get install -y "${missing[@]}" >"$outdir/apt-get.log" 2>&1; then
            # A fresh container may have no package lists yet.
            apt-get update >>"$outdir/apt-get.log" 2>&1 || true
            apt-get install -y "${missing[@]}" >>"$outdir/apt-get.log" 2>&1 ||
                echo "note: apt-get install failed (see $outdir/apt-get.log with --keep)" >&2
        fi
    fi
}

# Runs the benchmark; $1 names the run and its files, $2 is the LD_PRELOAD value (may be
# empty), the rest are QTest arguments. Leaves $outdir/$1.csv and $outdir/$1.log.
run_benchmark() {
    local name="$1" preload="$2"
    shift 2
    local environment=("TST_BENCH_POOLALLOCATOR_CSV=$outdir/$name.csv")
    if [[ -n "$preload" ]]; then
        environment+=("LD_PRELOAD=$preload" "TST_BENCH_POOLALLOCATOR_ROWS=malloc,MultiThreaded")
    fi
    rm -f "$outdir/$name.csv"
    if ! env "${environment[@]}" "$binary" "$@" >"$outdir/$name.log" 2>&1; then
        echo "error: the $name run of $binary failed:" >&2
        tail -n 20 "$outdir/$name.log" >&2
        return 1
    fi
    [[ -s "$outdir/$name.csv" ]] || { echo "error: the $name run wrote no CSV" >&2; return 1; }
}

# The runs to tabulate: pairs of allocator name and CSV file (one pair per repetition).
runs=()

measure() {
    local entry name package file path provider round
    local available=()   # "name path"
    for entry in "${allocators[@]}"; do
        read -r name package file <<<"$entry"
        path="$(library_path "$package" "$file")"
        if [[ -z "$path" || ! -e "$path" ]]; then
            echo "note: $name skipped: package $package is not installed" \
                 "(apt-get install $package, or run this script as root with --install)" >&2
        else
            available+=("$name $path")
        fi
    done
    for ((round = 1; round <= repeat; ++round)); do
        echo "glibc: the full benchmark (about 30 s)... [$round/$repeat]" >&2
        run_benchmark "glibc.$round" ""
        runs+=("glibc" "$outdir/glibc.$round.csv")
        for entry in "${available[@]}"; do
            read -r name path <<<"$entry"
            echo "$name: malloc and MultiThreaded rows with LD_PRELOAD=$path..." \
                 "[$round/$repeat]" >&2
            if ! run_benchmark "$name.$round" "$path" singleThread crossThread; then
                echo "note: this $name run is left out: it failed" >&2
                continue
            fi
            provider="$(sed -n 's/^# malloc=//p' "$outdir/$name.$round.csv")"
            if [[ "$(readlink -f "$provider")" != "$(readlink -f "$path")" ]]; then
                echo "warning: in the $name run malloc() came from '$provider', not $path" >&2
            fi
            runs+=("$name" "$outdir/$name.$round.csv")
        done
    done
}

if [[ -n "$tabulate" ]]; then
    for name in glibc mimalloc jemalloc tcmalloc; do
        for file in "$tabulate/$name".*.csv; do
            if [[ -s "$file" ]]; then
                runs+=("$name" "$file")
            fi
        done
    done
    [[ ${#runs[@]} -gt 0 && "${runs[0]}" == glibc ]] ||
        { echo "error: no $tabulate/glibc.*.csv" >&2; exit 1; }
else
    resolve_benchmark "${args[0]}" benchmarks/poolallocator/tst_bench_poolallocator
    make_output_dir "$keep"
    if [[ $install -eq 1 ]]; then
        install_missing
    fi
    measure
fi

awk_args=()
for ((i = 0; i < ${#runs[@]}; i += 2)); do
    awk_args+=("run=${runs[i]}" "${runs[i + 1]}")
done

status=0
awk -F, -v check="$check" '
FNR == 1 && run == "glibc" { ++repeats }
/^#/ || /^section,/ { next }
NF >= 6 {
    key = $1 SUBSEP $3 SUBSEP $4
    if (run == "glibc" && !(key in known)) { known[key] = 1; keys[++nkeys] = key }
    # Repeated runs: the lowest ns per pair of each row.
    if (!((run, $2, key) in ns) || $6 + 0 < ns[run, $2, key]) ns[run, $2, key] = $6 + 0
    ran[run] = 1
}

function has(r, a, k) { return (r SUBSEP a SUBSEP k) in ns }
function value(r, a, k) { return ns[r, a, k] }
function cell(r, a, k) { return has(r, a, k) ? sprintf("%.1f", value(r, a, k)) : "-" }

# Geometric mean of column (r, a) over the rows of section s that have it.
function geomean(r, a, s,    i, k, sum, n) {
    sum = 0; n = 0
    for (i = 1; i <= nkeys; ++i) {
        k = keys[i]
        if (section[k] != s || !has(r, a, k)) continue
        sum += log(value(r, a, k)); ++n
    }
    return n ? exp(sum / n) : -1
}

# Speed-up of (r2, a2) over (r1, a1): geometric mean over the rows of section s that have
# both; sets worst and worstRow.
function speedup(r1, a1, r2, a2, s,    i, k, q, sum, n) {
    sum = 0; n = 0; worst = -1; worstRow = ""
    for (i = 1; i <= nkeys; ++i) {
        k = keys[i]
        if (section[k] != s || !has(r1, a1, k) || !has(r2, a2, k)) continue
        q = value(r1, a1, k) / value(r2, a2, k)
        sum += log(q); ++n
        if (worst < 0 || q < worst) { worst = q; worstRow = label[k] }
    }
    return n ? exp(sum / n) : -1
}

# One target: speed-up `ratio` against `target`; `note` follows on the same line.
function verdict(name, ratio, target, note) {
    if (ratio < 0) {
        printf "  %-5s %-44s %7s  (target %.2fx)  not measured\n", "-", name, "-", target
        return
    }
    if (ratio < target) ++missed
    printf "  %-5s %-44s %6.2fx  (target %.2fx)  %s%s\n",
           (ratio >= target ? "PASS" : "MISS"), name, ratio, target,
           (ratio >= target ? "" : sprintf("%.1f%% short; ", 100 * (1 - ratio / target))), note
}

END {
    if (!nkeys) { print "error: no results from the glibc run" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= nkeys; ++i) {
        split(keys[i], p, SUBSEP)
        section[keys[i]] = p[1]
        label[keys[i]] = p[2] " B x " p[3]
    }
    # Columns: (run, allocator, heading)
    ncols = 0
    colRun[++ncols] = "glibc";    colAlloc[ncols] = "malloc";         colHead[ncols] = "glibc"
    colRun[++ncols] = "mimalloc"; colAlloc[ncols] = "malloc";         colHead[ncols] = "mimalloc"
    colRun[++ncols] = "jemalloc"; colAlloc[ncols] = "malloc";         colHead[ncols] = "jemalloc"
    colRun[++ncols] = "tcmalloc"; colAlloc[ncols] = "malloc";         colHead[ncols] = "tcmalloc"
    colRun[++ncols] = "glibc";    colAlloc[ncols] = "MultiThreaded";  colHead[ncols] = "MultiThr"
    colRun[++ncols] = "glibc";    colAlloc[ncols] = "handoff";        colHead[ncols] = "handoff"

    printf "ns per allocate+free pair (glibc and pool columns: one run; each other malloc: its own run)"
    if (repeats > 1) printf "; lowest of %d runs per row", repeats
    printf "\n"
    printf "%-22s", ""
    for (c = 1; c <= ncols; ++c) printf " %10s", colHead[c]
    printf "\n"
    nsec = split("single cross", sections, " ")
    for (si = 1; si <= nsec; ++si) {
        s = sections[si]
        title = s == "single" ? "1 thread" : "cross"
        any = 0
        for (i = 1; i <= nkeys; ++i) {
            k = keys[i]
            if (section[k] != s) continue
            any = 1
            printf "%-8s %-13s", title, label[k]
            for (c = 1; c <= ncols; ++c) printf " %10s", cell(colRun[c], colAlloc[c], k)
            printf "\n"
        }
        if (!any) continue
        printf "%-8s %-13s", title, "geomean"
        for (c = 1; c <= ncols; ++c) {
            g = geomean(colRun[c], colAlloc[c], s)
            printf " %10s", g < 0 ? "-" : sprintf("%.1f", g)
        }
        printf "\n%-8s %-13s", title, "x glibc"
        for (c = 1; c <= ncols; ++c) {
            if (colAlloc[c] == "handoff" || c == 1) { printf " %10s", "-"; continue }
            q = speedup("glibc", "malloc", colRun[c], colAlloc[c], s)
            printf " %10s", q < 0 ? "-" : sprintf("%.2fx", q)
        }
        printf "\n"
    }

    missed = 0
    printf "\nTargets: speed-up = geometric mean over the rows of (other ns / pool ns); worst row in the note\n"
    q = speedup("glibc", "malloc", "glibc", "MultiThreaded", "single")
    verdict("1 thread: MultiThreaded over glibc", q, 3.0,
            q < 0 ? "" : sprintf("worst %.2fx at %s", worst, worstRow))
    # Against the fastest other allocator: each ratio within that allocator'"'"'s own run.
    best = -1; bestName = ""; bestNote = ""; detail = ""
    split("mimalloc jemalloc tcmalloc", others, " ")
    for (o = 1; o <= 3; ++o) {
        if (!(others[o] in ran)) continue
        q = speedup(others[o], "malloc", others[o], "MultiThreaded", "single")
        if (q < 0) continue
        detail = detail sprintf("\n  %-5s   %-8s %5.1f ns / MultiThreaded %4.1f ns = %.2fx (worst %.2fx at %s)",
                                "", others[o], geomean(others[o], "malloc", "single"),
                                geomean(others[o], "MultiThreaded", "single"), q, worst, worstRow)
        if (best < 0 || q < best) {
            best = q; bestName = others[o]
            bestNote = sprintf("worst %.2fx at %s", worst, worstRow)
        }
    }
    verdict("1 thread: MultiThreaded over fastest other", best, 1.5,
            bestName == "" ? "no other malloc ran" : "the fastest is " bestName "; " bestNote)
    if (detail != "")
        printf "  %-5s each in its own run (MultiThreaded measured again there):%s\n", "", detail
    q = speedup("glibc", "malloc", "glibc", "MultiThreaded", "cross")
    verdict("cross thread: MultiThreaded over glibc", q, 1.7,
            q < 0 ? "" : sprintf("worst %.2fx at %s; bare hand-off floor %.1f ns",
                                 worst, worstRow, geomean("glibc", "handoff", "cross")))
    for (o = 1; o <= 3; ++o) {
        if (!(others[o] in ran)) continue
        q = speedup(others[o], "malloc", others[o], "MultiThreaded", "cross")
        if (q > 0)
            printf "  %-5s %-44s %6.2fx  (no target; in the %s run)\n", "info",
                   "cross thread: MultiThreaded over " others[o], q, others[o]
    }
    if (check && missed) exit 3
}
' "${awk_args[@]}" || status=$?

if [[ -n "$keep" ]]; then
    echo "logs and CSV files kept in $keep" >&2
fi
exit "$status"
