#include "topology/ring_packing.h"

#include <algorithm>
#include <limits>

namespace loom::topo {
namespace {

// Backtracking over whole ring sets. Rings start at the host's first rank and
// leave it in nondecreasing neighbour order, so no set is tried twice in
// another order.
class Packer {
 public:
  Packer(const RankGraph& g, std::vector<int> capacity, long budget)
      : ranks_(g.ranksOn(0)),
        capacity_(std::move(capacity)),
        budget_(budget),
        out_(ranks_.size(), 0),
        in_(ranks_.size(), 0) {
    const size_t n = ranks_.size();
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (a == b) continue;
        out_[a] += capacity_[a * n + b];
        in_[b] += capacity_[a * n + b];
      }
    }
  }

  // The most rings the links could carry: each ring leaves and enters every
  // rank once.
  int bound() const {
    int b = std::numeric_limits<int>::max();
    for (size_t r = 0; r < ranks_.size(); ++r) b = std::min({b, out_[r], in_[r]});
    return b;
  }

  bool pack(int rings) {
    wanted_ = rings;
    found_.clear();
    return placeRing(1);
  }
  bool outOfBudget() const { return budget_ <= 0; }
  std::vector<std::vector<int>> orders() const {
    std::vector<std::vector<int>> out;
    for (const auto& ring : found_) {
      auto& order = out.emplace_back();
      for (int i : ring) order.push_back(ranks_[i]);
    }
    return out;
  }

 private:
  size_t n() const { return ranks_.size(); }
  int& cap(int a, int b) { return capacity_[static_cast<size_t>(a) * n() + b]; }
  void take(int a, int b, int delta) {
    cap(a, b) -= delta;
    out_[a] -= delta;
    in_[b] -= delta;
  }

  // Every rank can still give the rings left one way out and one way in.
  bool roomFor(int rings) const {
    for (size_t r = 0; r < n(); ++r) {
      if (out_[r] < rings || in_[r] < rings) return false;
    }
    return true;
  }

  bool placeRing(int firstNeighbour) {
    if (static_cast<int>(found_.size()) == wanted_) return true;
    for (int s = firstNeighbour; s < static_cast<int>(n()); ++s) {
      if (cap(0, s) == 0) continue;
      take(0, s, 1);
      std::vector<int> path = {0, s};
      std::vector<bool> visited(n(), false);
      visited[0] = visited[s] = true;
      if (extend(path, visited)) return true;
      take(0, s, -1);
      if (outOfBudget()) return false;
    }
    return false;
  }

  // Grows one ring from `path` (rank indices, the host's first rank first);
  // a closed ring hands on to the next.
  bool extend(std::vector<int>& path, std::vector<bool>& visited) {
    if (--budget_ <= 0) return false;
    const int at = path.back();
    if (path.size() == n()) {
      if (cap(at, 0) == 0) return false;
      take(at, 0, 1);
      found_.push_back(path);
      const int left = wanted_ - static_cast<int>(found_.size());
      if (roomFor(left) && placeRing(path[1])) return true;
      found_.pop_back();
      take(at, 0, -1);
      return false;
    }
    for (int next = 1; next < static_cast<int>(n()); ++next) {
      if (visited[next] || cap(at, next) == 0) continue;
      take(at, next, 1);
      visited[next] = true;
      path.push_back(next);
      if (extend(path, visited)) return true;
      path.pop_back();
      visited[next] = false;
      take(at, next, -1);
      if (outOfBudget()) return false;
    }
    return false;
  }

  std::vector<int> ranks_;
  std::vector<int> capacity_;  // [a * n + b], ring hops the link a -> b has left
  long budget_;
  std::vector<int> out_, in_;  // capacity left out of and into each rank
  int wanted_ = 0;
  std::vector<std::vector<int>> found_;  // rank indices
};

}  // namespace

std::vector<std::vector<int>> packDisjointRings(const RankGraph& graph,
                                                const std::function<bool(const Hop&)>& usable,
                                                const PackingLimits& limits) {
  if (graph.hostCount() != 1 || graph.size() < 3) return {};
  const std::vector<int>& ranks = graph.ranksOn(0);
  const size_t n = ranks.size();
  std::vector<int> capacity(n * n, 0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      const Hop& h = graph.hop(ranks[a], ranks[b]);
      if (!usable(h)) continue;
      if (h.arcs.size() != 1) return {};
      capacity[a * n + b] = graph.arcCapacity(h.arcs.front(), h.channelBandwidth);
    }
  }
  Packer packer(graph, std::move(capacity), limits.budget);
  for (int rings = std::min(packer.bound(), limits.atMost); rings >= limits.atLeast; --rings) {
    if (packer.pack(rings)) return packer.orders();
    if (packer.outOfBudget()) break;
  }
  return {};
}

}  // namespace loom::topo
