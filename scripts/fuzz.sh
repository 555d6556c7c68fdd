#!/usr/bin/env bash
# Builds Loom's libFuzzer targets (tests/fuzz/fuzz_*.cc) with clang and runs
# each for FUZZ_SECONDS on a working copy of its seed corpus. Exits non-zero if
# any target crashes, leaks, times out or breaks an invariant, printing the
# reproducer. No CMake needed: each target compiles the few sources it parses.
#
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_BUILD    output folder (default <repo>/build-fuzz)
#   FUZZ_TARGETS  space-separated subset (default: all)
#   FUZZ_CXX      compiler (default clang++)
#   FUZZ_JOBS     targets run at once (default 1: the machines are shared)
#
# Reproduce a crash: <FUZZ_BUILD>/fuzz_<target> <FUZZ_BUILD>/crashes/<target>/crash-...
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${FUZZ_BUILD:-$ROOT/build-fuzz}
RUN_SECONDS=${FUZZ_SECONDS:-60}
CXX=${FUZZ_CXX:-clang++}
JOBS=${FUZZ_JOBS:-1}
ALL_TARGETS="unique_id rendezvous_messages rendezvous_frames tcp_wire peer_info topo_file ibv_connection"
TARGETS=${FUZZ_TARGETS:-$ALL_TARGETS}

# The library sources each target links (beyond its own .cc).
sources_for() {
  case "$1" in
    unique_id) echo "src/bootstrap/unique_id.cc base/core/keyed_hash.cc base/core/error.cc" ;;
    rendezvous_messages | rendezvous_frames)
      echo "src/bootstrap/rendezvous_parser.cc src/bootstrap/peer_status.cc" \
        "src/bootstrap/shrink_agreement.cc" \
        "base/core/keyed_hash.cc base/core/error.cc"
      ;;
    tcp_wire) echo "base/core/keyed_hash.cc base/core/error.cc" ;;
    peer_info) echo "src/comm/peer_info.cc base/core/error.cc" ;;
    ibv_connection) echo "transports/ibverbs/ibv_connection.cc base/core/error.cc" ;;
    topo_file)
      echo "src/topology/topo_file.cc src/topology/topo_file_save.cc src/topology/graph.cc" \
        "src/topology/paths.cc base/core/error.cc"
      ;;
    *)
      echo "fuzz.sh: unknown target '$1' (known: $ALL_TARGETS)" >&2
      return 1
      ;;
  esac
}

CXXFLAGS=(-std=c++20 -g -O1 -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I"$ROOT" -I"$ROOT/base" -I"$ROOT/src" -I"$ROOT/include")

mkdir -p "$OUT"

# Rebuilds a target when its binary is missing or older than anything it may
# include or compile, so reruns are cheap and never stale.
build() {
  local target=$1 binary="$OUT/fuzz_$1" srcs
  srcs=$(sources_for "$target")
  local inputs=("$ROOT/tests/fuzz/fuzz_$target.cc")
  for s in $srcs; do inputs+=("$ROOT/$s"); done
  if [[ -x "$binary" ]] && [[ -z $(find "${inputs[@]}" "$ROOT/tests/fuzz" "$ROOT/src/bootstrap" \
    "$ROOT/base/core" "$ROOT/src/comm" "$ROOT/src/topology" "$ROOT/transports/tcp" \
    "$ROOT/transports/ibverbs" "$ROOT/include" \
    -newer "$binary" \( -name '*.h' -o -name '*.cc' \) -print -quit) ]]; then
    return 0
  fi
  echo "fuzz.sh: building fuzz_$target"
  "$CXX" "${CXXFLAGS[@]}" "${inputs[@]}" -lfmt -lpugixml -lsodium -o "$binary.tmp"
  mv "$binary.tmp" "$binary"
}

# Runs one target; prints a one-line summary; returns non-zero on a finding.
run() {
  local target=$1
  local corpus="$OUT/corpus/$target" crashes="$OUT/crashes/$target" log="$OUT/fuzz_$target.log"
  mkdir -p "$corpus" "$crashes"
  # The working corpus keeps what earlier runs discovered; seeds are refreshed.
  cp -f "$ROOT/tests/fuzz/corpus/$target"/* "$corpus/" 2>/dev/null || true
  local status=0
  # -timeout: one input may take at most 10 s; the outer timeout bounds the run
  # even if libFuzzer itself hangs.
  timeout --kill-after=10 $((RUN_SECONDS + 60)) "$OUT/fuzz_$target" \
    -max_total_time="$RUN_SECONDS" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1 || status=$?
  local runs secs units
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  units=$(find "$corpus" -type f | wc -l)
  local rate="?"
  if [[ -n "$runs" && -n "$secs" && "$secs" -gt 0 ]]; then rate=$((runs / secs)); fi
  local found
  found=$(find "$crashes" -type f -newer "$log.start" 2>/dev/null | head -5 || true)
  if [[ $status -ne 0 || -n "$found" ]]; then
    echo "FAIL  $target: exit $status after ${runs:-?} runs; log $log"
    grep -E 'ERROR|invariant failed|SUMMARY|Test unit written' "$log" | head -8 | sed 's/^/      /'
    for f in $found; do echo "      reproducer: $OUT/fuzz_$target $f"; done
    return 1
  fi
  echo "ok    $target: ${runs:-?} runs in ${secs:-?} s (${rate} exec/s), corpus $units inputs"
}

for target in $TARGETS; do
  sources_for "$target" >/dev/null
  build "$target"
done

failed=0
pids=()
for target in $TARGETS; do
  touch "$OUT/fuzz_$target.log.start"
  if [[ $JOBS -le 1 ]]; then
    run "$target" || failed=1
  else
    run "$target" &
    pids+=($!)
    if [[ ${#pids[@]} -ge $JOBS ]]; then
      wait "${pids[0]}" || failed=1
      pids=("${pids[@]:1}")
    fi
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done

if [[ $failed -ne 0 ]]; then
  echo "fuzz.sh: a fuzz target found a problem (see reproducers above)"
  exit 1
fi
echo "fuzz.sh: all targets ran ${RUN_SECONDS} s each without a finding"
