#!/usr/bin/env bash
# CTest entry for the fuzzers: `bash fuzz_test.sh BUILD_DIR SOURCE_DIR`.
# Runs scripts/fuzz.sh for 10 s per target (the seed corpus replayed, then new
# inputs; `make fuzz` goes deeper, 60 s each), building under BUILD_DIR/fuzz.
# Exit 0: no finding; 77: skipped because clang or libFuzzer is missing (a
# skip, never a pass); anything else: a target found a problem.
set -uo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
CXX=${FUZZ_CXX:-clang++}

skip() {
  echo "############################################################"
  echo "# fuzz_test SKIPPED: $1"
  echo "# Install clang and libclang-rt-dev (e.g. clang-14,"
  echo "# libclang-rt-14-dev) to run the fuzzers."
  echo "############################################################"
  exit 77
}

command -v "$CXX" >/dev/null 2>&1 || skip "no '$CXX' on PATH"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' \
  >"$probe/probe.cc"
if ! "$CXX" -fsanitize=fuzzer,address,undefined "$probe/probe.cc" -o "$probe/probe" \
  >"$probe/log" 2>&1; then
  cat "$probe/log"
  skip "'$CXX' cannot link -fsanitize=fuzzer (libFuzzer runtime missing)"
fi

FUZZ_SECONDS=${FUZZ_SECONDS:-10} FUZZ_BUILD="$BUILD/fuzz" bash "$SRC/scripts/fuzz.sh"
status=$?
# 77 means "skipped" to CTest; a failing fuzz run must never read as a skip.
[[ $status -eq 77 ]] && status=1
exit $status
