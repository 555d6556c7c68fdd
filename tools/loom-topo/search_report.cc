#include "search_report.h"

#include <fmt/format.h>

#include <ostream>
#include <set>

#include "topology/ring_search.h"
#include "topology/tree_search.h"
#include "tuner/tree_shape.h"
#include "tuner/tuner.h"

namespace loomtopo {
namespace {

using namespace loom::topo;

// Node ids without the host prefix when every rank sits on one machine keep
// lines short: "gpu0 gpu3 ...". An NVLink island of several machines (one
// RankGraph host) keeps full ids. Which of the two is decided once.
class Names {
 public:
  explicit Names(const RankGraph& g) : g_(g) {
    const auto& nodes = g.topology().nodes;
    for (int r = 0; r < g.size(); ++r) {
      short_ = short_ && nodes[g.nodeOf(r)].host == nodes[g.nodeOf(0)].host;
    }
  }
  std::string node(int node) const {
    if (node < 0) return "?";
    const std::string& id = g_.topology().nodes[node].id;
    const auto slash = id.rfind('/');
    return !short_ || slash == std::string::npos ? id : id.substr(slash + 1);
  }
  std::string rank(int rank) const { return node(g_.nodeOf(rank)); }

 private:
  const RankGraph& g_;
  bool short_ = true;
};

void printRings(std::ostream& out, const RankGraph& g, const Names& names,
                const std::vector<Ring>& rings) {
  double total = 0;
  for (const Ring& r : rings) total += r.bandwidth;
  out << fmt::format("Rings: {} channel(s), {:.1f} GB/s together\n", rings.size(), total);
  for (size_t k = 0; k < rings.size(); ++k) {
    const Ring& r = rings[k];
    out << fmt::format("  ring {} ({:.1f} GB/s, worst hop {}):", k, r.bandwidth,
                       pathClassName(r.worst));
    for (size_t p = 0; p < r.order.size(); ++p) {
      const int a = r.order[p];
      out << " " << names.rank(a);
      if (r.order.size() < 2) continue;
      const int b = r.order[(p + 1) % r.order.size()];
      if (g.hostOf(a) != g.hostOf(b)) {
        const int nic = g.nicOf(a);
        out << fmt::format(" =[{}]=>", nic < 0 ? "?" : g.topology().nodes[nic].id);
      } else {
        out << " >";
      }
    }
    out << "\n";
  }
}

// The NICs that carry each channel's two trees out of host 0: the heads'.
void printTreeNics(std::ostream& out, const RankGraph& g, const Names& names,
                   const std::vector<Ring>& rings) {
  std::set<int> used;
  out << "  NICs of host 0's tree heads, by channel:";
  for (size_t k = 0; k < rings.size(); ++k) {
    const TreeSet trees = searchTrees(g, rings[k].order, loom::tuner::doubleBinaryTreeShape());
    const int nics[2] = {g.nicOf(trees.chains[0][0].front()), g.nicOf(trees.chains[1][0].front())};
    out << fmt::format(" {}:{}+{}", k, names.node(nics[0]), names.node(nics[1]));
    used.insert(nics, nics + 2);
  }
  const std::vector<int> island = nvlinkIslands(g.topology());
  const int host = island[g.nodeOf(g.ranksOn(0).front())];
  int onHost = 0;
  for (int nic : g.topology().nodesOfKind(NodeKind::Nic)) onHost += island[nic] == host ? 1 : 0;
  used.erase(-1);
  out << fmt::format(" ({} of the host's {} NICs)\n", used.size(), onHost);
}

void printTrees(std::ostream& out, const RankGraph& g, const Names& names,
                const std::vector<Ring>& rings) {
  const TreeSet trees = searchTrees(g, rings.front().order, loom::tuner::doubleBinaryTreeShape());
  out << "Trees: double binary tree over hosts, chain inside each host (channel 0; tree 1 "
         "walks each chain backwards)\n";
  for (size_t h = 0; h < trees.chains[0].size(); ++h) {
    out << fmt::format("  host {} chain:", h);
    for (int r : trees.chains[0][h]) out << " " << names.rank(r);
    out << "\n";
  }
  for (int t = 0; t < 2; ++t) {
    out << fmt::format("  tree {} (root {}, depth {}):", t, names.rank(trees.root(t)),
                       trees.depth(t));
    for (size_t h = 0; h < trees.hostTrees[t].size(); ++h) {
      const BinaryTreeLinks& l = trees.hostTrees[t][h];
      if (l.children[0] < 0 && l.children[1] < 0) continue;
      out << fmt::format(" host{}->{{", h);
      for (int c : l.children) {
        if (c >= 0) out << fmt::format(" host{}", c);
      }
      out << " }";
    }
    if (trees.hostTrees[t].size() < 2) out << " the chain";
    out << "\n";
  }
  if (g.hostCount() > 1) printTreeNics(out, g, names, rings);
}

}  // namespace

void printSearch(std::ostream& out, const Topology& topology) {
  const RankGraph g(topology, defaultRankNodes(topology), loom::tuner::loomHopOptions());
  const std::vector<Ring> rings = searchRings(g);
  out << fmt::format("Ranks: {} on {} host(s)\n", g.size(), g.hostCount());
  const Names names(g);
  printRings(out, g, names, rings);
  printTrees(out, g, names, rings);
}

}  // namespace loomtopo
