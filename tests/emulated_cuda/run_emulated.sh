#!/usr/bin/env bash
# run_emulated.sh DIR EXPECT PROGRAM [ARGS...]: runs PROGRAM on the emulated
# CUDA runtime in DIR (tests/emulated_cuda) with INFO logging; passes when the
# program passes and, if EXPECT is not empty, its log contains EXPECT (so a
# silent fallback to another path fails the test).
set -u
dir=$1
expect=$2
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LOOM_DEBUG=INFO "$@" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  tail -n 80 "$log"
  echo "run_emulated: $1 exited with $rc"
  exit 1
fi
if [ -n "$expect" ] && ! grep -q -- "$expect" "$log"; then
  grep -m 20 -i "loom" "$log"
  echo "run_emulated: the log never says \"$expect\": the path under test did not run"
  exit 1
fi
grep -E "^\[  (PASSED|FAILED|  OK) \]|tests? ran|passed" "$log" | tail -n 3
exit 0
