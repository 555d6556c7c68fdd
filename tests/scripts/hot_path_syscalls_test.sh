#!/usr/bin/env bash
# The host hot path makes no system call: an 8-byte all-reduce on 2 ranks over
# shared memory, counted by strace around 1,000 and 11,000 iterations of
# loom_perf (each iteration is an out-of-place and an in-place call, so the
# second run makes 20,000 calls more). Two kinds of system call are told apart:
#  - yielding (sched_yield, poll, nanosleep, and the liveness check's
#    recvfrom, which a wait makes after 1 ms): a rank whose peer is late spins
#    5 us and then yields the core. How often depends on what else runs on
#    the cores (with a third busy process, about once per call), not on the
#    call, so it is printed, not limited.
#  - everything else (futex included: sleeping or waking a peer) is work the
#    call does, and must stay within a handful: 100 for 20,000 calls.
#    The regression this guards against cost five failed openat and an
#    mmap/munmap pair per call (a dlopen probing for the CUDA driver).
set -euo pipefail
BUILD=$(realpath "$1")
command -v strace > /dev/null || {
  echo "strace not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs loom_perf under strace; leaves the per-system-call table in $work/strace.ITERS.
trace() {
  local iters="$1"
  LOOM_TIMEOUT=60 timeout 300 strace -f -c -o "$work/strace.$iters" \
    "$BUILD/loomrun" -n 2 "$BUILD/perf/loom_perf" allreduce -b 8 -e 8 -n "$iters" -w 100 -c 0 \
    > "$work/out.$iters" 2>&1 || {
    cat "$work/out.$iters" >&2
    echo "loom_perf under strace failed" >&2
    exit 1
  }
}

waits='^(sched_yield|poll|ppoll|nanosleep|clock_nanosleep|recvfrom)$'
# calls ITERS KIND: the number of system calls of KIND (wait or work).
calls() {
  awk -v kind="$2" -v waits="$waits" '
    $NF != "total" && $1 ~ /^[0-9.]+$/ {
      if ((kind == "wait") == ($NF ~ waits)) sum += $4
    }
    END { print sum + 0 }' "$work/strace.$1"
}

trace 1000
trace 11000
work_extra=$(($(calls 11000 work) - $(calls 1000 work)))
wait_extra=$(($(calls 11000 wait) - $(calls 1000 wait)))
echo "20,000 calls more (11,000 against 1,000 iterations): $work_extra system calls of work," \
  "$wait_extra yielding"
if ((work_extra > 100)); then
  echo "FAIL: more than 100 system calls of work; the difference per system call:" >&2
  join -j 1 -a 2 -e 0 -o 0,1.2,2.2 \
    <(awk '$NF != "total" && $1 ~ /^[0-9.]+$/ { print $NF, $4 }' "$work/strace.1000" | sort) \
    <(awk '$NF != "total" && $1 ~ /^[0-9.]+$/ { print $NF, $4 }' "$work/strace.11000" | sort) |
    awk '{ d = $3 - $2; if (d > 0) printf "  %-20s +%d\n", $1, d }' >&2
  exit 1
fi
echo "hot_path_syscalls_test: a steady-state 8-byte all-reduce makes no system call of its own"
