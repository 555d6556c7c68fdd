#include "topology/tree_search.h"

#include <algorithm>

#include "core/error.h"

namespace loom::topo {
namespace {

// Each host's ranks in the order the ring visits them, starting where the
// ring enters the host (for one host: where the ring starts).
std::vector<std::vector<int>> chainsFromRing(const RankGraph& g, const std::vector<int>& ring) {
  std::vector<int> seen(g.size(), 0);
  for (int r : ring) {
    if (r < 0 || r >= g.size() || seen[r]++ != 0) {
      raise(ErrorCode::InvalidArgument, "ring order names rank {} twice or out of 0..{}", r,
            g.size() - 1);
    }
  }
  if (static_cast<int>(ring.size()) != g.size()) {
    raise(ErrorCode::InvalidArgument, "ring order has {} ranks, the graph {}", ring.size(),
          g.size());
  }
  // Rotate so a host boundary (or rank 0 of a lone host) starts the walk.
  size_t start = 0;
  for (size_t p = 0; p < ring.size(); ++p) {
    const int prev = ring[(p + ring.size() - 1) % ring.size()];
    if (g.hostOf(prev) != g.hostOf(ring[p])) {
      start = p;
      break;
    }
  }
  std::vector<std::vector<int>> chains(g.hostCount());
  for (size_t k = 0; k < ring.size(); ++k) {
    const int r = ring[(start + k) % ring.size()];
    chains[g.hostOf(r)].push_back(r);
  }
  return chains;
}

int interiorCount(const BinaryTreeLinks& links) {
  return (links.children[0] >= 0 ? 1 : 0) + (links.children[1] >= 0 ? 1 : 0);
}

}  // namespace

TreeSet searchTrees(const RankGraph& graph, const std::vector<int>& ringOrder,
                    const DoubleTreeShape& shape) {
  TreeSet t;
  t.chains[0] = chainsFromRing(graph, ringOrder);
  t.chains[1] = t.chains[0];
  for (auto& chain : t.chains[1]) std::reverse(chain.begin(), chain.end());
  const int hosts = graph.hostCount();
  for (int tree = 0; tree < 2; ++tree) {
    auto& hostTree = t.hostTrees[tree];
    auto& rankTree = t.rankTrees[tree];
    rankTree.assign(graph.size(), RankTreeLinks{});
    for (int h = 0; h < hosts; ++h) {
      hostTree.push_back(hosts == 1 ? BinaryTreeLinks{} : shape(h, hosts, tree));
    }
    for (int h = 0; h < hosts; ++h) {
      const std::vector<int>& chain = t.chains[tree][h];
      for (size_t i = 1; i < chain.size(); ++i) {
        rankTree[chain[i]].parent = chain[i - 1];
        rankTree[chain[i - 1]].children.push_back(chain[i]);
      }
      const BinaryTreeLinks& links = hostTree[h];
      if (links.parent >= 0) {
        rankTree[chain.front()].parent = t.chains[tree][links.parent].front();
      }
      for (int child : links.children) {
        if (child >= 0) rankTree[chain.front()].children.push_back(t.chains[tree][child].front());
      }
    }
  }
  checkTrees(t, graph.size());
  return t;
}

int TreeSet::root(int tree) const {
  const auto& ranks = rankTrees[tree];
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].parent < 0) return static_cast<int>(r);
  }
  return -1;
}

int TreeSet::depth(int tree) const {
  int deepest = 0;
  std::vector<std::pair<int, int>> stack = {{root(tree), 0}};
  while (!stack.empty()) {
    const auto [rank, d] = stack.back();
    stack.pop_back();
    if (rank < 0) continue;
    deepest = std::max(deepest, d);
    for (int child : rankTrees[tree][rank].children) stack.push_back({child, d + 1});
  }
  return deepest;
}

void checkTrees(const TreeSet& trees, int nranks) {
  for (int tree = 0; tree < 2; ++tree) {
    const auto& ranks = trees.rankTrees[tree];
    if (static_cast<int>(ranks.size()) != nranks) {
      raise(ErrorCode::InternalError, "tree {} has {} ranks, expected {}", tree, ranks.size(),
            nranks);
    }
    int roots = 0;
    for (int r = 0; r < nranks; ++r) {
      const int parent = ranks[r].parent;
      if (parent < 0) {
        ++roots;
        continue;
      }
      const auto& siblings = ranks[parent].children;
      if (std::count(siblings.begin(), siblings.end(), r) != 1) {
        raise(ErrorCode::InternalError, "tree {}: rank {} names parent {} which does not list it",
              tree, r, parent);
      }
    }
    if (roots != 1) raise(ErrorCode::InternalError, "tree {} has {} roots", tree, roots);
    // Reaching every rank once from the root rules out cycles and strays.
    std::vector<int> reached(nranks, 0);
    std::vector<int> stack = {trees.root(tree)};
    while (!stack.empty()) {
      const int r = stack.back();
      stack.pop_back();
      if (++reached[r] > 1)
        raise(ErrorCode::InternalError, "tree {} reaches rank {} twice", tree, r);
      for (int child : ranks[r].children) {
        if (child < 0 || child >= nranks || ranks[child].parent != r) {
          raise(ErrorCode::InternalError, "tree {}: rank {} lists child {} that is not its own",
                tree, r, child);
        }
        stack.push_back(child);
      }
    }
    for (int r = 0; r < nranks; ++r) {
      if (reached[r] != 1)
        raise(ErrorCode::InternalError, "tree {} never reaches rank {}", tree, r);
    }
  }
  const size_t hosts = trees.hostTrees[0].size();
  for (size_t h = 0; h < hosts; ++h) {
    if (interiorCount(trees.hostTrees[0][h]) > 0 && interiorCount(trees.hostTrees[1][h]) > 0) {
      raise(ErrorCode::InternalError, "host {} is interior in both trees", h);
    }
  }
}

}  // namespace loom::topo
