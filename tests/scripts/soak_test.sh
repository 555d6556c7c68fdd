#!/usr/bin/env bash
# A short loom_soak (randomly mixed collectives, every element checked, RSS
# bounded) four ways: 4 processes over shm (default algorithms, then ring
# forced), 4 processes over tcp, and 3 rank threads in one process; then a
# self-test that an injected wrong byte is caught. Usage: soak_test.sh BUILD_DIR SOURCE_DIR.
# Exit 0 pass, 77 skip (loom_soak or loomrun not built), anything else fail.
# The full 100,000-op runs are in docs/reliability.md; this keeps to ~1 minute
# on a 2-core machine, so messages are capped at 256 KiB.
set -uo pipefail
BUILD=$(realpath "$1")
SOAK="$BUILD/perf/loom_soak"
LOOMRUN=$(find "$BUILD" -maxdepth 3 -name loomrun -type f -perm -u+x | head -1)
if [ ! -x "$SOAK" ] || [ -z "$LOOMRUN" ]; then
  echo "soak_test: loom_soak or loomrun not built under $BUILD; skipping"
  exit 77
fi

OPS=${SOAK_TEST_OPS:-3000}
work=$(mktemp -d /tmp/soak_test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# A hang must become an error long before CTest's own timeout.
export LOOM_TIMEOUT=60

# run NAME SECONDS COMMAND...: runs one soak bounded by `timeout` and fails
# the script with its output if it does not pass.
run() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout -k 5 "$limit" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  if [ "$rc" != 0 ] || ! grep -q "loom_soak: PASSED" "$work/$name.log"; then
    echo "FAIL: soak $name exited $rc:" >&2
    tail -n 30 "$work/$name.log" >&2
    exit 1
  fi
  echo "soak_test: $name passed in $((SECONDS - start)) s: $(grep -o '[0-9]* ops/s (.*warm-up)' "$work/$name.log")"
}

common=(--ops "$OPS" --max-bytes 256K)
run shm 120 "$LOOMRUN" -n 4 --timeout 110 "$SOAK" "${common[@]}" --seed 11
LOOM_TRANSPORT=tcp run tcp 120 "$LOOMRUN" -n 4 --timeout 110 "$SOAK" "${common[@]}" --seed 12
# Over shm the default rule sends every reduction to the direct algorithm;
# forcing ring covers the shm links and the step executor as well.
LOOM_ALGO=ring run shm-ring 120 "$LOOMRUN" -n 4 --timeout 110 "$SOAK" "${common[@]}" --seed 15
run threads 120 "$SOAK" -t 3 "${common[@]}" --seed 13

# The checker itself: one corrupted byte must stop the run with a clear message.
timeout -k 5 60 "$SOAK" -t 3 --ops 400 --max-bytes 64K --seed 14 --inject-error 200 \
  >"$work/inject.log" 2>&1
rc=$?
if [ "$rc" != 1 ] || ! grep -q "loom_soak: FAILED at op 2[0-9][0-9] on rank 2 of 3" "$work/inject.log"; then
  echo "FAIL: an injected wrong byte was not reported (exit $rc):" >&2
  tail -n 5 "$work/inject.log" >&2
  exit 1
fi
echo "soak_test: injected error caught: $(grep -o 'FAILED at op [0-9]*' "$work/inject.log")"

echo "soak_test: all soaks passed"
