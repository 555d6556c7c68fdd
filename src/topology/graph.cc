#include "topology/graph.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/error.h"

namespace loom::topo {
namespace {

constexpr std::array<const char*, 7> kNodeKindNames = {"host", "cpu",      "pci",   "gpu",
                                                       "nic",  "nvswitch", "fabric"};
constexpr std::array<const char*, 6> kLinkKindNames = {"host",   "smp", "pcie",
                                                       "nvlink", "net", "nvlink-c2c"};

template <typename Kind, size_t N>
std::optional<Kind> kindFromName(const std::array<const char*, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<Kind>(i);
  }
  return std::nullopt;
}

bool isOneOf(NodeKind kind, std::initializer_list<NodeKind> kinds) {
  for (NodeKind k : kinds) {
    if (k == kind) return true;
  }
  return false;
}

// Union-find over node indices for the PCIe forest check; each root remembers
// the Cpu of its component (or -1) so two sockets joined by PCIe are caught
// at the link that joins them.
class PcieForest {
 public:
  explicit PcieForest(const Topology& t) : parent_(t.nodes.size()), cpu_(t.nodes.size(), -1) {
    for (size_t i = 0; i < parent_.size(); ++i) {
      parent_[i] = static_cast<int>(i);
      if (t.nodes[i].kind == NodeKind::Cpu) cpu_[i] = static_cast<int>(i);
    }
  }
  int root(int x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  int cpuOf(int x) { return cpu_[root(x)]; }
  /// Joins the components of a and b; false when they already were one.
  bool join(int a, int b) {
    a = root(a);
    b = root(b);
    if (a == b) return false;
    parent_[b] = a;
    if (cpu_[a] < 0) cpu_[a] = cpu_[b];
    return true;
  }

 private:
  std::vector<int> parent_;
  std::vector<int> cpu_;
};

class Checker {
 public:
  explicit Checker(const Topology& t) : t_(t) {}

  std::optional<TopologyProblem> run() {
    if (auto p = checkNodes()) return p;
    if (auto p = checkLinks()) return p;
    return checkStructure();
  }

 private:
  const std::string& id(int node) const { return t_.nodes[node].id; }

  std::string describe(int link) const {
    const Link& l = t_.links[link];
    const int n = static_cast<int>(t_.nodes.size());
    auto end = [&](int x) { return x >= 0 && x < n ? id(x) : fmt::format("#{}", x); };
    return fmt::format("link {} ({} - {}, {})", link, end(l.a), end(l.b), linkKindName(l.kind));
  }

  TopologyProblem nodeProblem(int node, std::string message) const {
    return {node, -1, fmt::format("node '{}': {}", id(node), message)};
  }
  TopologyProblem linkProblem(int link, std::string message) const {
    return {-1, link, fmt::format("{}: {}", describe(link), message)};
  }

  std::optional<TopologyProblem> checkNodes() {
    const int n = static_cast<int>(t_.nodes.size());
    std::unordered_map<std::string_view, int> ids;
    std::unordered_map<int, int> ranks;
    ids.reserve(t_.nodes.size());
    for (int i = 0; i < n; ++i) {
      const Node& node = t_.nodes[i];
      if (node.id.empty()) return TopologyProblem{i, -1, fmt::format("node {}: empty id", i)};
      if (auto [it, fresh] = ids.emplace(node.id, i); !fresh) {
        return nodeProblem(i, fmt::format("duplicate id (also node {})", it->second));
      }
      const bool global = node.kind == NodeKind::Host || node.kind == NodeKind::Fabric;
      if (global && node.host != -1) {
        return nodeProblem(i, fmt::format("a {} belongs to no host, but host is {}",
                                          nodeKindName(node.kind), node.host));
      }
      const bool sharedSwitch = node.kind == NodeKind::NvSwitch && node.host == -1;
      if (!global && !sharedSwitch &&
          (node.host < 0 || node.host >= n || t_.nodes[node.host].kind != NodeKind::Host)) {
        return nodeProblem(i, fmt::format("host {} is not the index of a host node", node.host));
      }
      if (node.numa < -1) return nodeProblem(i, fmt::format("numa {} is below -1", node.numa));
      if (node.cores < 0) return nodeProblem(i, fmt::format("cores {} is negative", node.cores));
      if (node.rank < -1) return nodeProblem(i, fmt::format("rank {} is below -1", node.rank));
      if (node.rank >= 0) {
        if (node.kind != NodeKind::Gpu) return nodeProblem(i, "only a gpu carries a rank");
        if (auto [it, fresh] = ranks.emplace(node.rank, i); !fresh) {
          return nodeProblem(i, fmt::format("rank {} is also on '{}'", node.rank, id(it->second)));
        }
      }
    }
    return std::nullopt;
  }

