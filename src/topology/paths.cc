#include "topology/paths.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>

#include "core/error.h"

namespace loom::topo {
namespace {

constexpr std::array<const char*, 9> kPathClassNames = {"X",    "NVL", "PIX", "PXB", "PHB",
                                                        "NODE", "SYS", "NET", "-"};

// Which links a route may take. Two endpoints of one host talk inside it, so
// their routes never leave through a NIC even when the network is wider than
// the socket interconnect; that is what SYS means.
struct Rules {
  bool crossHosts = false;
  bool nvlinkOnly = false;
};

struct Hop {
  int link;
  int to;
};

// Routes over one topology. Widest path = highest bottleneck bandwidth, then
// fewest hops. A (bottleneck, hops) label is not monotone under extension, so
// Dijkstra cannot optimise both at once; instead a widest-path pass fixes each
// target's bottleneck W, then a BFS over links of at least W finds the fewest
// hops (one BFS per distinct W, and a topology has few distinct bandwidths).
class Router {
 public:
  explicit Router(const Topology& t) : t_(t), adjacency_(t.nodes.size()) {
    for (int i = 0; i < static_cast<int>(t.links.size()); ++i) {
      const Link& l = t.links[i];
      if (l.kind == LinkKind::Host) continue;  // only says where a cpu lives; never a route
      adjacency_[l.a].push_back({i, l.b});
      adjacency_[l.b].push_back({i, l.a});
    }
  }

  std::vector<Path> routes(int source, const std::vector<int>& targets, Rules rules) const {
    const std::vector<double> widest = widestBottlenecks(source, rules);
    std::vector<Path> out(targets.size());
    std::vector<double> thresholds;
    for (int t : targets) {
      if (widest[t] > 0) thresholds.push_back(widest[t]);
    }
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
    for (double w : thresholds) {
      const std::vector<int> parentLink = fewestHops(source, w, rules);
      for (size_t k = 0; k < targets.size(); ++k) {
        if (widest[targets[k]] == w) out[k] = tracePath(source, targets[k], parentLink);
      }
    }
    return out;
  }

  // Total NVLink bandwidth between two GPUs: a max flow over NVLinks and
  // NVSwitches (other GPUs do not forward). Traffic between GPUs on several
  // NVSwitch planes spreads over all of them, so one route's bottleneck would
  // undercount it (DGX-H100: 5+4+4+5 links over four switches = 450 GB/s).
  double nvlinkFlow(int from, int to) const {
    // Residual capacity per link and direction (0: a -> b, 1: b -> a).
    std::vector<std::array<double, 2>> residual(t_.links.size(), {0.0, 0.0});
    for (size_t i = 0; i < t_.links.size(); ++i) {
      if (t_.links[i].kind == LinkKind::NvLink)
        residual[i] = {t_.links[i].bandwidth, t_.links[i].bandwidth};
    }
    auto dirFrom = [&](int link, int node) { return t_.links[link].a == node ? 0 : 1; };
    double total = 0;
    constexpr double kEpsilon = 1e-9;
    for (;;) {
      std::vector<int> parentLink(t_.nodes.size(), -1);
      std::deque<int> queue{from};
      std::vector<bool> seen(t_.nodes.size(), false);
      seen[from] = true;
      while (!queue.empty() && !seen[to]) {
        const int v = queue.front();
        queue.pop_front();
        if (v != from && t_.nodes[v].kind != NodeKind::NvSwitch) continue;
        for (const Hop& hop : adjacency_[v]) {
          if (seen[hop.to] || t_.links[hop.link].kind != LinkKind::NvLink) continue;
          if (residual[hop.link][dirFrom(hop.link, v)] <= kEpsilon) continue;
          seen[hop.to] = true;
          parentLink[hop.to] = hop.link;
          queue.push_back(hop.to);
        }
      }
      if (!seen[to]) return total;
      double push = std::numeric_limits<double>::infinity();
      for (int v = to; v != from;) {
        const int link = parentLink[v];
        const int u = t_.links[link].a == v ? t_.links[link].b : t_.links[link].a;
        push = std::min(push, residual[link][dirFrom(link, u)]);
        v = u;
      }
      for (int v = to; v != from;) {
        const int link = parentLink[v];
        const int u = t_.links[link].a == v ? t_.links[link].b : t_.links[link].a;
        residual[link][dirFrom(link, u)] -= push;
        residual[link][dirFrom(link, v)] += push;
        v = u;
      }
      total += push;
    }
  }

 private:
  bool usable(const Link& link, Rules rules) const {
    if (rules.nvlinkOnly) return link.kind == LinkKind::NvLink;
    return rules.crossHosts || link.kind != LinkKind::Net;
  }

  // GPUs move their own data, not others': a route may end at a GPU but never
  // pass through one (host nodes are unreachable: host links are skipped).
  bool transit(int node, int source) const {
    return node == source || t_.nodes[node].kind != NodeKind::Gpu;
  }

