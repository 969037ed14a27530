#!/bin/sh
# textkit's tests: one line per failure, then a summary; exits 1 when any test fails.
cd "$(dirname "$0")" || exit 2
. ./lib.sh

passed=0
failed=0

# check NAME EXPECTED ACTUAL
check() {
    if [ "$2" = "$3" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf 'FAIL %s: expected %s, got %s\n' "$1" "$2" "$3"
    fi
}

check "upper" "HELLO" "$(upper hello)"
check "repeat" "ababab" "$(repeat ab 3)"
check "max of 3 and 7" "7" "$(max 3 7)"
check "max of 9 and 2" "9" "$(max 9 2)"

total=$((passed + failed))
if [ "$failed" -eq 0 ]; then
    printf 'PASS: %s of %s tests pass\n' "$passed" "$total"
else
    printf 'FAILED: %s of %s tests fail\n' "$failed" "$total"
    exit 1
fi
