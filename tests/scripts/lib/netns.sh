# Two "hosts" on one machine: network namespaces joined by a veth pair, for
# tests of what happens between hosts. Source it, then:
#   netns_up <tag>      creates <tag>a (10.78.N.1) and <tag>b (10.78.N.2), sets NETNS_A/B,
#                       NETNS_IF_A/B and NETNS_ADDR_A/B; removed again on exit
#   netns_can_run       exit status 0 when this machine allows it (root, ip, netns)
#   netns_private_binary <binary> <dir>
#                       prints a path to <binary> that only this run uses (a link in <dir>)
netns_can_run() {
  command -v ip > /dev/null 2>&1 || return 1
  local probe="loomprobe$$"
  ip netns add "$probe" 2> /dev/null || return 1
  ip netns del "$probe"
}

# Cleanup kills stray ranks with `pkill -f <path>`. Matching the shared build
# path would also kill another test's ranks running the same binary at the same
# time (ctest -j): multihost_test once took down small_shm_test's loom_perf so.
# A link inside this run's own directory is a name no one else runs.
netns_private_binary() {
  local link
  link="$2/$(basename "$1")"
  ln -s "$(realpath "$1")" "$link" && echo "$link"
}

netns_up() {
  local tag=$1
  local subnet=$(($$ % 200 + 20))
  NETNS_A="${tag}a"
  NETNS_B="${tag}b"
  NETNS_IF_A="${tag}x"
  NETNS_IF_B="${tag}y"
  NETNS_ADDR_A="10.78.$subnet.1"
  NETNS_ADDR_B="10.78.$subnet.2"
  trap netns_down EXIT
  ip netns add "$NETNS_A"
  ip netns add "$NETNS_B"
  ip link add "$NETNS_IF_A" type veth peer name "$NETNS_IF_B"
  ip link set "$NETNS_IF_A" netns "$NETNS_A"
  ip link set "$NETNS_IF_B" netns "$NETNS_B"
  ip -n "$NETNS_A" addr add "$NETNS_ADDR_A/24" dev "$NETNS_IF_A"
  ip -n "$NETNS_B" addr add "$NETNS_ADDR_B/24" dev "$NETNS_IF_B"
  ip -n "$NETNS_A" link set lo up
  ip -n "$NETNS_B" link set lo up
  ip -n "$NETNS_A" link set "$NETNS_IF_A" up
  ip -n "$NETNS_B" link set "$NETNS_IF_B" up
}

netns_down() {
  ip netns del "$NETNS_A" 2> /dev/null || true
  ip netns del "$NETNS_B" 2> /dev/null || true
}

# K "hosts" on one switch: namespaces <tag>1..<tag>K, each with one veth into a
# bridge that lives in its own namespace <tag>sw (nothing is added to the
# caller's namespace). Sets NETNS_HOSTS (names), NETNS_ADDRS and NETNS_IFS.
#   netns_switch_up <tag> <K>
netns_switch_up() {
  local tag=$1 count=$2 subnet=$(($$ % 200 + 20)) i
  NETNS_SWITCH="${tag}sw"
  NETNS_HOSTS=()
  NETNS_ADDRS=()
  NETNS_IFS=()
  trap netns_switch_down EXIT
  ip netns add "$NETNS_SWITCH"
  ip -n "$NETNS_SWITCH" link add br0 type bridge
  ip -n "$NETNS_SWITCH" link set br0 up
  for ((i = 1; i <= count; i++)); do
    local ns="${tag}h$i" inside="${tag}i$i" outside="${tag}o$i"
    ip netns add "$ns"
    ip link add "$inside" type veth peer name "$outside"
    ip link set "$inside" netns "$ns"
    ip link set "$outside" netns "$NETNS_SWITCH"
    ip -n "$NETNS_SWITCH" link set "$outside" master br0
    ip -n "$NETNS_SWITCH" link set "$outside" up
    ip -n "$ns" addr add "10.79.$subnet.$i/24" dev "$inside"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$inside" up
    NETNS_HOSTS+=("$ns")
    NETNS_ADDRS+=("10.79.$subnet.$i")
    NETNS_IFS+=("$inside")
  done
}

netns_switch_down() {
  local ns
  for ns in "${NETNS_HOSTS[@]}"; do ip netns del "$ns" 2> /dev/null || true; done
  ip netns del "$NETNS_SWITCH" 2> /dev/null || true
}
