// RankGraph construction and the ring search; the objective and capacity rule
// are documented in ring_search.h.
#include "topology/ring_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/error.h"
#include "topology/ring_packing.h"

namespace loom::topo {
namespace {

// ---------------------------------------------------------------- RankGraph

std::vector<int> arcsAlong(const Topology& t, int source, const std::vector<int>& links) {
  std::vector<int> arcs;
  int at = source;
  for (int link : links) {
    arcs.push_back(2 * link + (t.links[link].a == at ? 0 : 1));
    at = t.other(t.links[link], at);
  }
  return arcs;
}

int netLinkOf(const Topology& t, int nic) {
  for (int link : t.linksOf(nic)) {
    if (t.links[link].kind == LinkKind::Net) return link;
  }
  return -1;
}

// Same rule as nearestNic (best class, then bandwidth, then node order) over
// a precomputed row, so CPU ranks get a NIC too.
int bestNic(const PathMatrix& m, int row, size_t firstNic) {
  int best = -1;
  for (size_t k = firstNic; k < m.endpoints.size(); ++k) {
    const Path& p = m.at(row, static_cast<int>(k));
    if (p.cls == PathClass::None) continue;
    const Path* b = best < 0 ? nullptr : &m.at(row, best);
    if (b == nullptr || p.cls < b->cls || (p.cls == b->cls && p.bandwidth > b->bandwidth)) {
      best = static_cast<int>(k);
    }
  }
  return best;
}

bool isCpu(const Topology& t, int node) { return t.nodes[node].kind == NodeKind::Cpu; }

}  // namespace

RankGraph::RankGraph(const Topology& topology, std::vector<int> rankNodes, HopOptions options)
    : topology_(&topology), rankNodes_(std::move(rankNodes)) {
  if (!(options.memoryCopyBandwidth > 0) || !(options.messageLatency >= 0) ||
      !(options.channelBandwidth >= 0)) {
    raise(ErrorCode::InvalidArgument,
          "hop options need copy bandwidth > 0, latency >= 0 and channel bandwidth >= 0, got "
          "{}/{}/{}",
          options.memoryCopyBandwidth, options.messageLatency, options.channelBandwidth);
  }
  for (int r = 0; r < size(); ++r) {
    const int node = rankNodes_[r];
    if (node < 0 || node >= static_cast<int>(topology.nodes.size())) {
      raise(ErrorCode::InvalidArgument, "rank {} is on node {}, not a node of '{}'", r, node,
            topology.source);
    }
    const NodeKind kind = topology.nodes[node].kind;
    if (kind != NodeKind::Gpu && kind != NodeKind::Cpu) {
      raise(ErrorCode::InvalidArgument, "rank {} is on '{}', a {}; ranks run on a gpu or cpu", r,
            topology.nodes[node].id, nodeKindName(kind));
    }
  }
  buildHosts();
  buildLegs(options);
  buildHops(options);
  capChannels(options.channelBandwidth);
}

void RankGraph::buildHosts() {
  std::map<int, int> dense;
  rankHost_.resize(rankNodes_.size());
  island_ = nvlinkIslands(*topology_);
  for (int r = 0; r < size(); ++r) {
    const int host = island_[rankNodes_[r]];
    auto [it, fresh] = dense.emplace(host, static_cast<int>(hostRanks_.size()));
    if (fresh) hostRanks_.emplace_back();
    rankHost_[r] = it->second;
    hostRanks_[it->second].push_back(r);
  }
}

void RankGraph::buildLegs(const HopOptions& options) {
  const Topology& t = *topology_;
  nic_.assign(rankNodes_.size(), -1);
  exitLegs_.assign(rankNodes_.size(), Hop{});
  entryLegs_.assign(rankNodes_.size(), Hop{});
  if (hostCount() < 2) return;  // no rank leaves its host
  const std::vector<int> allNics = t.nodesOfKind(NodeKind::Nic);
  for (const std::vector<int>& ranks : hostRanks_) {
    const int island = island_[rankNodes_[ranks.front()]];
    std::vector<int> endpoints;
    endpoints.reserve(ranks.size());
    for (int r : ranks) endpoints.push_back(rankNodes_[r]);
    const size_t firstNic = endpoints.size();
    for (int nic : allNics) {
      if (island_[nic] == island) endpoints.push_back(nic);
    }
    const PathMatrix m = computePaths(t, endpoints);
    for (size_t i = 0; i < ranks.size(); ++i) {
      const int r = ranks[i];
      const int node = rankNodes_[r];
      const int row = static_cast<int>(i);
      int column = bestNic(m, row, firstNic);
      if (!isCpu(t, node) && column >= 0) {
        const int nic = nearestNic(t, node);
        const auto at =
            std::find(endpoints.begin() + static_cast<long>(firstNic), endpoints.end(), nic);
        if (at != endpoints.end()) column = static_cast<int>(at - endpoints.begin());
      }
      if (column < 0) continue;
      const int nic = endpoints[column];
      const int net = netLinkOf(t, nic);
      if (net < 0) continue;
      nic_[r] = nic;
      const Link& netLink = t.links[net];
      const int netOut = 2 * net + (netLink.a == nic ? 0 : 1);
      const int netIn = netOut ^ 1;
      const Path& out = m.at(row, column);
      const Path& in = m.at(column, row);
      Hop& exit = exitLegs_[r];
      exit.arcs = arcsAlong(t, node, out.links);
      exit.arcs.push_back(netOut);
      exit.bandwidth = std::min(out.bandwidth, netLink.bandwidth);
      exit.latency = out.latency + netLink.latency;
      exit.cls = PathClass::NET;
      Hop& entry = entryLegs_[r];
      entry.arcs = {netIn};
      const std::vector<int> inArcs = arcsAlong(t, nic, in.links);
      entry.arcs.insert(entry.arcs.end(), inArcs.begin(), inArcs.end());
      entry.bandwidth = std::min(in.bandwidth, netLink.bandwidth);
      entry.latency = in.latency + netLink.latency;
      entry.cls = PathClass::NET;
      if (isCpu(t, node)) {
        exit.bandwidth = std::min(exit.bandwidth, options.memoryCopyBandwidth);
        entry.bandwidth = std::min(entry.bandwidth, options.memoryCopyBandwidth);
      }
    }
  }
}

void RankGraph::buildHops(const HopOptions& options) {
  const Topology& t = *topology_;
  const int n = size();
  hops_.assign(static_cast<size_t>(n) * n, Hop{});
  for (const std::vector<int>& ranks : hostRanks_) {
    std::vector<int> nodes;
    nodes.reserve(ranks.size());
    for (int r : ranks) nodes.push_back(rankNodes_[r]);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const PathMatrix m = computePaths(t, nodes);
    auto column = [&](int node) {
      return static_cast<int>(std::lower_bound(nodes.begin(), nodes.end(), node) - nodes.begin());
    };
    for (int a : ranks) {
      for (int b : ranks) {
        if (a == b) continue;
        Hop& h = hops_[index(a, b)];
        h.latency = options.messageLatency;
        if (rankNodes_[a] == rankNodes_[b]) {
          h.bandwidth = options.memoryCopyBandwidth;
          h.cls = PathClass::Self;
          continue;
        }
        const Path& p = m.at(column(rankNodes_[a]), column(rankNodes_[b]));
        if (p.cls == PathClass::None || !(p.bandwidth > 0)) {
          raise(ErrorCode::InvalidArgument,
                "ranks {} ('{}') and {} ('{}') share a host but no path", a,
                t.nodes[rankNodes_[a]].id, b, t.nodes[rankNodes_[b]].id);
        }
        h.bandwidth = p.bandwidth;
        if (isCpu(t, rankNodes_[a]) || isCpu(t, rankNodes_[b])) {
          h.bandwidth = std::min(h.bandwidth, options.memoryCopyBandwidth);
        }
        h.latency += p.latency;
        h.cls = p.cls;
        h.arcs = arcsAlong(t, rankNodes_[a], p.links);
      }
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (hostOf(a) == hostOf(b)) continue;
      const Hop& exit = exitLegs_[a];
      const Hop& entry = entryLegs_[b];
      Hop& h = hops_[index(a, b)];
      h.cls = PathClass::NET;
      h.latency = exit.latency + entry.latency + options.messageLatency;
      h.bandwidth = std::min(exit.bandwidth, entry.bandwidth);
      h.arcs = exit.arcs;
      h.arcs.insert(h.arcs.end(), entry.arcs.begin(), entry.arcs.end());
    }
  }
}

// A channel between GPUs is one thread block's work, inside an island or
// across the network; CPU ranks' hops are memory copies, bounded already.
void RankGraph::capChannels(double channelBandwidth) {
  const Topology& t = *topology_;
  for (int a = 0; a < size(); ++a) {
    if (isCpu(t, rankNodes_[a])) continue;
    exitLegs_[a].channelBandwidth = entryLegs_[a].channelBandwidth = channelBandwidth;
    for (int b = 0; b < size(); ++b) {
      if (b != a && rankNodes_[b] != rankNodes_[a] && !isCpu(t, rankNodes_[b])) {
        hops_[index(a, b)].channelBandwidth = channelBandwidth;
      }
    }
  }
}

int RankGraph::arcCapacity(int arc, double channelBandwidth) const {
  const int links = linkCapacity(arc);
  // Channels slower than the link: as many as it carries at their speed.
  if (channelBandwidth <= 0 || links == std::numeric_limits<int>::max()) return links;
  const double fit = std::floor(arcBandwidth(arc) / channelBandwidth * (1 + 1e-9));
  return std::max(links, static_cast<int>(std::min(fit, 1e6)));
}

int RankGraph::linkCapacity(int arc) const {
  const Link& link = topology_->links[arc / 2];
  if (link.kind != LinkKind::NvLink) return 1;
  // Hops through NVSwitches spread over every switch plane (their bandwidth
  // is the NVLink flow), so one plane's lanes do not bound them; sharing
  // still divides their bandwidth.
  const auto& nodes = topology_->nodes;
  if (nodes[link.a].kind == NodeKind::NvSwitch || nodes[link.b].kind == NodeKind::NvSwitch) {
    return std::numeric_limits<int>::max();
  }
  return std::max(1, link.lanes);
}

std::vector<int> defaultRankNodes(const Topology& topology, int nranks) {
  std::vector<int> devices = topology.nodesOfKind(NodeKind::Gpu);
  std::stable_sort(devices.begin(), devices.end(), [&](int a, int b) {
    const int ra = topology.nodes[a].rank;
    const int rb = topology.nodes[b].rank;
    return (ra < 0 ? std::numeric_limits<int>::max() : ra) <
           (rb < 0 ? std::numeric_limits<int>::max() : rb);
  });
  if (devices.empty()) devices = topology.nodesOfKind(NodeKind::Cpu);
  if (devices.empty()) {
    raise(ErrorCode::InvalidArgument, "topology '{}' has no gpu or cpu to place ranks on",
          topology.source);
  }
  const size_t count = nranks > 0 ? static_cast<size_t>(nranks) : devices.size();
  std::vector<int> nodes(count);
  for (size_t r = 0; r < count; ++r) {
    // Blocks keep neighbouring ranks on one device, or the first `count` devices.
    const size_t device = count <= devices.size() ? r : r * devices.size() / count;
    nodes[r] = devices[device];
  }
  return nodes;
}

namespace {

// ------------------------------------------------------------------ scoring

// How good one hop is; a ring is judged by its hops' keys, worst first.
struct HopKey {
  double bandwidth;
  int load;  // most hops on any of its links: at equal speed, fresh links leave room
  PathClass cls;
  double latency;
};

bool nearlyEqual(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(a, b); }

// Strict "a is worse than b".
bool worse(const HopKey& a, const HopKey& b) {
  if (!nearlyEqual(a.bandwidth, b.bandwidth)) return a.bandwidth < b.bandwidth;
  if (a.load != b.load) return a.load > b.load;
  if (a.cls != b.cls) return a.cls > b.cls;
  if (!nearlyEqual(a.latency, b.latency)) return a.latency > b.latency;
  return false;
}

using Score = std::vector<HopKey>;  // sorted worst first

PathClass worstClass(const Score& s) {
  PathClass worst = PathClass::Self;
  for (const HopKey& h : s) worst = std::max(worst, h.cls);
  return worst;
}

// Strict "a is a better ring than b"; an empty score is no ring at all. The
// bottleneck first; at an equal bottleneck the ring whose worst hop is of the
// better class (NVLink only before one crossing a socket), since the other
// hops' nominal speed does not make the ring faster and PCIe hops share their
// switches and socket links; then hop by hop, worst first.
bool better(const Score& a, const Score& b) {
  if (b.empty()) return !a.empty();
  if (a.empty()) return false;
  if (!nearlyEqual(a.front().bandwidth, b.front().bandwidth)) {
    return a.front().bandwidth > b.front().bandwidth;
  }
  const PathClass classA = worstClass(a);
  const PathClass classB = worstClass(b);
  if (classA != classB) return classA < classB;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (worse(b[i], a[i])) return true;
    if (worse(a[i], b[i])) return false;
  }
  return false;
}

// Link loads in ring hops per arc; the shared-bandwidth rule of ring_search.h.
class Loads {
 public:
  explicit Loads(const RankGraph& g) : g_(g), count_(2 * g.topology().links.size(), 0) {}

