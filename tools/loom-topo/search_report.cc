#include "search_report.h"

#include <fmt/format.h>

#include <ostream>

#include "topology/ring_search.h"
#include "topology/tree_search.h"
#include "tuner/tree_shape.h"

namespace loomtopo {
namespace {

using namespace loom::topo;

// Node ids without the host prefix when the ring stays on one host keep
// lines short: "gpu0 gpu3 ...".
std::string rankName(const RankGraph& g, int rank) {
  const std::string& id = g.topology().nodes[g.nodeOf(rank)].id;
  if (g.hostCount() > 1) return id;
  const auto slash = id.rfind('/');
  return slash == std::string::npos ? id : id.substr(slash + 1);
}

void printRings(std::ostream& out, const RankGraph& g, const std::vector<Ring>& rings) {
  double total = 0;
  for (const Ring& r : rings) total += r.bandwidth;
  out << fmt::format("Rings: {} channel(s), {:.1f} GB/s together\n", rings.size(), total);
  for (size_t k = 0; k < rings.size(); ++k) {
    const Ring& r = rings[k];
    out << fmt::format("  ring {} ({:.1f} GB/s, worst hop {}):", k, r.bandwidth,
                       pathClassName(r.worst));
    for (size_t p = 0; p < r.order.size(); ++p) {
      const int a = r.order[p];
      out << " " << rankName(g, a);
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

void printTrees(std::ostream& out, const RankGraph& g, const TreeSet& trees) {
  out << "Trees: double binary tree over hosts, chain inside each host\n";
  for (size_t h = 0; h < trees.chains.size(); ++h) {
    out << fmt::format("  host {} chain:", h);
    for (int r : trees.chains[h]) out << " " << rankName(g, r);
    out << "\n";
  }
  for (int t = 0; t < 2; ++t) {
    out << fmt::format("  tree {} (root {}, depth {}):", t, rankName(g, trees.root(t)),
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
}

}  // namespace

void printSearch(std::ostream& out, const Topology& topology) {
  const RankGraph g(topology, defaultRankNodes(topology));
  const std::vector<Ring> rings = searchRings(g);
  out << fmt::format("Ranks: {} on {} host(s)\n", g.size(), g.hostCount());
  printRings(out, g, rings);
  printTrees(out, g, searchTrees(g, rings.front().order, loom::tuner::doubleBinaryTreeShape()));
}

}  // namespace loomtopo
