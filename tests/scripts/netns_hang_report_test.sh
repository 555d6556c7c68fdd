#!/usr/bin/env bash
# Hang localization and revoke across hosts: 4 ranks on two "hosts" (network
# namespaces joined by a veth pair), ranks 0-1 on host A, 2-3 on host B.
# First rank 3 stalls in user code before all-reduce #2. Every other rank must
# time out with loomRemoteError, and its message must say what each peer was
# doing: ranks on its own host read from shared memory, ranks on the other
# host through the rendezvous — in particular that rank 3 is not waiting in
# any call. Then rank 3 revokes the communicator there instead, in a job that
# names no interface: while the others wait, every rank's listening sockets
# must be on its own host's address (the one that reaches the rendezvous),
# and then every other rank must fail with loomRevoked naming rank 3, within a
# second of the revoke.
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
# shellcheck source=lib/netns.sh
source "$SRC/tests/scripts/lib/netns.sh"
if ! netns_can_run; then
  echo "netns_hang_report_test: SKIPPED - cannot create network namespaces here (needs root)" >&2
  exit 77
fi
netns_up "loomhr$$"
work=$(mktemp -d)
probe=$(netns_private_binary "$BUILD/tests/loom_hang_probe" "$work")
cleanup_all() {
  pkill -KILL -f "$probe" 2> /dev/null || true
  netns_down
  rm -rf "$work"
}
trap cleanup_all EXIT

# Below the kernel's ephemeral range (32768 and up), where the ranks' own links
# and the sockets of earlier cases may sit: a fixed rendezvous port there can be taken.
port=$((20000 + $$ % 10000))
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d " \n")
# start_ranks <port> <LOOM_TIMEOUT> <name interfaces: yes|no> <probe arguments...>:
# ranks 0-3, pids in $pids.
start_ranks() {
  local at=$1 timeout=$2 name=$3
  shift 3
  local common=(LOOM_COMM_ID="$NETNS_ADDR_A:$at" LOOM_SECRET="$secret" LOOM_WORLD_SIZE=4
    LOOM_TIMEOUT="$timeout")
  pids=()
  for rank in 0 1 2 3; do
    if ((rank < 2)); then ns=$NETNS_A ifname=$NETNS_IF_A; else ns=$NETNS_B ifname=$NETNS_IF_B; fi
    [[ $name == yes ]] || ifname=""
    ip netns exec "$ns" env "${common[@]}" ${ifname:+LOOM_SOCKET_IFNAME="$ifname"} \
      LOOM_RANK=$rank timeout -s KILL 60 "$probe" "$@" > "$work/rank$rank.txt" 2>&1 &
    pids+=($!)
  done
}
start_ranks "$port" 3 yes --stall-rank 3 --stall-at 2
status=0
for rank in 0 1 2; do
  wait "${pids[$rank]}" || { echo "rank $rank exited with $?"; status=1; }
done
kill -KILL "${pids[3]}" 2> /dev/null || true
wait "${pids[3]}" 2> /dev/null || true
for rank in 0 1 2 3; do sed "s/^/  [rank $rank] /" "$work/rank$rank.txt"; done
((status == 0)) || { echo "netns_hang_report_test: a waiting rank did not fail cleanly" >&2; exit 1; }

expect() {  # rank, pattern, why
  if ! grep -Eq "$2" "$work/rank$1.txt"; then
    echo "netns_hang_report_test: rank $1's report lacks /$2/ ($3)" >&2
    exit 1
  fi
}
for rank in 0 1 2; do
  expect "$rank" "all-reduce #2 failed after [0-9]+ ms \(remote error.*timed out" "a timeout in the stalled call"
done
# Host A's ranks see rank 3 (host B) through the rendezvous: it never waited in #2.
expect 0 "rank 3 not waiting in any call" "remote staller's state"
expect 1 "rank 3 not waiting in any call" "remote staller's state"
# ... and rank 2 (host B) as inside all-reduce #2 (waiting, or already failed there).
expect 0 "rank 2 (in|failed in) AllReduce #2" "remote waiter's state"
# Host B's rank 2 sees rank 3 in shared memory, and host A's ranks remotely.
expect 2 "rank 3 not in a call, 2 collectives done" "local staller's state"
expect 2 "rank 0 (in|failed in) AllReduce #2" "remote waiter's state"
echo "netns_hang_report_test: every waiter named what each peer on either host was doing"

# --- revoke: rank 3 revokes where it stalled; LOOM_TIMEOUT is far away -------
revoke_after=1500
start_ranks $((port + 1)) 30 no --stall-rank 3 --stall-at 2 --revoke --revoke-after $revoke_after
# The listeners of the ranks' processes in one namespace, as address:port lines.
listeners() {
  ip netns exec "$1" ss -ltnpH 2> /dev/null | grep -F "$(basename "$probe")" | awk '{print $4}'
}
for _ in $(seq 10); do
  sleep 0.1
  [[ $(listeners "$NETNS_A" | wc -l) -ge 2 && $(listeners "$NETNS_B" | wc -l) -ge 2 ]] && break
done
for side in A B; do
  ns_var=NETNS_$side addr_var=NETNS_ADDR_$side
  addr=${!addr_var}
  found=$(listeners "${!ns_var}")
  [[ -n $found ]] || { echo "netns_hang_report_test: no listener seen on host $side" >&2; exit 1; }
  if grep -vE "^${addr//./\\.}:[0-9]+\$" <<< "$found"; then
    echo "netns_hang_report_test: host $side listens beyond $addr: $found" >&2
    exit 1
  fi
done
echo "netns_hang_report_test: every rank listens on its own host's address only"
status=0
for rank in 0 1 2 3; do
  wait "${pids[$rank]}" || { echo "rank $rank exited with $?"; status=1; }
done
for rank in 0 1 2 3; do sed "s/^/  [revoke, rank $rank] /" "$work/rank$rank.txt"; done
((status == 0)) || { echo "netns_hang_report_test: the revoke did not end every rank's call" >&2; exit 1; }
for rank in 0 1 2; do
  expect "$rank" "all-reduce #2 failed after [0-9]+ ms \(communicator revoked.*rank 3 revoked" \
    "the revoke, named"
  ms=$(sed -nE 's/.*failed after ([0-9]+) ms.*/\1/p' "$work/rank$rank.txt")
  ((ms < revoke_after + 1000)) ||
    { echo "netns_hang_report_test: rank $rank heard of the revoke $((ms - revoke_after)) ms late" >&2; exit 1; }
done
expect 3 "the next call returned communicator revoked" "the revoking rank's own next call"
echo "netns_hang_report_test: the revoke reached every rank on both hosts"
