#!/usr/bin/env bash
# Compressed vs exact all-reduce where the network is the bottleneck: two
# "hosts" (network namespaces made here, joined by a veth pair shaped with tc to
# a fixed rate), one rank each, tcp between them. Prints loom_perf's tables for
# --compress none / int8 / topk and the speed-up per size.
#
#   sudo perf/compress-netns.sh [--rate 1gbit] [--max 64M] [--iters 5]
# Needs root (ip netns, tc). Binaries from $BUILD_DIR (default ./build).
set -euo pipefail
rate=1gbit
max=64M
iters=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rate) rate="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    *) echo "compress-netns.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build="$(realpath "${BUILD_DIR:-./build}")"
perf="$build/perf/loom_perf"
[[ -x "$perf" ]] || { echo "compress-netns.sh: $perf not found" >&2; exit 2; }

tag="loomcmp$$"
a="${tag}a"
b="${tag}b"
cleanup() {
  ip netns del "$a" 2> /dev/null || true
  ip netns del "$b" 2> /dev/null || true
}
trap cleanup EXIT
ip netns add "$a"
ip netns add "$b"
ip link add "${tag}x" type veth peer name "${tag}y"
ip link set "${tag}x" netns "$a"
ip link set "${tag}y" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "${tag}x"
ip -n "$b" addr add 10.77.0.2/24 dev "${tag}y"
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
done
ip -n "$a" link set "${tag}x" up
ip -n "$b" link set "${tag}y" up
# Token-bucket shaping on both directions: the link behaves like a $rate NIC.
ip netns exec "$a" tc qdisc add dev "${tag}x" root tbf rate "$rate" burst 256kb latency 50ms
ip netns exec "$b" tc qdisc add dev "${tag}y" root tbf rate "$rate" burst 256kb latency 50ms

# Below the kernel's ephemeral range (32768 and up), where the ranks' own links
# and the sockets of earlier cases may sit: a fixed rendezvous port there can be taken.
port=$((20000 + $$ % 10000))
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d " \n")
run() {
  local spec="$1"
  local out="$2"
  local common=(LOOM_COMM_ID="10.77.0.1:$port" LOOM_SECRET="$secret" LOOM_WORLD_SIZE=2
                LOOM_TIMEOUT=120 LOOM_SOCKET_IFNAME="${tag}x")
  ip netns exec "$a" env "${common[@]}" LOOM_RANK=0 \
    timeout 600 "$perf" allreduce -b 1M -e "$max" -f 4 -n "$iters" -w 1 --compress "$spec" \
    > "$out" 2>&1 &
  local pid=$!
  ip netns exec "$b" env "${common[@]}" LOOM_SOCKET_IFNAME="${tag}y" LOOM_RANK=1 \
    timeout 600 "$perf" allreduce -b 1M -e "$max" -f 4 -n "$iters" -w 1 --compress "$spec" \
    > /dev/null 2>&1
  wait "$pid"
  port=$((port + 1))
}
work=$(mktemp -d)
for spec in none int8 topk:0.01; do
  echo "# --compress $spec over a $rate link"
  run "$spec" "$work/$spec.txt"
  grep -E "^ +[0-9]" "$work/$spec.txt"
done
echo
echo "# speed-up over --compress none (out-of-place time ratio)"
printf "%12s %10s %10s %10s %8s %8s\n" size none_us int8_us topk_us int8_x topk_x
paste <(grep -E "^ +[0-9]" "$work/none.txt" | awk '{print $1, $6}') \
      <(grep -E "^ +[0-9]" "$work/int8.txt" | awk '{print $6}') \
      <(grep -E "^ +[0-9]" "$work/topk:0.01.txt" | awk '{print $6}') |
  awk '{printf "%12s %10.0f %10.0f %10.0f %8.2f %8.2f\n", $1, $2, $3, $4, $2/$3, $2/$4}'
rm -rf "$work"
