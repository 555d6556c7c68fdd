// What the tuner knows about a communicator's machine: rank-to-rank link
// costs, the rings of every channel count with the hop costs they get when
// running together, and the rank order the tree plan runs in. Built once per
// communicator from a RankGraph and its rings, or scaled out on paper by
// replicating hosts.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "topology/ring_search.h"
#include "tuner/link_cost.h"

namespace loom::tuner {

/// One ring of a channel set.
struct RingChannel {
  std::vector<int> order;      ///< ranks; order[p] sends to order[p + 1]
  std::vector<LinkCost> hops;  ///< hops[p]: order[p] -> order[p + 1], sharing links with the set
};

/// The rings of the hierarchical all-reduce (Algorithm::Hierarchical).
struct Hierarchy {
  std::vector<std::vector<int>> hosts;  ///< each host's ranks, in the first ring's order
  std::vector<RingChannel> local;       ///< local[h]: the ring over hosts[h]
  /// across[p]: the ring over position p of every host; all of them run at
  /// once, so their hops share the hosts' network links.
  std::vector<RingChannel> across;
};

struct TunerTopology {
  int nranks = 0;
  int hosts = 1;
  /// Cost of a message between two ranks, alone on its links.
  std::function<LinkCost(int from, int to)> pair;
  /// Cost of a direct all-reduce message between two ranks. Its k-th send
  /// (rank r to r + k) runs while every rank sends its k-th, so the links
  /// those sends cross together (a PCIe switch's uplink, the socket link)
  /// are shared among them. Set on one host; empty otherwise (the direct
  /// algorithm runs on one host only) and in hand-built topologies, where
  /// directCost falls back to `pair`.
  std::function<LinkCost(int from, int to)> directPair;
  /// ringSets[c - 1]: the rings that run when the ring algorithm uses c
  /// channels. At least one set.
  std::vector<std::vector<RingChannel>> ringSets;
  /// Plan position p of tree (and single-channel ring) plans runs on rank
  /// treeOrder[p]: the first ring's order, so tree neighbours are close.
  std::vector<int> treeOrder;
  /// Messages a link holds before its sender must wait (the transports'
  /// slots per peer, LOOM_SHM_SLOTS / LOOM_TCP_SLOTS).
  size_t linkSlots = 4;
  /// The slowest host's network, GB/s, and what one connection of the
  /// transport carries (0: unlimited): how many channels fill the network
  /// (network_channels.h). 0 on one host.
  double networkGBps = 0.0;
  double connectionGBps = 0.0;
  /// Set when the ranks sit on two or more hosts with the same number (at
  /// least two) on each: what the hierarchical all-reduce runs on.
  std::optional<Hierarchy> hierarchy;
  /// Each host's ranks in the first ring's order (the host-tree all-reduce's
  /// chains; the first of each is its host's leader).
  std::vector<std::vector<int>> hostRanks;

  bool oneHost() const { return hosts == 1; }
  LinkCost directCost(int from, int to) const {
    return directPair ? directPair(from, to) : pair(from, to);
  }
  int maxChannels() const { return static_cast<int>(ringSets.size()); }
};

/// Describes `graph` with its rings (searchRings' result, best first).
/// Throws Error(InvalidArgument) when `rings` is empty.
TunerTopology describeTopology(const topo::RankGraph& graph, const std::vector<topo::Ring>& rings);

/// The machine of `graph` grown to `hosts` hosts on paper: every host is a
/// copy of graph's host 0, and messages between hosts cost what they cost
/// from host 0 to host 1 (same local ranks). Rings repeat host 0's part of
/// each ring on every host. Needs a graph of at least two hosts with equal
/// rank counts on hosts 0 and 1; throws Error(InvalidArgument) otherwise.
TunerTopology replicateHosts(const topo::RankGraph& graph, const std::vector<topo::Ring>& rings,
                             int hosts);

}  // namespace loom::tuner
