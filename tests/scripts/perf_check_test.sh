#!/usr/bin/env bash
# Every collective x every dtype x every op, checked by loom_perf (-c 1) in
# separate processes started by loomrun, over shm and over tcp, plus the
# OpenMPI launch path. loom_perf exits non-zero when any value is wrong.
set -euo pipefail
BUILD=$(realpath "$1")
run() {
  echo "+ $*"
  timeout 300 "$@" > /tmp/perf_check.$$ 2>&1 || { cat /tmp/perf_check.$$; rm -f /tmp/perf_check.$$; exit 1; }
  grep -q "Out of bounds values : 0 OK" /tmp/perf_check.$$ || { cat /tmp/perf_check.$$; exit 1; }
  rm -f /tmp/perf_check.$$
}
export LOOM_TIMEOUT=60
for coll in allreduce allgather reducescatter broadcast reduce alltoall sendrecv gather scatter; do
  run "$BUILD/loomrun" -n 3 "$BUILD/perf/loom_perf" "$coll" -b 1 -e 300K -f 17 -n 2 -w 1 -d all -o all -r 2
done
for coll in allreduce allgather alltoall; do
  LOOM_TRANSPORT=tcp run "$BUILD/loomrun" -n 4 "$BUILD/perf/loom_perf" "$coll" -b 4 -e 4M -f 32 -n 2 -w 1 -d all -o all
done
for algo in ring tree direct; do
  LOOM_ALGO=$algo run "$BUILD/loomrun" -n 5 "$BUILD/perf/loom_perf" allreduce -b 4 -e 5M -f 9 -n 2 -w 1 -d float -o all
done
# Buffers from loomMemAlloc, registered (-R 1): ranks in other processes read
# each other's in place once the first large call found them shared; two
# ranks out of place take shards or each the whole sum, both while the
# choice between them warms up (LOOM_TWO_RANK_SUM=auto).
for coll in allreduce allgather reducescatter broadcast reduce; do
  run "$BUILD/loomrun" -n 3 "$BUILD/perf/loom_perf" "$coll" -R 1 -b 1 -e 3M -f 7 -n 20 -w 1 -d all -o all
done
run "$BUILD/loomrun" -n 2 "$BUILD/perf/loom_perf" allreduce -R 1 -b 16M -e 20M -f 1.25 -n 3 -w 1 \
  -d all -o all
said=$(timeout 60 "$BUILD/loomrun" -n 2 "$BUILD/perf/loom_perf" allreduce -R 1 -b 1M -e 1M -n 1 -w 0)
grep -q "^# buffers: from the library's allocator, registered" <<<"$said" ||
  { echo "loom_perf -R 1 did not say its buffers are registered: $said" >&2; exit 1; }
if command -v mpirun > /dev/null; then
  run mpirun -np 4 --allow-run-as-root --oversubscribe "$BUILD/perf/loom_perf" allreduce -b 8 -e 2M -f 8 -n 2 -w 1 -o all
else
  echo "mpirun not installed: OpenMPI launch path not tested" >&2
  exit 77
fi
# The core-to-core round trip the perf scripts print: a positive number of microseconds.
timeout 60 "$BUILD/perf/loom_perf" --pingpong | awk '/^pingpong_us/ { found = 1; if ($2 + 0 <= 0) exit 1 }
  END { exit found ? 0 : 1 }' || { echo "loom_perf --pingpong printed no round trip" >&2; exit 1; }
echo "perf_check_test: all collectives correct"
