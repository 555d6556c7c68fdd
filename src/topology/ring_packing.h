// Ring packing: as many rings as one host's direct links can carry at once.
//
// The ring search picks channels one after another, each the best ring in
// what the earlier ones left; on a full mesh that greedy order strands links
// (an 8-GPU mesh of single links holds 7 link-disjoint rings, one per link
// out of each GPU, while ring after ring finds 6). Packing searches for a
// whole set at once, by backtracking, and is tried only where every usable
// hop is one direct link, so each link's capacity (ring_search.h) is exact.
#pragma once

#include <functional>
#include <vector>

#include "topology/ring_search.h"

namespace loom::topo {

struct PackingLimits {
  int atLeast = 2;          ///< fewer rings than this are not worth returning
  int atMost = 16;          ///< rings wanted at most
  long budget = 2'000'000;  ///< search steps over all attempts
};

/// Ring orders over the ranks of a one-host `graph`, every ring starting at
/// its first rank, using only hops that pass `usable`, and together within
/// every link's capacity. Tries the most rings the links allow first, then
/// fewer down to `atLeast`. Empty when the graph has several hosts, a usable
/// hop crosses anything but one direct link, or the budget runs out first.
std::vector<std::vector<int>> packDisjointRings(const RankGraph& graph,
                                                const std::function<bool(const Hop&)>& usable,
                                                const PackingLimits& limits);

}  // namespace loom::topo
