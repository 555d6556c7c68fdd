#!/usr/bin/env bash
# The host hot path makes no system call: an 8-byte all-reduce on 2 ranks over
# shared memory, counted by strace around 1,000 and 11,000 iterations of
# loom_perf (each iteration is an out-of-place and an in-place call, so the
# second run makes 20,000 calls more). The difference must stay within a
# handful: a rank that waits long enough may still sleep in futex once in a
# while (more ranks than the machine has free cores), but nothing may happen
# per call. The regression this guards against cost five failed openat and an
# mmap/munmap pair per call (a dlopen probing for the CUDA driver).
set -euo pipefail
BUILD=$(realpath "$1")
command -v strace > /dev/null || {
  echo "strace not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Prints the total number of system calls both ranks (and loomrun) made.
syscalls() {
  local iters="$1"
  LOOM_TIMEOUT=60 timeout 300 strace -f -c -o "$work/strace.$iters" \
    "$BUILD/loomrun" -n 2 "$BUILD/perf/loom_perf" allreduce -b 8 -e 8 -n "$iters" -w 100 -c 0 \
    > "$work/out.$iters" 2>&1 || {
    cat "$work/out.$iters" >&2
    echo "loom_perf under strace failed" >&2
    exit 1
  }
  awk '$NF == "total" { print $4 }' "$work/strace.$iters"
}

few=$(syscalls 1000)
many=$(syscalls 11000)
extra=$((many - few))
echo "system calls: $few with 2,000 calls, $many with 22,000 calls: $extra for 20,000 calls more"
limit=50
if ((extra > limit)); then
  echo "FAIL: more than $limit system calls for 20,000 more calls; per system call (1,000 vs 11,000 iterations):" >&2
  join -j 1 -a 2 -e 0 -o 0,1.2,2.2 \
    <(awk '$NF != "total" && $1 ~ /^[0-9.]+$/ { print $NF, $4 }' "$work/strace.1000" | sort) \
    <(awk '$NF != "total" && $1 ~ /^[0-9.]+$/ { print $NF, $4 }' "$work/strace.11000" | sort) |
    awk '{ d = $3 - $2; if (d > 0) printf "  %-20s +%d\n", $1, d }' >&2
  exit 1
fi
echo "hot_path_syscalls_test: steady-state 8-byte all-reduce makes no per-call system call"
