// Tree search: a double binary tree across hosts and a chain inside each host.
//
// Inside a host the ranks form a chain along the ring (so each chain hop is a
// ring hop, the fastest links the ring search found), starting at the host's
// head in that tree. Tree 0's chain walks the ring from the rank it enters
// the host through; tree 1's walks it backwards from the rank it leaves
// through. Each head's NIC carries its tree across the network, so the two
// trees of a channel use the ring's two NICs, and trees built on each
// channel's ring spread over every NIC the rings do.
// Across hosts the heads form two binary trees in which every host is
// interior (has child hosts) in at most one, so each host forwards across the
// network for at most one half of a message. The binary tree shape is given
// by the caller (the tuner passes collectives' doubleBinaryTree), which keeps
// the topology layer free of plan code and one tree construction in the tree.
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "topology/ring_search.h"

namespace loom::topo {

/// One node of a binary tree over `count` items: parent and up to two
/// children (-1 when absent).
struct BinaryTreeLinks {
  int parent = -1;
  int children[2] = {-1, -1};
};

/// Tree `tree` (0 or 1) of a double binary tree over `count` items; every item
/// must be interior in at most one of the two trees.
using DoubleTreeShape = std::function<BinaryTreeLinks(int index, int count, int tree)>;

/// One rank's place in one tree.
struct RankTreeLinks {
  int parent = -1;            ///< -1 at the root
  std::vector<int> children;  ///< chain successor first, then child hosts' heads
};

struct TreeSet {
  /// Per tree, per host: its ranks in chain order; chains[t][h][0] is host
  /// h's head in tree t. chains[1][h] is chains[0][h] reversed.
  std::array<std::vector<std::vector<int>>, 2> chains;
  /// Per tree, per host: the tree between hosts (indices are hosts).
  std::array<std::vector<BinaryTreeLinks>, 2> hostTrees;
  /// Per tree, per rank: the whole tree over ranks.
  std::array<std::vector<RankTreeLinks>, 2> rankTrees;

  /// Hops from the root to the deepest rank of tree `tree`.
  int depth(int tree) const;
  /// The root rank of tree `tree`.
  int root(int tree) const;
};

/// Builds the trees over `graph`'s ranks; `ringOrder` (a ring of searchRings)
/// orders each host's chain. Throws Error(InvalidArgument) when ringOrder is
/// not a permutation of the ranks or the shape breaks the double-tree rule.
TreeSet searchTrees(const RankGraph& graph, const std::vector<int>& ringOrder,
                    const DoubleTreeShape& shape);

/// Checks that both trees span every rank once with consistent parent/child
/// links and no cycle, and that no host is interior in both host trees.
/// Throws Error(InternalError) naming the rank or host otherwise.
void checkTrees(const TreeSet& trees, int nranks);

}  // namespace loom::topo
