#!/usr/bin/env bash
# make test's Swift stage: every Swift test, one at a time, then one line of how many ran and which were skipped, so
# a suite that switched itself off shows in the log (under CI=true a missing dependency fails instead: TestDependency).
#   Tests/tools/swift-test.sh SWIFT
set -uo pipefail
SWIFT=${1:-swift}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$SWIFT" test --skip-build --no-parallel 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
ran=$(grep -Eo '^. Test run with [0-9]+ tests?' "$log" | grep -Eo '[0-9]+' | tail -n 1)
skipped=$(grep -c '^➜ Test .* skipped' "$log")
echo "Swift tests: ${ran:-0} run, $skipped skipped"
grep '^➜ Test .* skipped' "$log" | sed 's/^➜ /  skipped: /'
exit "$status"