  void add(const Hop& h, int delta) {
    for (int arc : h.arcs) count_[arc] += delta;
  }
  bool fits(const Hop& h) const {
    for (int arc : h.arcs) {
      if (count_[arc] + 1 > g_.arcCapacity(arc, h.channelBandwidth)) return false;
    }
    return true;
  }
  double shared(const Hop& h, bool perChannel = true) const {
    double factor = 1.0;
    for (int arc : h.arcs) {
      const int k = count_[arc];
      if (k <= 1) continue;
      const double ratio = std::max(1.0, g_.arcBandwidth(arc) / h.bandwidth);
      factor = std::min(factor, std::min(1.0, ratio / k));
    }
    const double links = h.bandwidth * factor;
    return perChannel && h.channelBandwidth > 0 ? std::min(links, h.channelBandwidth) : links;
  }
  HopKey key(const Hop& h) const {
    int load = 0;
    for (int arc : h.arcs) load = std::max(load, count_[arc]);
    return {shared(h), load, h.cls, h.latency};
  }

 private:
  const RankGraph& g_;
  std::vector<int> count_;
};

Score scoreOf(const std::vector<const Hop*>& hops, const Loads& loads) {
  Score s;
  s.reserve(hops.size());
  for (const Hop* h : hops) s.push_back(loads.key(*h));
  std::sort(s.begin(), s.end(), [](const HopKey& a, const HopKey& b) { return worse(a, b); });
  return s;
}

// ------------------------------------------------------------------ routes

// One route through a host's ranks: from `start` through every member to
// `end`, or back to `start` when they are equal (a cycle). `legs` are hops
// the route always carries (a host's NIC legs).
struct Route {
  std::vector<int> members;
  int start = -1;
  int end = -1;
  std::vector<const Hop*> legs;
};

struct Constraints {
  bool enforceCapacity = false;
  PathClass worstAllowed = PathClass::None;
};

struct Found {
  std::vector<int> order;
  Score score;
};

class RouteSearch {
 public:
  RouteSearch(const RankGraph& g, const Route& route, Loads& loads, Constraints c)
      : g_(g), route_(route), loads_(loads), c_(c) {}

