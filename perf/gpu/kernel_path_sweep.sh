#!/usr/bin/env bash
# On a GPU machine: bus bandwidth of Loom's device paths over the settings
# that decide it, one loom_perf run per line (each size checked once, then
# timed), for docs/performance.md. Lines: path, collective, ranks, channels,
# compression; columns: busbw (GB/s, out of place) at each size.
#   perf/gpu/kernel_path_sweep.sh BUILD_DIR [log-dir]
set -uo pipefail
BUILD=$1
LOGS=${2:-$BUILD/sweep-logs}
mkdir -p "$LOGS"
PERF=$BUILD/perf/loom_perf
sizes=(1M 16M 256M)

printf '%-7s %-14s %5s %8s %-9s' path collective ranks channels compress
for s in "${sizes[@]}"; do printf ' %10s' "$s"; done
echo
run() {  # path collective ranks channels compress
  local log="$LOGS/$1-$2-$3-c$4-$5.txt"
  local compress=()
  [ "$5" != none ] && compress=(--compress "$5")
  LOOM_CUDA_PATH=$1 LOOM_NCHANNELS=$4 LOOM_TIMEOUT=20 timeout 60 "$PERF" "$2" --device -t "$3" \
    -b 1M -e 256M -f 16 -n 5 -w 2 -c 1 "${compress[@]}" > "$log" 2>&1
  local rc=$?
  printf '%-7s %-14s %5s %8s %-9s' "$1" "$2" "$3" "$4" "$5"
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
for c in 2 4 8 16; do run kernel allreduce 8 "$c" none; done
for c in 2 8; do run kernel allreduce 2 "$c" none; done
run kernel allgather 8 8 none
run kernel reducescatter 8 8 none
run kernel allreduce 8 8 int8
run direct allreduce 8 1 none
run direct allreduce 2 1 none
run direct allreduce 8 1 int8
