#!/usr/bin/env bash
# run_emulated.sh DIR EXPECT PROGRAM [ARGS...]: runs PROGRAM on the emulated
# CUDA runtime in DIR (tests/emulated_cuda) with INFO logging; passes when the
# program passes and its log contains every ';'-separated string of EXPECT
# (so a silent fallback to another path fails the test).
set -u
dir=$1
expect=$2
shift 2
log=$(mktemp)
ids=$(mktemp -d)
trap 'rm -rf "$log" "$ids"' EXIT
# Where the NCCL shim's test programs publish rank 0's unique id: fresh each run.
export SHIM_TEST_ID_FILE="$ids/id"
LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LOOM_DEBUG=INFO "$@" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  tail -n 80 "$log"
  echo "run_emulated: $* exited with $rc"
  exit 1
fi
IFS=';' read -r -a expectations <<<"$expect"
for wanted in "${expectations[@]}"; do
  if ! grep -q -- "$wanted" "$log"; then
    grep -m 20 -i "loom" "$log"
    echo "run_emulated: the log never says \"$wanted\": the path under test did not run"
    exit 1
  fi
done
grep -E "^\[  (PASSED|FAILED|  OK) \]|tests? ran|passed" "$log" | tail -n 3
exit 0
