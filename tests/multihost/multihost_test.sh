#!/usr/bin/env bash
# Ranks on several "hosts": network namespaces, each with one veth into a
# bridge (tests/scripts/lib/netns.sh). Every collective loom_perf has runs with
# its value check (-c 1) for
#   - 2 hosts x 2 ranks, interleaved (ranks 0,2 on host 1; 1,3 on host 2), so the
#     tuner's ring order must regroup them: one crossing per host per ring;
#   - 4 hosts x 1 rank.
# Over tcp (the only network transport built here). Exit 77 (skipped, never
# passed) when namespaces cannot be created.
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
# shellcheck source=../scripts/lib/netns.sh
source "$SRC/tests/scripts/lib/netns.sh"
if ! netns_can_run; then
  echo "######################################################################"
  echo "# multihost_test SKIPPED: cannot create network namespaces (needs root)"
  echo "######################################################################"
  exit 77
fi
netns_switch_up "lmh$$" 4
work=$(mktemp -d)
perf=$(netns_private_binary "$BUILD/perf/loom_perf" "$work")
cleanup() {
  pkill -KILL -f "$perf" 2> /dev/null || true
  netns_switch_down
  rm -rf "$work"
}
trap cleanup EXIT
# Below the kernel's ephemeral range (32768 and up), where the ranks' own links
# and the sockets of earlier cases may sit: a fixed rendezvous port there can be taken.
port=$((20000 + $$ % 10000))
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d " \n")  # docs/security.md

# run <label> <host index of rank 0> <host index of rank 1> ... -- loom_perf args
# (RUN_ENV: extra VAR=value words for every rank)
run() {
  local label=$1
  shift
  local hosts=()
  while [[ $1 != -- ]]; do hosts+=("$1"); shift; done
  shift
  local n=${#hosts[@]} pids=() r status=0
  port=$((port + 1))
  for ((r = 0; r < n; r++)); do
    local h=${hosts[$r]}
    # shellcheck disable=SC2086
    ip netns exec "${NETNS_HOSTS[$h]}" env ${RUN_ENV:-} LOOM_COMM_ID="${NETNS_ADDRS[${hosts[0]}]}:$port" \
      LOOM_SECRET="$secret" LOOM_WORLD_SIZE=$n LOOM_RANK=$r LOOM_TIMEOUT=60 \
      LOOM_SOCKET_IFNAME="${NETNS_IFS[$h]}" LOOM_DEBUG=INFO \
      timeout -s KILL 120 "$perf" "$@" > "$work/$label.$r" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < n; r++)); do wait "${pids[$r]}" || status=1; done
  if ((status != 0)) || ! grep -q "Out of bounds values : 0 OK" "$work/$label.0"; then
    echo "FAIL $label: $*"
    for ((r = 0; r < n; r++)); do sed "s/^/  [rank $r] /" "$work/$label.$r" | tail -20; done
    return 1
  fi
  local sizes
  sizes=$(grep -cE "^ +[0-9]" "$work/$label.0")
  echo "ok   $label: $sizes sizes checked ($*)"
}

failed=0
for coll in ${MULTIHOST_COLLS:-allreduce allgather reducescatter broadcast reduce alltoall sendrecv}; do
  run "2x2-$coll" 0 1 0 1 -- "$coll" -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 || failed=1
  run "4x1-$coll" 0 1 2 3 -- "$coll" -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 || failed=1
done
# The same over UCX (LOOM_NET=ucx; UCX picks its tcp transport between the
# namespaces): every collective on 2 hosts x 2 ranks and on 4 hosts x 1.
if ldd "$perf" | grep -q libucp; then
  for coll in ${MULTIHOST_COLLS:-allreduce allgather reducescatter broadcast reduce alltoall sendrecv}; do
    RUN_ENV=LOOM_NET=ucx run "2x2-ucx-$coll" 0 1 0 1 -- "$coll" -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 ||
      failed=1
    RUN_ENV=LOOM_NET=ucx run "4x1-ucx-$coll" 0 1 2 3 -- "$coll" -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 ||
      failed=1
  done
  if ! grep -q "over ucx" "$work/2x2-ucx-allreduce.0"; then
    echo "FAIL: LOOM_NET=ucx did not connect over UCX (no log line)"
    failed=1
  fi
else
  echo "ucx: loom_perf does not link UCX (built without it): the UCX runs are left out"
fi

