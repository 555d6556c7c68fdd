#!/usr/bin/env bash
# On a GPU machine: bus bandwidth of Loom's device paths over the settings
# that decide it, one loom_perf run per line (each size checked once, then
# timed), for docs/performance.md. Lines: path, collective, ranks, channels
# (LOOM_NCHANNELS; 0: the path's default), bulk slot (LOOM_CUDA_SLOT_BYTES),
# scope (LOOM_CUDA_SCOPE), compression; columns: busbw (GB/s, out of place) at
# each size.
#   perf/gpu/kernel_path_sweep.sh BUILD_DIR [log-dir] [lines-file]
# A lines file holds one run per line, the seven fields above; without one the
# built-in list runs.
set -uo pipefail
BUILD=$1
LOGS=${2:-$BUILD/sweep-logs}
LINES=${3:-}
mkdir -p "$LOGS"
PERF=$BUILD/perf/loom_perf
sizes=(1M 16M 256M)

printf '%-7s %-14s %5s %8s %6s %-6s %-9s' path collective ranks channels slot scope compress
for s in "${sizes[@]}"; do printf ' %10s' "$s"; done
echo
run() {  # path collective ranks channels slot scope compress
  local log="$LOGS/$1-$2-$3-c$4-s$5-$6-$7.txt"
  local compress=()
  [ "$7" != none ] && compress=(--compress "$7")
  local channels=()
  [ "$4" != 0 ] && channels=(LOOM_NCHANNELS="$4")
  env LOOM_CUDA_PATH="$1" "${channels[@]}" LOOM_CUDA_SLOT_BYTES="$5" LOOM_CUDA_SCOPE="$6" \
    LOOM_TIMEOUT=20 timeout 60 "$PERF" "$2" --device -t "$3" -b 1M -e 256M -f 16 -n 5 -w 2 -c 1 \
    "${compress[@]}" > "$log" 2>&1
  local rc=$?
  printf '%-7s %-14s %5s %8s %6s %-6s %-9s' "$@"
  for s in "${sizes[@]}"; do
    local bytes
    bytes=$(numfmt --from=iec "$s")
    local bw
    bw=$(awk -v b="$bytes" '$1 == b {print $8; exit}' "$log")
    printf ' %10s' "${bw:--}"
  done
  grep -q "Out of bounds values : 0 OK" "$log" || printf '  FAILED (exit %s, see %s)' "$rc" "$(basename "$log")"
  echo
}
if [ -n "$LINES" ]; then
  while read -r -a fields; do
    [ "${#fields[@]}" = 7 ] && [ "${fields[0]:0:1}" != "#" ] && run "${fields[@]}"
  done < "$LINES"
  exit 0
fi
for c in 0 8 16; do run kernel allreduce 8 "$c" 64K auto none; done
run kernel allreduce 2 0 64K auto none
run kernel allgather 8 0 64K auto none
run kernel reducescatter 8 0 64K auto none
run kernel allreduce 8 0 64K auto int8
run direct allreduce 8 0 64K auto none
run direct allreduce 2 0 64K auto none