  std::vector<double> widestBottlenecks(int source, Rules rules) const {
    std::vector<double> best(t_.nodes.size(), 0.0);
    std::priority_queue<std::pair<double, int>> queue;
    best[source] = std::numeric_limits<double>::infinity();
    queue.push({best[source], source});
    while (!queue.empty()) {
      const auto [width, v] = queue.top();
      queue.pop();
      if (width < best[v] || !transit(v, source)) continue;
      for (const Hop& hop : adjacency_[v]) {
        const Link& link = t_.links[hop.link];
        if (!usable(link, rules)) continue;
        const double through = std::min(width, link.bandwidth);
        if (through > best[hop.to]) {
          best[hop.to] = through;
          queue.push({through, hop.to});
        }
      }
    }
    return best;
  }

  /// Parent link of each node on a fewest-hop tree over links >= minBandwidth.
  std::vector<int> fewestHops(int source, double minBandwidth, Rules rules) const {
    std::vector<int> parentLink(t_.nodes.size(), -1);
    std::vector<bool> seen(t_.nodes.size(), false);
    std::deque<int> queue{source};
    seen[source] = true;
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop_front();
      if (!transit(v, source)) continue;
      for (const Hop& hop : adjacency_[v]) {
        const Link& link = t_.links[hop.link];
        if (seen[hop.to] || !usable(link, rules) || link.bandwidth < minBandwidth) continue;
        seen[hop.to] = true;
        parentLink[hop.to] = hop.link;
        queue.push_back(hop.to);
      }
    }
    return parentLink;
  }

  Path tracePath(int source, int target, const std::vector<int>& parentLink) const {
    Path path;
    for (int v = target; v != source;) {
      const int link = parentLink[v];
      path.links.push_back(link);
      v = t_.other(t_.links[link], v);
    }
    std::reverse(path.links.begin(), path.links.end());
    path.bandwidth = std::numeric_limits<double>::infinity();
    for (int link : path.links) {
      path.bandwidth = std::min(path.bandwidth, t_.links[link].bandwidth);
      path.latency += t_.links[link].latency;
    }
    path.cls = classify(source, path.links);
    return path;
  }

  PathClass classify(int source, const std::vector<int>& links) const {
    bool net = false, smp = false, pcie = false, throughCpu = false, betweenBridges = false;
    int switches = 0;
    int at = source;
    for (size_t k = 0; k < links.size(); ++k) {
      const Link& link = t_.links[links[k]];
      net |= link.kind == LinkKind::Net;
      smp |= link.kind == LinkKind::Smp;
      pcie |= link.kind == LinkKind::Pcie || link.kind == LinkKind::NvLinkC2C;
      at = t_.other(link, at);
      if (k + 1 == links.size()) break;  // the destination is no hop
      if (t_.nodes[at].kind == NodeKind::Cpu) {
        throughCpu = true;
        // In one tree and out of another: the same host bridge only where
        // both name it (an unnamed tree is a bridge of its own). A GPU on
        // NVLink-C2C is its CPU's own: through it is one bridge.
        const Link& out = t_.links[links[k + 1]];
        const bool c2c = link.kind == LinkKind::NvLinkC2C || out.kind == LinkKind::NvLinkC2C;
        betweenBridges |= !c2c && (link.bridge.empty() || link.bridge != out.bridge);
      }
      switches += t_.nodes[at].kind == NodeKind::PciSwitch;
    }
    if (net) return PathClass::NET;
    if (smp) return PathClass::SYS;
    if (betweenBridges) return PathClass::NODE;
    if (throughCpu) return PathClass::PHB;
    if (switches > 1) return PathClass::PXB;
    if (pcie) return PathClass::PIX;
    return PathClass::NVL;
  }