  std::optional<Found> exact() {
    if (!begin()) return std::nullopt;
    visited_.assign(g_.size(), false);
    visited_[route_.start] = true;
    dfs();
    finish();
    return best_.score.empty() && !trivial() ? std::nullopt : std::optional<Found>(best_);
  }

  std::optional<Found> heuristic(long budget) {
    if (!begin()) return std::nullopt;
    std::vector<int> order = greedy();
    finish();
    if (order.empty()) return std::nullopt;
    Found current{order, evaluate(order)};
    if (current.score.empty() && !trivial()) return std::nullopt;
    improve(current, budget);
    return current;
  }

 private:
  bool cycle() const { return route_.start == route_.end; }
  bool trivial() const { return route_.members.size() == 1 && route_.legs.empty(); }
  size_t length() const { return route_.members.size(); }

  bool allowed(const Hop& h) const {
    if (c_.enforceCapacity && !loads_.fits(h)) return false;
    return c_.worstAllowed == PathClass::None || h.cls <= c_.worstAllowed;
  }

  bool push(const Hop& h) {
    if (!allowed(h)) return false;
    loads_.add(h, 1);
    hops_.push_back(&h);
    return true;
  }
  void pop() {
    loads_.add(*hops_.back(), -1);
    hops_.pop_back();
  }

