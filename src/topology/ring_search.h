// Ring search: orders the communicator's ranks into rings (channels) whose
// slowest hop is as fast as the topology allows.
//
// The search sees ranks, not nodes: a RankGraph places each rank on a GPU or a
// CPU and answers, for every ordered pair of ranks, what one message between
// them crosses (bandwidth, latency, path class, physical links). Inside a host
// that is the path of computePaths; across hosts a message leaves through the
// NIC nearest the sending rank and enters through the NIC nearest the
// receiving one (a fabric is one big switch).
//
// Objective. A ring's score is its hops' keys (bandwidth, then the load on
// its busiest link, then path class, then latency) sorted worst first and compared
// lexicographically: the best ring has the fastest slowest hop, then as few hops as possible at
// that speed, and so on. So a ring stays inside NVLink, then one PCIe switch, then one socket
// before it crosses anything slower, and crosses it as rarely as possible. Hop bandwidths account
// for hops that share a physical link (see Capacity), so the score is what the rings get when they
// all run at once.
//
// Capacity. Every link has a capacity per direction counted in ring hops: an
// NVLink of L bonded lanes between two GPUs carries L, an NVLink to an
// NVSwitch is not limited (switched hops spread over all planes), any other
// link carries one. The first ring may
// exceed capacity (a ring must always exist); each further ring (channel)
// must fit in what the earlier ones left, never using a class worse than the
// first ring's worst, and is kept only while the rings' total bandwidth grows.
// A link used by k hops gives each its fair share: a hop whose path bandwidth
// P crosses a link of bandwidth W runs at P * min(1, max(1, W / P) / k); a
// hop alone on its links runs at P (which on NVSwitch machines is the NVLink
// flow over every switch plane, not one plane's route).
//
// Search. Per host: exhaustive (branch and bound on the slowest hop) up to
// `exactLimit` ranks, else greedy nearest-best construction improved by
// segment reversals. Several hosts: one path through each host's ranks, from
// an entry rank to an exit rank, joined host after host; each ring enters and
// leaves every host once, and its crossings use the NICs nearest its entry
// and exit ranks. A host's entry and exit are chosen by the quality of their
// NIC legs, then by the best path between them.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/graph.h"
#include "topology/paths.h"

namespace loom::topo {

/// What one directed rank-to-rank message crosses.
struct Hop {
  double bandwidth = 0.0;  ///< GB/s, alone on its links
  /// GB/s one channel (ring) moves over this hop however idle its links:
  /// HopOptions::channelBandwidth between two GPUs, else 0 (no limit beyond
  /// the links).
  double channelBandwidth = 0.0;
  double latency = 0.0;  ///< microseconds, path plus per-message overhead
  PathClass cls = PathClass::None;
  std::vector<int> arcs;  ///< physical links crossed: 2 * link + (0: a -> b, 1: b -> a)
};

struct HopOptions {
  /// GB/s between two ranks on the same GPU or CPU, and the cap on any copy
  /// between CPU ranks (host shared memory is a CPU memory copy).
  double memoryCopyBandwidth = 10.0;
  /// Microseconds every message pays on top of its path: software, doorbells.
  double messageLatency = 1.0;
  /// GB/s one channel moves between two GPUs (one thread block of the kernel
  /// that drives it), however fast the links: what makes an NVSwitch system
  /// want many channels. 0: no limit beyond the links.
  double channelBandwidth = 0.0;
};

/// The communicator's ranks on a topology: rank r runs on node rankNodes[r]
/// (a GPU, or a CPU for a rank without a GPU). Precomputes every hop.
class RankGraph {
 public:
  /// Throws Error(InvalidArgument) naming the rank when a node is not a GPU or
  /// CPU, or when two ranks of one host have no path between them.
  RankGraph(const Topology& topology, std::vector<int> rankNodes, HopOptions options = {});