  std::optional<std::string> endpointProblem(const Link& l) const {
    const Node& a = t_.nodes[l.a];
    const Node& b = t_.nodes[l.b];
    auto kinds = [&](std::initializer_list<NodeKind> allowed) {
      return isOneOf(a.kind, allowed) && isOneOf(b.kind, allowed);
    };
    const bool sameHost = a.host == b.host && a.host >= 0;
    switch (l.kind) {
      case LinkKind::Host: {
        const bool cpuHost = (a.kind == NodeKind::Cpu && b.kind == NodeKind::Host) ||
                             (a.kind == NodeKind::Host && b.kind == NodeKind::Cpu);
        if (!cpuHost) return "a host link joins a cpu to its host";
        const Node& cpu = a.kind == NodeKind::Cpu ? a : b;
        const int host = a.kind == NodeKind::Host ? l.a : l.b;
        if (cpu.host != host) return fmt::format("cpu '{}' belongs to another host", cpu.id);
        return std::nullopt;
      }
      case LinkKind::Smp:
        if (!kinds({NodeKind::Cpu})) return "an smp link joins two cpus";
        if (!sameHost) return "an smp link stays inside one host";
        return std::nullopt;
      case LinkKind::Pcie:
        if (!kinds({NodeKind::Cpu, NodeKind::PciSwitch, NodeKind::Gpu, NodeKind::Nic}) ||
            (a.kind == NodeKind::Cpu && b.kind == NodeKind::Cpu)) {
          return "a pcie link joins a cpu or pci switch to a pci switch, gpu or nic";
        }
        if (!isOneOf(a.kind, {NodeKind::Cpu, NodeKind::PciSwitch}) &&
            !isOneOf(b.kind, {NodeKind::Cpu, NodeKind::PciSwitch})) {
          return "a pcie link needs a cpu or pci switch at one end";
        }
        if (!sameHost) return "a pcie link stays inside one host";
        if (!l.bridge.empty() && a.kind != NodeKind::Cpu && b.kind != NodeKind::Cpu) {
          return "only a pcie link at a cpu names a host bridge";
        }
        return std::nullopt;
      case LinkKind::NvLink: {
        if (!kinds({NodeKind::Gpu, NodeKind::NvSwitch}))
          return "an nvlink joins gpus and nvswitches";
        auto shared = [](const Node& x) { return x.kind == NodeKind::NvSwitch && x.host < 0; };
        if (!sameHost && !shared(a) && !shared(b)) {
          return "an nvlink between two hosts goes through a shared nvswitch (one with no host)";
        }
        return std::nullopt;
      }
      case LinkKind::NvLinkC2C:
        if (!((a.kind == NodeKind::Cpu && b.kind == NodeKind::Gpu) ||
              (a.kind == NodeKind::Gpu && b.kind == NodeKind::Cpu))) {
          return "an nvlink-c2c joins a cpu and a gpu";
        }
        if (!sameHost) return "an nvlink-c2c stays inside one host";
        return std::nullopt;
      case LinkKind::Net:
        if (!kinds({NodeKind::Nic, NodeKind::Fabric}) ||
            (a.kind == NodeKind::Nic && b.kind == NodeKind::Nic)) {
          return "a net link joins a nic to a fabric, or two fabrics";
        }
        return std::nullopt;
    }
    return "unknown link kind";
  }