  // Pushes the legs; false when they do not fit.
  bool begin() {
    for (const Hop* leg : route_.legs) {
      if (!push(*leg)) {
        finish();
        return false;
      }
    }
    order_ = {route_.start};
    return true;
  }
  void finish() {
    while (!hops_.empty()) pop();
  }

  double partialMin() const {
    double m = std::numeric_limits<double>::infinity();
    for (const Hop* h : hops_) m = std::min(m, loads_.shared(*h));
    return m;
  }

  void consider() {
    Score s = scoreOf(hops_, loads_);
    if (better(s, best_.score) || (best_.order.empty())) best_ = {order_, std::move(s)};
  }

  void dfs() {
    const int at = order_.back();
    if (order_.size() == length()) {
      if (cycle() && length() > 1) {
        if (!push(g_.hop(at, route_.start))) return;
        consider();
        pop();
      } else if (at == route_.end) {
        consider();
      }
      return;
    }
    const bool lastSlot = order_.size() + 1 == length();
    for (int next : route_.members) {
      if (visited_[next]) continue;
      if (!cycle() && (next == route_.end) != lastSlot) continue;
      if (!push(g_.hop(at, next))) continue;
      if (!best_.score.empty() && partialMin() < best_.score.front().bandwidth &&
          !nearlyEqual(partialMin(), best_.score.front().bandwidth)) {
        pop();
        continue;
      }
      visited_[next] = true;
      order_.push_back(next);
      dfs();
      order_.pop_back();
      visited_[next] = false;
      pop();
    }
  }