# LOOM_NET=ib where no rank has an RDMA port: every rank refuses, naming them.
port=$((port + 1))
ib_pids=()
for r in 0 1; do
  ip netns exec "${NETNS_HOSTS[$r]}" env LOOM_NET=ib LOOM_COMM_ID="${NETNS_ADDRS[0]}:$port" \
    LOOM_SECRET="$secret" LOOM_WORLD_SIZE=2 LOOM_RANK=$r LOOM_TIMEOUT=30 \
    LOOM_SOCKET_IFNAME="${NETNS_IFS[$r]}" timeout -s KILL 60 "$perf" allreduce -b 8 -e 8 -n 1 \
    >"$work/net-ib.$r" 2>&1 &
  ib_pids+=($!)
done
ib_ok=0
for pid in "${ib_pids[@]}"; do wait "$pid" && ib_ok=$((ib_ok + 1)); done
if ((ib_ok > 0)) || ! grep -q "LOOM_NET=ib: rank(s) 0, 1 cannot use it" "$work/net-ib.0" ||
  ! grep -q "LOOM_NET=ib: rank(s) 0, 1 cannot use it" "$work/net-ib.1"; then
  echo "FAIL: LOOM_NET=ib without RDMA ports was not refused by name on both ranks"
  cat "$work/net-ib.0" "$work/net-ib.1"
  failed=1
else
  echo "ok   LOOM_NET=ib without RDMA ports: refused on every rank"
fi

# The hierarchical all-reduce, forced: every dtype and op on 2 hosts x 2
# interleaved ranks, and 2 hosts x 3 ranks (odd shards).
RUN_ENV=LOOM_ALGO=hierarchical run "2x2-hierarchical" 0 1 0 1 -- \
  allreduce -b 4 -e 1M -f 64 -c 1 -n 1 -w 0 -d all -o all || failed=1
RUN_ENV=LOOM_ALGO=hierarchical run "2x3-hierarchical" 0 1 0 1 0 1 -- \
  allreduce -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 || failed=1
# The two-level tree (chains in the hosts, a tree among their first ranks),
# forced: every dtype and op on 2 x 2 interleaved, and uneven hosts (3 + 1).
RUN_ENV=LOOM_ALGO=hosttree run "2x2-hosttree" 0 1 0 1 -- \
  allreduce -b 4 -e 1M -f 64 -c 1 -n 1 -w 0 -d all -o all || failed=1
RUN_ENV=LOOM_ALGO=hosttree run "3+1-hosttree" 0 0 0 1 -- \
  allreduce -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 || failed=1
if ! grep -q "HostTree" "$work/2x2-hosttree.0"; then
  echo "FAIL: LOOM_ALGO=hosttree did not run the host tree (no log line)"
  failed=1
fi
if ! grep -q "Hierarchical" "$work/2x2-hierarchical.0"; then
  echo "FAIL: LOOM_ALGO=hierarchical did not run the hierarchical algorithm (no log line)"
  failed=1
fi
# Channels: the ring all-reduce over 3 link sets per peer on 4 hosts x 1 rank,
# and the hierarchical one's cross-host phase over 2, every dtype and op, with
# pieces of any size (LOOM_CHANNEL_MIN=1) so small counts leave channels empty.
# All-gather and reduce-scatter on 3 channels too (their pieces are strided).
RUN_ENV="LOOM_ALGO=ring LOOM_NCHANNELS=3 LOOM_CHANNEL_MIN=1" run "4x1-channels" 0 1 2 3 -- \
  allreduce -b 4 -e 1M -f 64 -c 1 -n 1 -w 0 -d all -o all || failed=1
RUN_ENV="LOOM_ALGO=ring LOOM_NCHANNELS=3 LOOM_CHANNEL_MIN=1" run "4x1-channels-ag" 0 1 2 3 -- \
  allgather -b 4 -e 1M -f 64 -c 1 -n 1 -w 0 -d all || failed=1
RUN_ENV="LOOM_ALGO=ring LOOM_NCHANNELS=3 LOOM_CHANNEL_MIN=1" run "4x1-channels-rs" 0 1 2 3 -- \
  reducescatter -b 4 -e 1M -f 64 -c 1 -n 1 -w 0 -d all -o all || failed=1
RUN_ENV="LOOM_ALGO=hierarchical LOOM_NCHANNELS=2 LOOM_CHANNEL_MIN=1" \
  run "2x2-hierarchical-channels" 0 1 0 1 -- allreduce -b 4 -e 4M -f 32 -c 1 -n 2 -w 1 || failed=1
