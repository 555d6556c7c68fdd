#!/usr/bin/env bash
# The NCCL shim end to end on host buffers: C programs compiled against the
# CUDA toolkit's nccl.h and linked with the shim only, run with 4 ranks through
# loomrun (and in one process), plus the NCCL_* -> LOOM_* environment mapping.
#
# Usage: run_nccl_compat_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(realpath "$1")
BIN="$BUILD/tests/nccl_compat"
LOOMRUN="$BUILD/loomrun"
if [ ! -x "$BIN/nccl_compat_collectives" ] || [ ! -e "$BUILD/nccl/libnccl.so.2" ]; then
  echo "run_nccl_compat_test: shim or its test programs not built under $BUILD; skipping"
  exit 77
fi
[ -x "$LOOMRUN" ] || { echo "run_nccl_compat_test: no $LOOMRUN; skipping"; exit 77; }

work=$(mktemp -d /tmp/nccl_compat_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --- the programs link the shim, never libloom or another NCCL ---------------
for program in "$BIN"/nccl_compat_*; do
  needed=$(readelf -d "$program" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
  grep -qx "libnccl.so.2" <<<"$needed" || fail "$program does not need libnccl.so.2: $needed"
  grep -q "libloom" <<<"$needed" && fail "$program links libloom directly: $needed"
  resolved=$(ldd "$program" | awk '$1 == "libnccl.so.2" {print $3}')
  [ "$(realpath "$resolved")" = "$(realpath "$BUILD/nccl/libnccl.so.2")" ] ||
    fail "$program resolves libnccl.so.2 to '$resolved', not the shim"
done
# libloom is found from the shim's own run path, without LD_LIBRARY_PATH.
shim_deps=$(ldd "$BUILD/nccl/libnccl.so.2")
grep -q "libloom.so.*=> /" <<<"$shim_deps" || fail "the shim does not find libloom: $shim_deps"

# Each run gets its own id file prefix (rank 0 publishes ncclGetUniqueId there).
run=0
ranks() {
  local n=$1
  shift
  run=$((run + 1))
  SHIM_TEST_ID_FILE="$work/id$run" timeout 600 "$LOOMRUN" -n "$n" --tag-output --timeout 500 "$@"
}

# --- collectives and the rest of the API, 4 ranks ----------------------------
ranks 4 "$BIN/nccl_compat_collectives" || fail "collectives with 4 ranks"
ranks 4 "$BIN/nccl_compat_features" || fail "features with 4 ranks"
# Over tcp too (NCCL_SHM_DISABLE=1 maps to LOOM_TRANSPORT=tcp), and with 3 ranks.
NCCL_SHM_DISABLE=1 ranks 3 "$BIN/nccl_compat_features" || fail "features over tcp with 3 ranks"
NCCL_ALGO=Ring ranks 3 "$BIN/nccl_compat_collectives" || fail "collectives with NCCL_ALGO=Ring"

# --- one process, one thread, several ranks ----------------------------------
timeout 300 "$BIN/nccl_compat_initall" || fail "single-process communicators"

# --- through LD_LIBRARY_PATH, as an NCCL program would pick the shim up -------
LD_LIBRARY_PATH="$BUILD/nccl" timeout 120 "$BIN/nccl_compat_env_probe" >/dev/null ||
  fail "LD_LIBRARY_PATH=$BUILD/nccl"

# --- NCCL_* -> LOOM_* --------------------------------------------------------
# Runs the probe in an environment of only PATH, HOME and the given assignments;
# its stdout (the LOOM_* values it saw) lands in $work/out, stderr in $work/err.
probe() {
  env -i PATH="$PATH" HOME="${HOME:-/}" "$@" \
    timeout 120 "$BIN/nccl_compat_env_probe" >"$work/out" 2>"$work/err" ||
    fail "env probe with $*: $(cat "$work/err")"
}
expect_out() { grep -qx "$1" "$work/out" || fail "expected '$1' in: $(cat "$work/out")"; }
expect_err() { grep -q "$1" "$work/err" || fail "expected '$1' on stderr: $(cat "$work/err")"; }

probe NCCL_DEBUG=INFO NCCL_ALGO=Tree NCCL_SOCKET_IFNAME==lo NCCL_IB_HCA=mlx5 NCCL_P2P_LEVEL=NVL
expect_out "LOOM_DEBUG=INFO"
expect_out "LOOM_ALGO=tree"
expect_out "LOOM_SOCKET_IFNAME=lo"
expect_out "LOOM_TRANSPORT=(unset)"
expect_err "NCCL_ALGO=Tree -> LOOM_ALGO=tree"
expect_err "NCCL 2\.[0-9]*\.[0-9]* ABI on Loom"
[ "$(grep -c "ignoring NCCL_IB_HCA, NCCL_P2P_LEVEL (no Loom meaning)" "$work/err")" = 1 ] ||
  fail "the unmapped variables are not named in exactly one line: $(cat "$work/err")"

probe NCCL_ALGO=ring LOOM_ALGO=tree NCCL_SOCKET_IFNAME=l NCCL_SHM_DISABLE=1
expect_out "LOOM_ALGO=tree"  # an explicit LOOM_ variable wins
expect_out "LOOM_SOCKET_IFNAME=lo"  # NCCL's prefix match
expect_out "LOOM_TRANSPORT=tcp"
[ -s "$work/err" ] && fail "stderr without NCCL_DEBUG: $(cat "$work/err")"

probe NCCL_ALGO=NVLS NCCL_SOCKET_IFNAME=^docker NCCL_DEBUG=WARN
expect_out "LOOM_ALGO=(unset)"
expect_out "LOOM_SOCKET_IFNAME=(unset)"
expect_out "LOOM_DEBUG=WARN"

probe NCCL_DEBUG=VERSION
expect_out "LOOM_DEBUG=WARN"
expect_err "NCCL 2\.[0-9]*\.[0-9]* ABI on Loom"

echo "run_nccl_compat_test: passed"