  // Nearest-best construction; empty when it runs into a dead end.
  std::vector<int> greedy() {
    std::vector<bool> visited(g_.size(), false);
    visited[route_.start] = true;
    std::vector<int> order = {route_.start};
    std::vector<const Hop*> pushed;
    while (order.size() < length()) {
      const bool lastSlot = order.size() + 1 == length();
      int pick = -1;
      HopKey pickKey{};
      for (int next : route_.members) {
        if (visited[next] || (!cycle() && (next == route_.end) != lastSlot)) continue;
        const Hop& h = g_.hop(order.back(), next);
        if (!allowed(h)) continue;
        const HopKey k = loads_.key(h);
        if (pick < 0 || worse(pickKey, k)) {
          pick = next;
          pickKey = k;
        }
      }
      if (pick < 0) break;
      const Hop& h = g_.hop(order.back(), pick);
      loads_.add(h, 1);
      pushed.push_back(&h);
      visited[pick] = true;
      order.push_back(pick);
    }
    for (const Hop* h : pushed) loads_.add(*h, -1);
    return order.size() == length() ? order : std::vector<int>{};
  }

  // The score of a complete order, or empty when a hop breaks the constraints.
  Score evaluate(const std::vector<int>& order) {
    std::vector<const Hop*> hops;
    for (size_t i = 0; i + 1 < order.size(); ++i) hops.push_back(&g_.hop(order[i], order[i + 1]));
    if (cycle() && order.size() > 1) hops.push_back(&g_.hop(order.back(), order.front()));
    hops.insert(hops.end(), route_.legs.begin(), route_.legs.end());
    size_t added = 0;
    bool ok = true;
    for (const Hop* h : hops) {
      if (!allowed(*h)) {
        ok = false;
        break;
      }
      loads_.add(*h, 1);
      ++added;
    }
    Score s = ok ? scoreOf(hops, loads_) : Score{};
    for (size_t i = 0; i < added; ++i) loads_.add(*hops[i], -1);
    return s;
  }