if ldd "$perf" | grep -q libucp; then
  RUN_ENV="LOOM_NET=ucx LOOM_ALGO=ring LOOM_NCHANNELS=3 LOOM_CHANNEL_MIN=1" \
    run "4x1-ucx-channels" 0 1 2 3 -- allreduce -b 8 -e 4M -f 16 -c 1 -n 2 -w 1 || failed=1
  label_ucx=4x1-ucx-channels
fi
for label in 4x1-channels 4x1-channels-ag 4x1-channels-rs 2x2-hierarchical-channels \
  ${label_ucx:-}; do
  want=3
  [[ $label == 2x2-hierarchical-channels ]] && want=2
  if ! grep -qE "runs (Ring|Hierarchical) on $want channel" "$work/$label.0"; then
    echo "FAIL $label: no collective ran on $want channels (no log line)"
    failed=1
  fi
done
# A compressed all-reduce across hosts (lossy: no value check, must complete).
run "2x2-int8" 0 1 0 1 -- allreduce -b 1K -e 1M -f 32 -c 0 -n 2 -w 1 --compress int8 || failed=1

# The ring the tuner found for the interleaved layout enters and leaves each
# host once: ranks of one host are neighbours in it.
order=$(sed -n 's/.*rank 0: 2 hosts.*ring order \([0-9 ]*\)$/\1/p' "$work/2x2-allreduce.0" | head -1)
read -r -a ring <<< "$order"
if ((${#ring[@]} != 4)); then
  echo "FAIL: no ring order logged by rank 0 (LOOM_DEBUG=INFO)"
  failed=1
else
  crossings=0
  for ((p = 0; p < 4; p++)); do
    a=${ring[$p]} b=${ring[$(((p + 1) % 4))]}
    if ((a % 2 != b % 2)); then crossings=$((crossings + 1)); fi
  done
  echo "ring order for ranks 0,2 on host 1 and 1,3 on host 2: ${ring[*]} ($crossings host crossings)"
  if ((crossings != 2)); then echo "FAIL: the ring crosses hosts $crossings times, not 2"; failed=1; fi
fi

# Ranks in different calls across hosts: rank 3 reduces with max, the others
# with sum, rank 0 on host 1 and ranks 1-3 on host 2; the tuner's ring is
# 0 1 3 2. Ranks 3 and 2 find the mismatch from the call stamps, rank 1 from
# their status on its host; rank 0 only waits for rank 2, and hears of it from
# the rendezvous (the finder revokes the communicator). Without that it waited
# until LOOM_TIMEOUT (60 s) where the finders stayed alive, or blamed a rank
# that "disconnected without leaving" where they exited, as loom_perf does.
port=$((port + 1))
mm_pids=()
mm_hosts=(0 1 1 1)
mm_start=$SECONDS
for r in 0 1 2 3; do
  op=sum
  ((r == 3)) && op=max
  h=${mm_hosts[$r]}
  ip netns exec "${NETNS_HOSTS[$h]}" env LOOM_DEBUG=INFO LOOM_ALGO=ring LOOM_COMM_ID="${NETNS_ADDRS[0]}:$port" \
    LOOM_SECRET="$secret" LOOM_WORLD_SIZE=4 LOOM_RANK=$r LOOM_TIMEOUT=60 \
    LOOM_SOCKET_IFNAME="${NETNS_IFS[$h]}" timeout -s KILL 90 "$perf" allreduce -b 16K -e 16K \
    -n 1 -w 0 -o $op > "$work/mismatch.$r" 2>&1 &
  mm_pids+=($!)
done
mm_ok=0
for pid in "${mm_pids[@]}"; do wait "$pid" && mm_ok=$((mm_ok + 1)); done
mm_took=$((SECONDS - mm_start))
if ((mm_ok > 0 || mm_took > 20)) ||
  ! grep -q "found ranks in different calls and revoked the communicator" "$work/mismatch.0"; then
  echo "FAIL: a mismatch across hosts: $mm_ok rank(s) succeeded, $mm_took s, rank 0 said:"
  for r in 0 1 2 3; do sed "s/^/  [rank $r] /" "$work/mismatch.$r" | grep -v "^ *\[rank .\] #" | tail -8; done
  failed=1
else
  echo "ok   ranks in different calls across hosts: every rank failed within $mm_took s"
fi
exit $failed
