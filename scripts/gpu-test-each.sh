#!/usr/bin/env bash
# Runs every test of a GoogleTest program on its own, each under a deadline,
# and prints one line per test (passed, FAILED or HUNG, with its seconds), so a
# suite that stalls on a GPU names the tests that stall instead of losing the
# whole run to one of them. The output of the failing tests goes to
# <log-dir>/<test>.log. Exits 1 when any test failed or hung.
#   scripts/gpu-test-each.sh PROGRAM LOG_DIR [seconds per test, default 60] [gtest filter]
set -uo pipefail
program=$1
logs=$2
deadline=${3:-60}
filter=${4:-*}
mkdir -p "$logs"
# --gtest_list_tests prints "Suite." lines followed by indented test names
# (parameterised names carry a "  # GetParam() = ..." comment).
tests=$("$program" --gtest_list_tests --gtest_filter="$filter" | awk '
  /^[^ ]/ {suite = $1; next}
  /^  / {print suite $1}')
[ -n "$tests" ] || { echo "gpu-test-each: $program lists no tests" >&2; exit 1; }
status=0
for t in $tests; do
  log="$logs/${t//\//_}.log"
  start=$(date +%s)
  timeout "$deadline" "$program" --gtest_filter="$t" > "$log" 2>&1
  rc=$?
  seconds=$(($(date +%s) - start))
  if ((rc == 0)) && grep -q "\[  PASSED  \] 1 test" "$log"; then
    echo "passed  ${seconds}s  $t"
    rm -f "$log"
  elif ((rc == 124 || rc == 137)); then
    echo "HUNG    ${seconds}s  $t"
    status=1
  else
    echo "FAILED  ${seconds}s  $t (exit $rc)"
    status=1
  fi
done
exit "$status"