  // Segment reversals (2-opt) while they improve the score and work is left.
  void improve(Found& current, long budget) {
    const size_t n = current.order.size();
    const size_t lastMovable = cycle() ? n - 1 : n - 2;
    bool improved = true;
    while (improved && budget > 0) {
      improved = false;
      for (size_t i = 1; i < lastMovable && budget > 0; ++i) {
        for (size_t j = i + 1; j <= lastMovable && budget > 0; ++j) {
          std::vector<int> trial = current.order;
          std::reverse(trial.begin() + static_cast<long>(i),
                       trial.begin() + static_cast<long>(j) + 1);
          budget -= static_cast<long>(n);
          Score s = evaluate(trial);
          if (better(s, current.score)) {
            current = {std::move(trial), std::move(s)};
            improved = true;
          }
        }
      }
    }
  }

  const RankGraph& g_;
  const Route& route_;
  Loads& loads_;
  Constraints c_;
  std::vector<const Hop*> hops_;
  std::vector<int> order_;
  std::vector<bool> visited_;
  Found best_;
};

constexpr long kImproveBudget = 20'000'000;  // hop evaluations per route
constexpr long kPackingBudget = 2'000'000;   // ring packing steps per search

std::optional<Found> bestRoute(const RankGraph& g, const Route& route, Loads& loads, Constraints c,
                               int exactLimit) {
  RouteSearch search(g, route, loads, c);
  if (static_cast<int>(route.members.size()) <= exactLimit) return search.exact();
  return search.heuristic(kImproveBudget);
}

// ------------------------------------------------------------------- rings

// One ring over a single host: a cycle from the host's first rank.
std::optional<std::vector<int>> hostCycle(const RankGraph& g, Loads& loads, Constraints c,
                                          int exactLimit) {
  const std::vector<int>& ranks = g.ranksOn(0);
  const Route route{ranks, ranks.front(), ranks.front(), {}};
  auto found = bestRoute(g, route, loads, c, exactLimit);
  if (!found) return std::nullopt;
  return found->order;
}

// How many entry/exit pairs with the best NIC legs get a full path search.
constexpr int kPairsPerHost = 6;

// One host's part of a multi-host ring: the best path from an entry rank to
// an exit rank, legs included. Pairs are tried best legs first.
std::optional<Found> hostSegment(const RankGraph& g, int host, Loads& loads, Constraints c,
                                 int exactLimit) {
  const std::vector<int>& ranks = g.ranksOn(host);
  struct Pair {
    int entry, exit;
    Score legs;
  };
  std::vector<Pair> pairs;
  for (int s : ranks) {
    for (int e : ranks) {
      if (s == e && ranks.size() > 1) continue;
      const Hop& in = g.entryLeg(s);
      const Hop& out = g.exitLeg(e);
      if (!(in.bandwidth > 0) || !(out.bandwidth > 0)) continue;
      pairs.push_back({s, e, scoreOf({&in, &out}, loads)});
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const Pair& a, const Pair& b) { return better(a.legs, b.legs); });
  std::optional<Found> best;
  int triedAtBest = 0;
  for (const Pair& p : pairs) {
    if (best && worse(p.legs.front(), best->score.front())) break;
    if (best && ++triedAtBest > kPairsPerHost) break;
    const Route route{ranks, p.entry, p.exit, {&g.entryLeg(p.entry), &g.exitLeg(p.exit)}};
    auto found = bestRoute(g, route, loads, c, exactLimit);
    if (found && (!best || better(found->score, best->score))) best = std::move(found);
  }
  return best;
}

std::optional<std::vector<int>> multiHostRing(const RankGraph& g, Loads& loads, Constraints c,
                                              int exactLimit) {
  std::vector<int> order;
  for (int host = 0; host < g.hostCount(); ++host) {
    auto segment = hostSegment(g, host, loads, c, exactLimit);
    if (!segment) return std::nullopt;
    order.insert(order.end(), segment->order.begin(), segment->order.end());
  }
  return order;
}

std::vector<const Hop*> hopsOf(const RankGraph& g, const std::vector<int>& order) {
  std::vector<const Hop*> hops;
  if (order.size() < 2) return hops;
  for (size_t p = 0; p < order.size(); ++p) {
    hops.push_back(&g.hop(order[p], order[(p + 1) % order.size()]));
  }
  return hops;
}

double total(const std::vector<std::vector<double>>& shared) {
  double sum = 0;
  for (const auto& ring : shared) {
    if (!ring.empty()) sum += *std::min_element(ring.begin(), ring.end());
  }
  return sum;
}

}  // namespace

