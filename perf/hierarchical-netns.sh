#!/usr/bin/env bash
# Flat ring vs hierarchical all-reduce, each on one channel and on several
# (independent link sets, LOOM_NCHANNELS), and int8 compression, across K
# "hosts" (network namespaces on one bridge, tests/scripts/lib/netns.sh) with
# L ranks on each. Every host's link is shaped with tc to a fixed rate in both
# directions, or left unshaped (--rate none: the veths run as fast as the CPUs
# move bytes). Ranks of one host use shared memory, hosts talk tcp. Prints
# loom_perf's tables and the speed-ups per size.
#
#   sudo perf/hierarchical-netns.sh [--hosts 2] [--per-host 2] [--rate 1gbit|none]
#                                   [--channels 4] [--min 1M] [--max 64M] [--iters 5]
# Needs root (ip netns, tc). Binaries from $BUILD_DIR (default ./build).
set -euo pipefail
hosts=2
per_host=2
rate=1gbit
min=1M
max=64M
iters=5
channels=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) hosts="$2"; shift 2 ;;
    --per-host) per_host="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --channels) channels="$2"; shift 2 ;;
    *) echo "hierarchical-netns.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(realpath "${BUILD_DIR:-$src/build}")"
perf="$build/perf/loom_perf"
[[ -x "$perf" ]] || { echo "hierarchical-netns.sh: $perf not found" >&2; exit 2; }
# shellcheck source=../tests/scripts/lib/netns.sh
source "$src/tests/scripts/lib/netns.sh"
netns_can_run || { echo "hierarchical-netns.sh: cannot create network namespaces (root?)" >&2; exit 2; }
netns_switch_up "lhb$$" "$hosts"
# Both directions of every host's link: its own veth end (egress to the
# bridge) and the bridge's end (egress to the host).
for ((h = 1; h <= hosts; h++)); do
  [[ $rate == none ]] && break  # unshaped
  ip netns exec "${NETNS_HOSTS[$((h - 1))]}" tc qdisc add dev "${NETNS_IFS[$((h - 1))]}" root \
    tbf rate "$rate" burst 256kb latency 50ms
  ip netns exec "$NETNS_SWITCH" tc qdisc add dev "lhb$$o$h" root tbf rate "$rate" burst 256kb \
    latency 50ms
done
work=$(mktemp -d)
perf=$(netns_private_binary "$perf" "$work")
trap 'pkill -KILL -f "$perf" 2> /dev/null || true; netns_switch_down; rm -rf "$work"' EXIT
# Below the kernel's ephemeral range (32768 and up), where the ranks' own links
# and the sockets of earlier cases may sit: a fixed rendezvous port there can be taken.
port=$((20000 + $$ % 10000))
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d " \n")  # docs/security.md
n=$((hosts * per_host))

# run <name> <VAR=value ...> -- <loom_perf args>: ranks placed host by host.
run() {
  local name=$1 envs=()
  shift
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  port=$((port + 1))
  local pids=() r h
  for ((r = 0; r < n; r++)); do
    h=$((r / per_host))
    ip netns exec "${NETNS_HOSTS[$h]}" env "${envs[@]}" LOOM_COMM_ID="${NETNS_ADDRS[0]}:$port" \
      LOOM_SECRET="$secret" LOOM_WORLD_SIZE=$n LOOM_RANK=$r LOOM_TIMEOUT=300 \
      LOOM_SOCKET_IFNAME="${NETNS_IFS[$h]}" \
      timeout -s KILL 900 "$perf" allreduce -b "$min" -e "$max" -f 4 -n "$iters" -w 1 "$@" \
      > "$work/$name.$r" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  echo "# $name ($hosts hosts x $per_host ranks, $rate links)"
  grep -E "^ +[0-9]" "$work/$name.0"
  # With LOOM_DEBUG=INFO: what the tuner chose, and the network speed it assumed.
  grep -hoE "(AllReduce of [0-9]+ B runs [A-Za-z]+|network [0-9.]+ GB/s)" "$work/$name.0" | sort -u || true
}