  const Topology& t_;
  std::vector<std::vector<Hop>> adjacency_;
};

bool sameHost(const Topology& t, int a, int b) {
  return t.nodes[a].host >= 0 && t.nodes[a].host == t.nodes[b].host;
}

// NVLink reaches across hosts only through NvSwitches of no host; a topology
// without them never looks for such paths.
bool hasSharedSwitches(const Topology& t) {
  return std::any_of(t.nodes.begin(), t.nodes.end(),
                     [](const Node& n) { return n.kind == NodeKind::NvSwitch && n.host < 0; });
}

bool bothGpus(const Topology& t, int a, int b) {
  return t.nodes[a].kind == NodeKind::Gpu && t.nodes[b].kind == NodeKind::Gpu;
}

// All paths from one endpoint: same-host targets inside the host, others over
// the network, and GPU pairs joined by NVLink on NVLink whatever a PCIe route's
// nominal width: a PCIe route shares its switch uplinks and the socket link
// with every other pair, while NVLink is the pair's own (NCCL prefers NVL by
// class too). One NVLink 3 link (25 GB/s) thus beats a gen4 x16 route (31.5).
// GPUs of two hosts in one NVLink domain (shared NvSwitches) talk over NVLink
// too: the network is only between domains.
std::vector<Path> pathsFrom(const Router& router, const Topology& t, int source,
                            const std::vector<int>& targets) {
  std::vector<int> local, remote;
  std::vector<size_t> localAt, remoteAt;
  for (size_t k = 0; k < targets.size(); ++k) {
    if (targets[k] == source) continue;
    const bool here = sameHost(t, source, targets[k]);
    (here ? local : remote).push_back(targets[k]);
    (here ? localAt : remoteAt).push_back(k);
  }
  std::vector<Path> out(targets.size());
  for (size_t k = 0; k < targets.size(); ++k) {
    if (targets[k] == source) out[k].cls = PathClass::Self;
  }
  std::vector<Path> near = router.routes(source, local, {false, false});
  std::vector<Path> far = router.routes(source, remote, {true, false});
  const bool domains = hasSharedSwitches(t);
  for (size_t k = 0; k < far.size(); ++k) {
    out[remoteAt[k]] = std::move(far[k]);
    if (!domains || !bothGpus(t, source, remote[k])) continue;
    const double flow = router.nvlinkFlow(source, remote[k]);
    if (flow <= 0) continue;
    out[remoteAt[k]] = std::move(router.routes(source, {remote[k]}, {true, true}).front());
    out[remoteAt[k]].bandwidth = flow;
  }
  for (size_t k = 0; k < near.size(); ++k) {
    Path& path = out[localAt[k]];
    path = std::move(near[k]);
    if (!bothGpus(t, source, local[k])) continue;
    const double flow = router.nvlinkFlow(source, local[k]);
    if (flow <= 0) continue;
    path = std::move(router.routes(source, {local[k]}, {false, true}).front());
    path.bandwidth = flow;
  }
  return out;
}

void checkEndpoints(const Topology& t, const std::vector<int>& endpoints) {
  for (int e : endpoints) {
    if (e < 0 || e >= static_cast<int>(t.nodes.size())) {
      raise(ErrorCode::InvalidArgument, "path endpoint {} is not a node index (topology has {})", e,
            t.nodes.size());
    }
  }
}

}  // namespace

const char* pathClassName(PathClass cls) {
  const auto i = static_cast<size_t>(cls);
  return i < kPathClassNames.size() ? kPathClassNames[i] : "?";
}

PathMatrix computePaths(const Topology& topology, const std::vector<int>& endpoints) {
  checkEndpoints(topology, endpoints);
  const Router router(topology);
  PathMatrix matrix;
  matrix.endpoints = endpoints;
  matrix.paths.reserve(endpoints.size());
  for (int source : endpoints) {
    matrix.paths.push_back(pathsFrom(router, topology, source, endpoints));
  }
  return matrix;
}

namespace {

// The NICs of `gpu`'s host nearest to it: best path class, then bandwidth.
std::vector<int> nearestNics(const Router& router, const Topology& topology, int gpu) {
  std::vector<int> nics;
  for (int nic : topology.nodesOfKind(NodeKind::Nic)) {
    if (sameHost(topology, gpu, nic)) nics.push_back(nic);
  }
  const std::vector<Path> paths = pathsFrom(router, topology, gpu, nics);
  const Path* nearest = nullptr;
  for (const Path& p : paths) {
    if (p.cls == PathClass::None) continue;  // a NIC it cannot reach is no choice
    if (nearest == nullptr || p.cls < nearest->cls ||
        (p.cls == nearest->cls && p.bandwidth > nearest->bandwidth)) {
      nearest = &p;
    }
  }
  std::vector<int> best;
  for (size_t k = 0; k < nics.size() && nearest != nullptr; ++k) {
    if (paths[k].cls == nearest->cls &&
        std::abs(paths[k].bandwidth - nearest->bandwidth) <= 1e-9 * nearest->bandwidth) {
      best.push_back(nics[k]);
    }
  }
  return best;
}

}  // namespace

int nearestNic(const Topology& topology, int gpu) {
  checkEndpoints(topology, {gpu});
  const Router router(topology);
  const std::vector<int> nics = nearestNics(router, topology, gpu);
  if (nics.size() < 2) return nics.empty() ? -1 : nics.front();
  // Equally near NICs (two per Grace CPU on a GB200 tray) are dealt out in
  // GPU order, so the GPUs of one CPU do not all crowd onto its first NIC.
  int earlier = 0;
  for (int other : topology.nodesOfKind(NodeKind::Gpu)) {
    if (other == gpu) break;
    if (sameHost(topology, gpu, other) && nearestNics(router, topology, other) == nics) ++earlier;
  }
  return nics[static_cast<size_t>(earlier) % nics.size()];
}

}  // namespace loom::topo