  const Topology& topology() const { return *topology_; }
  int size() const { return static_cast<int>(rankNodes_.size()); }
  int nodeOf(int rank) const { return rankNodes_[rank]; }
  /// Hosts that hold ranks, numbered 0.. in order of their first rank. A
  /// "host" here is an NVLink island (nvlinkIslands): one machine, or
  /// several whose GPUs share NvSwitches (an NVL72 rack's 18 trays), so
  /// messages between hosts are exactly those that cross the network.
  int hostCount() const { return static_cast<int>(hostRanks_.size()); }
  int hostOf(int rank) const { return rankHost_[rank]; }
  const std::vector<int>& ranksOn(int host) const { return hostRanks_[host]; }
  /// The NIC a rank's messages to other hosts use (-1: its host has none).
  int nicOf(int rank) const { return nic_[rank]; }
  const Hop& hop(int from, int to) const { return hops_[index(from, to)]; }
  /// The part of a cross-host hop inside the sender's host (rank -> NIC ->
  /// fabric) and inside the receiver's (fabric -> NIC -> rank).
  const Hop& exitLeg(int rank) const { return exitLegs_[rank]; }
  const Hop& entryLeg(int rank) const { return entryLegs_[rank]; }
  /// Ring hops one directed use of this arc may carry before rings must share:
  /// the link's own rule (Capacity, above), or, for hops whose channels move
  /// `channelBandwidth` GB/s each, as many as the link's bandwidth holds at
  /// that speed where that is more (a 25 GB/s NVLink lane: two 9.35 GB/s
  /// channels).
  int arcCapacity(int arc, double channelBandwidth = 0.0) const;
  double arcBandwidth(int arc) const { return topology_->links[arc / 2].bandwidth; }

 private:
  size_t index(int from, int to) const { return static_cast<size_t>(from) * size() + to; }
  int linkCapacity(int arc) const;
  void buildHosts();
  void buildLegs(const HopOptions& options);
  void buildHops(const HopOptions& options);
  void capChannels(double channelBandwidth);

  const Topology* topology_;
  std::vector<int> rankNodes_;
  std::vector<int> island_;  // per node, nvlinkIslands
  std::vector<int> rankHost_;
  std::vector<std::vector<int>> hostRanks_;
  std::vector<int> nic_;
  std::vector<Hop> exitLegs_;
  std::vector<Hop> entryLegs_;
  std::vector<Hop> hops_;
};

/// One rank per GPU, GPUs ordered by their `rank` attribute where set, then
/// node order; without GPUs one rank per CPU. `nranks` > 0 takes that many
/// ranks, spread in blocks when there are more ranks than devices (ranks may
/// share a GPU or CPU). Throws Error(InvalidArgument) when there is no GPU or
/// CPU at all.
std::vector<int> defaultRankNodes(const Topology& topology, int nranks = 0);

struct Ring {
  std::vector<int> order;             ///< ranks; order[p] sends to order[(p + 1) % size]
  double bandwidth = 0.0;             ///< slowest hop, GB/s, with every ring of its set running
  PathClass worst = PathClass::Self;  ///< worst path class of its hops
};

/// The most channels Loom runs: the ring search looks for no more, and the
/// kernel path walks this many blocks per rank unless told otherwise.
inline constexpr int kMostRings = 16;

struct RingSearchOptions {
  int maxRings = kMostRings;  ///< channels to look for at most (>= 1)
  int exactLimit = 9;         ///< ranks per host up to which the search is exhaustive
};

/// Rings for the ranks of `graph`, best first; at least one. Every ring visits
/// every rank once. Throws Error(InvalidArgument) for an empty graph or bad
/// options.
std::vector<Ring> searchRings(const RankGraph& graph, const RingSearchOptions& options = {});

/// Bandwidth of every hop when all `orders` run at once, [ring][position]
/// (position p: order[p] -> order[p + 1]); links crossed by several hops split
/// their bandwidth as described above, and each order is one channel, so no
/// hop exceeds its channelBandwidth unless `perChannel` is false (orders that
/// are not channels, such as the direct algorithm's rounds of copies).
std::vector<std::vector<double>> sharedHopBandwidths(const RankGraph& graph,
                                                     const std::vector<std::vector<int>>& orders,
                                                     bool perChannel = true);

/// The slowest hop of `order` running alone (its own hops may still share
/// links). The quantity searchRings maximises for its first ring.
double ringBottleneck(const RankGraph& graph, const std::vector<int>& order);

}  // namespace loom::topo