std::vector<std::vector<double>> sharedHopBandwidths(const RankGraph& graph,
                                                     const std::vector<std::vector<int>>& orders,
                                                     bool perChannel) {
  Loads loads(graph);
  for (const auto& order : orders) {
    for (const Hop* h : hopsOf(graph, order)) loads.add(*h, 1);
  }
  std::vector<std::vector<double>> out;
  for (const auto& order : orders) {
    auto& ring = out.emplace_back();
    for (const Hop* h : hopsOf(graph, order)) ring.push_back(loads.shared(*h, perChannel));
  }
  return out;
}

double ringBottleneck(const RankGraph& graph, const std::vector<int>& order) {
  const auto shared = sharedHopBandwidths(graph, {order});
  return shared.front().empty() ? 0.0
                                : *std::min_element(shared.front().begin(), shared.front().end());
}

std::vector<Ring> searchRings(const RankGraph& graph, const RingSearchOptions& options) {
  if (graph.size() == 0) raise(ErrorCode::InvalidArgument, "ring search over zero ranks");
  if (options.maxRings < 1 || options.exactLimit < 1) {
    raise(ErrorCode::InvalidArgument,
          "ring search needs maxRings >= 1 and exactLimit >= 1, got {}/{}", options.maxRings,
          options.exactLimit);
  }
  Loads loads(graph);
  std::vector<std::vector<int>> orders;
  PathClass firstWorst = PathClass::None;
  double bestTotal = 0;
  for (int k = 0; k < options.maxRings; ++k) {
    const Constraints c{k > 0, k > 0 ? firstWorst : PathClass::None};
    auto order = graph.hostCount() == 1 ? hostCycle(graph, loads, c, options.exactLimit)
                                        : multiHostRing(graph, loads, c, options.exactLimit);
    if (!order) break;
    orders.push_back(*order);
    const double sum = total(sharedHopBandwidths(graph, orders));
    if (k > 0 && !(sum > bestTotal * (1 + 1e-9))) {
      orders.pop_back();
      break;
    }
    bestTotal = sum;
    for (const Hop* h : hopsOf(graph, orders.back())) loads.add(*h, 1);
    if (k == 0) {
      firstWorst = PathClass::Self;
      for (const Hop* h : hopsOf(graph, orders.back())) firstWorst = std::max(firstWorst, h->cls);
    }
    if (graph.size() < 2) break;  // a lone rank has one trivial ring
  }
  if (!orders.empty() && graph.hostCount() == 1 && graph.size() <= options.exactLimit &&
      static_cast<int>(orders.size()) < options.maxRings) {
    // Ring after ring can strand links a whole set would use (full meshes).
    const double bottleneck = ringBottleneck(graph, orders.front());
    auto usable = [&](const Hop& h) {
      return h.cls <= firstWorst &&
             (h.bandwidth >= bottleneck || nearlyEqual(h.bandwidth, bottleneck));
    };
    auto packed = packDisjointRings(
        graph, usable, {static_cast<int>(orders.size()) + 1, options.maxRings, kPackingBudget});
    if (!packed.empty() && total(sharedHopBandwidths(graph, packed)) > bestTotal * (1 + 1e-9)) {
      orders = std::move(packed);
    }
  }
  const auto shared = sharedHopBandwidths(graph, orders);
  std::vector<Ring> rings;
  for (size_t k = 0; k < orders.size(); ++k) {
    Ring ring;
    ring.order = orders[k];
    if (!shared[k].empty()) ring.bandwidth = *std::min_element(shared[k].begin(), shared[k].end());
    for (const Hop* h : hopsOf(graph, orders[k])) ring.worst = std::max(ring.worst, h->cls);
    rings.push_back(std::move(ring));
  }
  return rings;
}

}  // namespace loom::topo
