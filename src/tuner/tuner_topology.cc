#include "tuner/tuner_topology.h"

#include <memory>

#include "collectives/algorithms.h"
#include "core/error.h"

namespace loom::tuner {
namespace {

LinkCost costOf(const topo::Hop& hop) { return {hop.latency, hop.bandwidth}; }

// A dense cost matrix shared by the pair function's copies.
struct CostMatrix {
  int size = 0;
  std::vector<LinkCost> costs;
  const LinkCost& at(int from, int to) const {
    return costs[static_cast<size_t>(from) * size + to];
  }
};

std::shared_ptr<CostMatrix> matrixOf(const topo::RankGraph& g, const std::vector<int>& rows,
                                     const std::vector<int>& columns) {
  auto m = std::make_shared<CostMatrix>();
  m->size = static_cast<int>(columns.size());
  for (int a : rows) {
    for (int b : columns) m->costs.push_back(a == b ? LinkCost{} : costOf(g.hop(a, b)));
  }
  return m;
}

std::vector<std::vector<int>> ordersOf(const std::vector<topo::Ring>& rings, size_t count) {
  std::vector<std::vector<int>> orders;
  for (size_t k = 0; k < count; ++k) orders.push_back(rings[k].order);
  return orders;
}

void requireRings(const std::vector<topo::Ring>& rings) {
  if (rings.empty()) raise(ErrorCode::InvalidArgument, "the tuner needs at least one ring");
}

// Rings that run at once, each hop with the bandwidth it gets while they all do.
std::vector<RingChannel> ringsRunningTogether(const topo::RankGraph& graph,
                                              const std::vector<std::vector<int>>& orders) {
  const auto shared = topo::sharedHopBandwidths(graph, orders);
  std::vector<RingChannel> out;
  for (size_t k = 0; k < orders.size(); ++k) {
    RingChannel channel{orders[k], {}};
    for (size_t p = 0; p < orders[k].size() && orders[k].size() > 1; ++p) {
      const int next = orders[k][(p + 1) % orders[k].size()];
      channel.hops.push_back({graph.hop(orders[k][p], next).latency, shared[k][p]});
    }
    out.push_back(std::move(channel));
  }
  return out;
}

// The direct algorithm's costs between `ranks` (indices into it): round k
// sends ranks[i] -> ranks[i + k] from every i at once. A round's pairs are
// the cycles of that shift, so the ring search's sharing rule prices them.
std::shared_ptr<CostMatrix> directRoundCosts(const topo::RankGraph& graph,
                                             const std::vector<int>& ranks) {
  const int n = static_cast<int>(ranks.size());
  auto m = std::make_shared<CostMatrix>();
  m->size = n;
  m->costs.assign(static_cast<size_t>(n) * n, LinkCost{});
  for (int k = 1; k < n; ++k) {
    std::vector<std::vector<int>> cycles;  // indices
    std::vector<bool> seen(n, false);
    for (int start = 0; start < n; ++start) {
      auto& cycle = cycles.emplace_back();
      for (int i = start; !seen[i]; i = (i + k) % n) {
        seen[i] = true;
        cycle.push_back(i);
      }
      if (cycle.empty()) cycles.pop_back();
    }
    std::vector<std::vector<int>> orders;
    for (const auto& cycle : cycles) {
      auto& order = orders.emplace_back();
      for (int i : cycle) order.push_back(ranks[i]);
    }
    // Whole-buffer copies, not channels: no per-channel limit.
    const auto shared = topo::sharedHopBandwidths(graph, orders, false);
    for (size_t c = 0; c < cycles.size(); ++c) {
      for (size_t p = 0; p < cycles[c].size(); ++p) {
        const int from = cycles[c][p];
        const int to = cycles[c][(p + 1) % cycles[c].size()];
        m->costs[static_cast<size_t>(from) * n + to] = {graph.hop(ranks[from], ranks[to]).latency,
                                                        shared[c][p]};
      }
    }
  }
  return m;
}

// Each host's ranks in the order `ring` visits them, so chains and local rings
// use the links the ring search chose.
HostGroups hostsAlong(const topo::RankGraph& graph, const std::vector<int>& ring) {
  HostGroups hosts(static_cast<size_t>(graph.hostCount()));
  for (int r : ring) hosts[static_cast<size_t>(graph.hostOf(r))].push_back(r);
  return hosts;
}

std::optional<Hierarchy> hierarchyOf(const topo::RankGraph& graph, const std::vector<int>& ring) {
  HostGroups hosts = hostsAlong(graph, ring);
  if (!hierarchicalFits(hosts)) return std::nullopt;
  std::vector<std::vector<int>> across(hosts.front().size());
  for (const auto& host : hosts) {
    for (size_t p = 0; p < host.size(); ++p) across[p].push_back(host[p]);
  }
  Hierarchy h;
  h.local = ringsRunningTogether(graph, hosts);
  h.across = ringsRunningTogether(graph, across);
  h.hosts = std::move(hosts);
  return h;
}

}  // namespace

TunerTopology describeTopology(const topo::RankGraph& graph, const std::vector<topo::Ring>& rings) {
  requireRings(rings);
  TunerTopology t;
  t.nranks = graph.size();
  t.hosts = graph.hostCount();
  std::vector<int> all(graph.size());
  for (int r = 0; r < graph.size(); ++r) all[r] = r;
  auto matrix = matrixOf(graph, all, all);
  t.pair = [matrix](int from, int to) { return matrix->at(from, to); };
  if (t.hosts == 1 && t.nranks > 1) {
    auto direct = directRoundCosts(graph, all);
    t.directPair = [direct](int from, int to) { return direct->at(from, to); };
  }
  for (size_t c = 1; c <= rings.size(); ++c) {
    t.ringSets.push_back(ringsRunningTogether(graph, ordersOf(rings, c)));
  }
  t.treeOrder = rings.front().order;
  t.hierarchy = hierarchyOf(graph, t.treeOrder);
  if (t.hosts > 1) t.hostRanks = hostsAlong(graph, t.treeOrder);
  return t;
}

TunerTopology replicateHosts(const topo::RankGraph& graph, const std::vector<topo::Ring>& rings,
                             int hosts) {
  requireRings(rings);
  if (graph.hostCount() < 2 || graph.ranksOn(0).size() != graph.ranksOn(1).size() || hosts < 1) {
    raise(ErrorCode::InvalidArgument,
          "replicating hosts needs a graph of two or more equal hosts and hosts >= 1; got {} "
          "host(s), {} wanted",
          graph.hostCount(), hosts);
  }
  const std::vector<int>& local = graph.ranksOn(0);
  const int perHost = static_cast<int>(local.size());
  std::vector<int> localIndex(graph.size(), -1);
  for (int l = 0; l < perHost; ++l) localIndex[local[l]] = l;
  auto inside = matrixOf(graph, local, local);
  auto across = matrixOf(graph, local, graph.ranksOn(1));

  TunerTopology t;
  t.nranks = hosts * perHost;
  t.hosts = hosts;
  t.pair = [inside, across, perHost](int from, int to) {
    const bool same = from / perHost == to / perHost;
    return (same ? inside : across)->at(from % perHost, to % perHost);
  };
  if (hosts == 1 && perHost > 1) {
    auto direct = directRoundCosts(graph, local);
    t.directPair = [direct](int from, int to) { return direct->at(from, to); };
  }
  // Ring segments are contiguous per host, host 0 first (see ring_search.h),
  // so the first perHost positions of each ring are host 0's part and its
  // last hop is the crossing to the next host.
  for (size_t c = 1; c <= rings.size(); ++c) {
    const auto orders = ordersOf(rings, c);
    const auto shared = topo::sharedHopBandwidths(graph, orders);
    auto& set = t.ringSets.emplace_back();
    for (size_t k = 0; k < c; ++k) {
      RingChannel channel;
      for (int h = 0; h < hosts; ++h) {
        for (int p = 0; p < perHost; ++p) {
          const int rank = orders[k][p];
          if (localIndex[rank] < 0) {
            raise(ErrorCode::InternalError, "ring {} does not start with host 0's ranks", k);
          }
          channel.order.push_back(h * perHost + localIndex[rank]);
          const int next = orders[k][(p + 1) % orders[k].size()];
          channel.hops.push_back({graph.hop(rank, next).latency, shared[k][p]});
        }
      }
      if (t.nranks == 1) channel.hops.clear();
      set.push_back(std::move(channel));
    }
  }
  t.treeOrder = t.ringSets.front().front().order;
  // Host 0's local ring on every host; each cross-host ring's hops cost what
  // its crossing from host 0 to host 1 costs with all of them running.
  if (hosts >= 2) {
    const std::vector<int>& ring = t.ringSets.front().front().order;
    for (int k = 0; k < hosts; ++k) {
      t.hostRanks.emplace_back(ring.begin() + k * perHost, ring.begin() + (k + 1) * perHost);
    }
  }
  const auto base = hierarchyOf(graph, rings.front().order);
  if (base && hosts >= 2) {
    Hierarchy& h = t.hierarchy.emplace();
    for (int k = 0; k < hosts; ++k) {
      RingChannel ring = base->local.front();
      for (int& r : ring.order) r = k * perHost + localIndex[r];
      h.hosts.push_back(ring.order);
      h.local.push_back(std::move(ring));
    }
    for (size_t p = 0; p < base->across.size(); ++p) {
      RingChannel ring;
      for (int k = 0; k < hosts; ++k) {
        ring.order.push_back(h.hosts[static_cast<size_t>(k)][p]);
        ring.hops.push_back(base->across[p].hops.front());
      }
      h.across.push_back(std::move(ring));
    }
  }
  return t;
}

}  // namespace loom::tuner