# Open MPI across the same namespaces: the rsh agent maps an address to its
# namespace and runs the daemon there under that host's own hostname.
mpi_perf="$build/perf/mpi_perf"
run_mpi() {
  local name=$1 hostlist="" h
  : > "$work/hosts.map"
  for ((h = 0; h < hosts; h++)); do
    echo "${NETNS_ADDRS[$h]} ${NETNS_HOSTS[$h]}" >> "$work/hosts.map"
    hostlist+="${hostlist:+,}${NETNS_ADDRS[$h]}:$per_host"
  done
  cat > "$work/agent.sh" << AGENT
#!/bin/bash
host=\$1; shift
ns=\$(awk -v h="\$host" '\$1 == h {print \$2}' "$work/hosts.map")
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
AGENT
  chmod +x "$work/agent.sh"
  local subnet="${NETNS_ADDRS[0]%.*}.0/24"
  ip netns exec "${NETNS_HOSTS[0]}" unshare --uts /bin/sh -c 'hostname "$0"; exec "$@"' \
    "${NETNS_HOSTS[0]}" timeout -s KILL 900 mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -np "$n" --host "$hostlist" --mca plm_rsh_agent "$work/agent.sh" \
    --mca oob_tcp_if_include "$subnet" --mca btl_tcp_if_include "$subnet" \
    -x GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184 \
    "$mpi_perf" allreduce -b "$min" -e "$max" -f 4 -n "$iters" -w 1 -c 1 > "$work/$name.0" 2>&1
  echo "# $name: Open MPI $(mpirun --version | head -1 | awk '{print $NF}') ($hosts hosts x $per_host ranks, $rate links)"
  grep -E "^ +[0-9]" "$work/$name.0"
}

run ring LOOM_ALGO=ring LOOM_NCHANNELS=1 -- -c 1
run ring_ch LOOM_ALGO=ring LOOM_NCHANNELS="$channels" -- -c 1
run hierarchical LOOM_ALGO=hierarchical LOOM_NCHANNELS=1 -- -c 1
run hier_ch LOOM_ALGO=hierarchical LOOM_NCHANNELS="$channels" -- -c 1
run tuner LOOM_DEBUG=INFO -- -c 1
run int8 LOOM_ALGO=ring -- --compress int8
if command -v mpirun > /dev/null && [[ -x "$mpi_perf" ]]; then
  run_mpi mpi
else
  echo "# (no mpirun or $mpi_perf: Open MPI column left empty)"
  : > "$work/mpi.0"
fi

echo
echo "# out-of-place time (us); speed-ups over the flat ring (on one channel: ring, hier;"
echo "# on $channels: ring_ch, hier_ch, their gains ch_x over one) and over Open MPI"
printf "%12s %9s %9s %9s %9s %9s %9s %9s %7s %7s %7s %7s %9s\n" size ring ring_ch hier hier_ch \
  tuner int8 mpi ring_ch_x hier_x hier_ch_x int8_x tuner/mpi
paste <(grep -E "^ +[0-9]" "$work/ring.0" | awk '{print $1, $6}') \
      <(grep -E "^ +[0-9]" "$work/ring_ch.0" | awk '{print $6}') \
      <(grep -E "^ +[0-9]" "$work/hierarchical.0" | awk '{print $6}') \
      <(grep -E "^ +[0-9]" "$work/hier_ch.0" | awk '{print $6}') \
      <(grep -E "^ +[0-9]" "$work/tuner.0" | awk '{print $6}') \
      <(grep -E "^ +[0-9]" "$work/int8.0" | awk '{print $6}') \
      <(grep -E "^ +[0-9]" "$work/mpi.0" | awk '{print $6}') |
  awk '{mpi = ($8 == "") ? 0 : $8
        printf "%12s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %7.2f %7.2f %7.2f %7.2f %9.2f\n",
               $1, $2, $3, $4, $5, $6, $7, mpi, $2/$3, $2/$4, $4/$5, $2/$7,
               (mpi > 0) ? mpi/$6 : 0}'
