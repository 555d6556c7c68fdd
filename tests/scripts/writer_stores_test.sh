#!/usr/bin/env bash
# Broadcast's root and reduce's other ranks choose their arena stores each
# alone (collectives/executor/arena_stores.h): with LOOM_ARENA_STORES=auto the
# writers, and only they, time both kinds and log a decision; a fixed setting
# times nothing. Results are checked either way.
set -euo pipefail
BUILD=$(realpath "$1")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run SETTING COLLECTIVE [SIZE]: three ranks, root 1, 40 calls of SIZE (64K;
# one arena round each).
run() {
  LOOM_ARENA_STORES=$1 LOOM_DEBUG=INFO LOOM_TIMEOUT=60 timeout 120 \
    "$BUILD/loomrun" -n 3 --tag-output "$BUILD/perf/loom_perf" "$2" -b "${3:-64K}" -e "${3:-64K}" -n 20 -w 0 -r 1 -c 1 \
    > "$out" 2>&1 || { cat "$out"; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$out" || { cat "$out"; echo "$2: wrong results" >&2; exit 1; }
}

# writers PHRASE: the ranks that logged a decision of PHRASE (each with both
# kinds measured), in order.
writers() {
  local lines
  lines=$(grep -F "$1 of 65536-byte rounds" "$out" || true)
  if [[ -n $lines ]] && grep -vqE "cached [0-9.]*[1-9][0-9.]* ns/B, streaming [0-9.]*[1-9][0-9.]* ns/B" <<< "$lines"; then
    echo "a decision without both kinds measured: $lines" >&2
    exit 1
  fi
  grep -oE "^\[[0-9]+\]" <<< "$lines" | tr -d '[]' | sort -nu | xargs
}

run auto broadcast
[[ $(writers "broadcast root's arena stores") == "1" ]] ||
  { cat "$out"; echo "broadcast: the root (rank 1) alone should decide" >&2; exit 1; }
run auto reduce
[[ $(writers "reduce's arena stores") == "0 2" ]] ||
  { cat "$out"; echo "reduce: ranks 0 and 2, not the root, should decide" >&2; exit 1; }
for collective in broadcast reduce; do
  run streaming "$collective"
  ! grep -q "arena stores of" "$out" ||
    { cat "$out"; echo "$collective: a fixed setting measured" >&2; exit 1; }
  # Rounds under one streamed block (4 KiB) are not timed: cached, no decision.
  run auto "$collective" 2K
  ! grep -q "arena stores of" "$out" ||
    { cat "$out"; echo "$collective: 2 KiB rounds were measured" >&2; exit 1; }
done
echo "writer_stores_test: broadcast's root (rank 1) and reduce's ranks 0 and 2 each decided; fixed settings and 2 KiB rounds did not measure"