  std::optional<TopologyProblem> checkLinks() {
    const int n = static_cast<int>(t_.nodes.size());
    std::unordered_set<uint64_t> seen;
    seen.reserve(t_.links.size());
    for (int i = 0; i < static_cast<int>(t_.links.size()); ++i) {
      const Link& l = t_.links[i];
      if (l.a < 0 || l.a >= n || l.b < 0 || l.b >= n) {
        return linkProblem(i, fmt::format("end {} or {} is not a node index", l.a, l.b));
      }
      if (l.a == l.b) return linkProblem(i, "joins a node to itself");
      const double minBandwidth = l.kind == LinkKind::Host ? 0.0 : 1e-300;
      if (!std::isfinite(l.bandwidth) || l.bandwidth < minBandwidth) {
        return linkProblem(
            i, fmt::format("bandwidth {} GB/s is not positive and finite", l.bandwidth));
      }
      if (!std::isfinite(l.latency) || l.latency < 0) {
        return linkProblem(i, fmt::format("latency {} us is negative or not finite", l.latency));
      }
      if (l.lanes < 1) return linkProblem(i, fmt::format("lanes {} is below 1", l.lanes));
      if (l.generation < 0)
        return linkProblem(i, fmt::format("generation {} is negative", l.generation));
      if (auto why = endpointProblem(l)) return linkProblem(i, *why);
      const auto [lo, hi] = std::minmax(l.a, l.b);
      const uint64_t key = (static_cast<uint64_t>(lo) * static_cast<uint64_t>(n) + hi) * 8 +
                           static_cast<uint64_t>(l.kind);
      if (!seen.insert(key).second) {
        return linkProblem(i, "a second link of this kind between the same nodes (use lanes)");
      }
    }
    return std::nullopt;
  }

  std::optional<TopologyProblem> checkStructure() {
    const int n = static_cast<int>(t_.nodes.size());
    std::vector<int> hostLinks(n, 0);
    std::vector<int> attachment(n, -1);  // a gpu's or nic's one link up the tree
    PcieForest forest(t_);
    for (int i = 0; i < static_cast<int>(t_.links.size()); ++i) {
      const Link& l = t_.links[i];
      if (l.kind == LinkKind::Host) {
        const int cpu = t_.nodes[l.a].kind == NodeKind::Cpu ? l.a : l.b;
        if (++hostLinks[cpu] > 1) return linkProblem(i, "second host link of this cpu");
      }
      // A gpu on NVLink-C2C hangs off its cpu as a pcie leaf would.
      if (l.kind != LinkKind::Pcie && l.kind != LinkKind::NvLinkC2C) continue;
      for (int end : {l.a, l.b}) {
        const NodeKind kind = t_.nodes[end].kind;
        if (kind != NodeKind::Gpu && kind != NodeKind::Nic) continue;
        if (attachment[end] >= 0) {
          return linkProblem(i, fmt::format("'{}' already has a {} link; a {} is a leaf of the "
                                            "pcie tree",
                                            id(end), linkKindName(t_.links[attachment[end]].kind),
                                            nodeKindName(kind)));
        }
        attachment[end] = i;
      }
      const int cpuA = forest.cpuOf(l.a);
      const int cpuB = forest.cpuOf(l.b);
      if (!forest.join(l.a, l.b)) return linkProblem(i, "closes a cycle in the pcie tree");
      if (cpuA >= 0 && cpuB >= 0) {
        return linkProblem(
            i, fmt::format("joins the pcie trees of '{}' and '{}'", id(cpuA), id(cpuB)));
      }
    }
    for (int i = 0; i < n; ++i) {
      const NodeKind kind = t_.nodes[i].kind;
      if (kind == NodeKind::Cpu && hostLinks[i] != 1) return nodeProblem(i, "no host link");
      if (isOneOf(kind, {NodeKind::PciSwitch, NodeKind::Gpu, NodeKind::Nic}) &&
          forest.cpuOf(i) < 0) {
        return nodeProblem(i, "not under any cpu through pcie (or nvlink-c2c) links");
      }
    }
    return std::nullopt;
  }

