# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by run-suite.sh and run-platform.sh. CI keeps only the tail of a run's output, where a
# failed test's own output (printed by ctest when it failed, minutes earlier) is long gone: these
# name the failed tests in the summary line and keep their output for run-tests.sh to print last.

# ctest_failed LOG: the tests a ctest log lists under "The following tests FAILED:", comma-separated.
ctest_failed() {
    sed -n '/The following tests FAILED:/,$ s/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' "$1" |
        paste -sd, - | sed 's/,/, /g'
}

# ctest_keep_failures LOG STAGE FILE: appends to FILE each failed test's output from LOG (ctest
# --output-on-failure): its QTest failures and sanitizer reports first, then its last lines.
ctest_keep_failures() {
    local log=$1 stage=$2 file=$3 name output
    [[ -n $file ]] || return 0
    mkdir -p "$(dirname "$file")"
    for name in $(ctest_failed "$log" | tr -d ,); do
        output=$(awk -v name="$name" '
            $0 ~ "Test +#[0-9]+: " name " " { on = 1; next }
            /^ +Start +[0-9]+: / || /Test +#[0-9]+: / || /^[0-9]+% tests passed/ { on = 0 }
            on' "$log")
        {
            echo "---- $stage: $name"
            grep -E -A4 '^(FAIL!|QFATAL|XPASS)|(ERROR|SUMMARY): [A-Za-z]*Sanitizer|runtime error:' \
                <<<"$output" | head -n 60
            echo "---- $stage: $name, last lines"
            tail -n 40 <<<"$output"
        } >>"$file"
    done
}