  const Topology& t_;
};

}  // namespace

const char* nodeKindName(NodeKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kNodeKindNames.size() ? kNodeKindNames[i] : "?";
}

const char* linkKindName(LinkKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kLinkKindNames.size() ? kLinkKindNames[i] : "?";
}

std::optional<NodeKind> nodeKindFromName(std::string_view name) {
  return kindFromName<NodeKind>(kNodeKindNames, name);
}

std::optional<LinkKind> linkKindFromName(std::string_view name) {
  return kindFromName<LinkKind>(kLinkKindNames, name);
}

int Topology::addNode(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

int Topology::addLink(Link link) {
  links.push_back(std::move(link));
  return static_cast<int>(links.size()) - 1;
}

int Topology::find(const std::string& id) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Topology::nodesOfKind(NodeKind kind) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind == kind) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> Topology::linksOf(int node) const {
  std::vector<int> out;
  for (size_t i = 0; i < links.size(); ++i) {
    if (links[i].a == node || links[i].b == node) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::optional<TopologyProblem> findTopologyProblem(const Topology& topology) {
  return Checker(topology).run();
}

void validateTopology(const Topology& topology) {
  if (auto problem = findTopologyProblem(topology)) {
    raise(ErrorCode::InvalidArgument, "topology '{}': {}", topology.source, problem->message);
  }
}

std::vector<int> nvlinkIslands(const Topology& topology) {
  const size_t n = topology.nodes.size();
  std::vector<int> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // A node's island is its host's; a shared switch joins the islands of
  // every host (or switch) it links to.
  auto anchor = [&](int node) {
    const Node& x = topology.nodes[node];
    return x.host >= 0 ? x.host : node;
  };
  for (const Link& l : topology.links) {
    if (l.kind != LinkKind::NvLink) continue;
    parent[find(anchor(l.a))] = find(anchor(l.b));
  }
  std::vector<int> island(n, -1);
  std::unordered_map<int, int> numbers;
  for (size_t i = 0; i < n; ++i) {
    const Node& x = topology.nodes[i];
    const int host = x.kind == NodeKind::Host ? static_cast<int>(i) : x.host;
    if (host < 0) continue;
    const auto [it, fresh] = numbers.emplace(find(host), static_cast<int>(numbers.size()));
    island[i] = it->second;
  }
  return island;
}

double pcieBandwidth(int generation, int width) {
  // GB/s per lane and direction after line coding: 8b/10b for gen 1-2,
  // 128b/130b for gen 3-5, FLIT mode (about 242/256) for gen 6.
  constexpr std::array<double, 6> kPerLane = {0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  if (generation < 1 || generation > static_cast<int>(kPerLane.size())) {
    raise(ErrorCode::InvalidArgument, "PCIe generation {} is not 1..{}", generation,
          kPerLane.size());
  }
  if (width < 1 || width > 32)
    raise(ErrorCode::InvalidArgument, "PCIe width x{} is not 1..32", width);
  return kPerLane[generation - 1] * width;
}

double nvlinkBandwidth(int version, int lanes) {
  // GB/s per link and direction: NVLink 1 (P100) 20; 2 (V100), 3 (A100) and
  // 4 (H100) 25; 5 (B200) 50.
  constexpr std::array<double, 5> kPerLink = {20.0, 25.0, 25.0, 25.0, 50.0};
  if (version < 1 || version > static_cast<int>(kPerLink.size())) {
    raise(ErrorCode::InvalidArgument, "NVLink version {} is not 1..{}", version, kPerLink.size());
  }
  if (lanes < 1) raise(ErrorCode::InvalidArgument, "NVLink lanes {} is below 1", lanes);
  return kPerLink[version - 1] * lanes;
}

double netBandwidthFromGbps(double gbps) {
  if (!(gbps > 0) || !std::isfinite(gbps)) {
    raise(ErrorCode::InvalidArgument, "network speed {} Gb/s is not positive", gbps);
  }
  return gbps / 8.0;
}

double typicalSmpBandwidth() { return 40.0; }

double typicalLatency(LinkKind kind) {
  switch (kind) {
    case LinkKind::Host:
      return 0.0;
    case LinkKind::Smp:
      return 0.2;
    case LinkKind::Pcie:
      return 0.5;
    case LinkKind::NvLink:
    case LinkKind::NvLinkC2C:
      return 0.3;
    case LinkKind::Net:
      return 2.0;
  }
  return 0.0;
}

}  // namespace loom::topo
