#include "tuner/cost_model.h"

#include <algorithm>
#include <cmath>

#include "collectives/algorithms.h"
#include "core/error.h"

namespace loom::tuner {
namespace {

// Slices modelled one by one before the rest are extrapolated.
constexpr size_t kModelIterations = 24;

double transfer(size_t elements, const LinkCost& link) {
  return static_cast<double>(elements * kModelElementBytes) / (link.bandwidth * 1e3);
}

size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

// Runs `iteration(i)` (which advances rank clocks and returns the latest) for
// min(iterations, kModelIterations) slices; later slices repeat the last step.
template <typename Iteration>
double iterate(size_t iterations, Iteration&& iteration) {
  double previous = 0;
  double last = 0;
  const size_t modelled = std::min(iterations, kModelIterations);
  for (size_t i = 0; i < modelled; ++i) {
    previous = last;
    last = iteration(i);
  }
  return last + static_cast<double>(iterations - modelled) * (last - previous);
}

// ------------------------------------------------------------------- ring

std::vector<double> hopTimes(const std::vector<LinkCost>& hops, size_t slice) {
  std::vector<double> h;
  h.reserve(hops.size());
  for (const LinkCost& hop : hops) h.push_back(hop.latency + transfer(slice, hop));
  return h;
}

// The critical path walks `walk` consecutive hops backwards round the ring;
// it may end anywhere, so the window is the worst one.
double ringWalk(const std::vector<double>& h, size_t walk) {
  const size_t n = h.size();
  double lap = 0;
  for (double x : h) lap += x;
  const size_t rest = walk % n;
  double window = 0;
  for (size_t j = 0; j < rest; ++j) window += h[j];
  double best = window;
  for (size_t start = 1; start < n && rest > 0; ++start) {
    window += h[(start + rest - 1) % n] - h[start - 1];
    best = std::max(best, window);
  }
  const size_t fullLaps = walk / n;  // whole laps; the rest is `best`
  return static_cast<double>(fullLaps) * lap + best;
}

// Fewer non-empty chunks than ranks (a tiny message): chunk c starts at
// position c + 1 and walks `walk` hops from there; the others never move.
double sparseWalk(const std::vector<double>& h, size_t chunks, size_t walk) {
  const size_t n = h.size();
  double worst = 0;
  for (size_t c = 0; c < chunks; ++c) {
    double sum = 0;
    for (size_t i = 0; i < walk; ++i) sum += h[(c + 1 + i) % n];
    worst = std::max(worst, sum);
  }
  return worst;
}

// Each link carries M messages, one per step of its sender. The sender is
// busy σ/β per message, and a link holding D messages lets it run at most D
// ahead of the receiver, so messages leave no faster than one per
// max(σ/β, h/D); the last arrives (M-1) periods after the first, plus h.
double linkBound(const std::vector<LinkCost>& hops, const std::vector<double>& h, size_t slice,
                 size_t messages, size_t slots) {
  double worst = 0;
  for (size_t j = 0; j < hops.size(); ++j) {
    const double period = std::max(transfer(slice, hops[j]), h[j] / static_cast<double>(slots));
    worst = std::max(worst, static_cast<double>(messages - 1) * period + h[j]);
  }
  return worst;
}

// One ring of `part` elements: an all-reduce walks 2(n-1) hops per slice
// with steps of chunkSize(part, n, 0); all-gather and reduce-scatter walk
// n-1 hops with steps of `part` (the per-rank block).
double oneRingTime(const std::vector<LinkCost>& hops, size_t part, bool allReduce, size_t slice,
                   size_t slots) {
  const size_t n = hops.size();
  if (n < 2) return 0;
  const size_t hopsPerSlice = (allReduce ? 2 : 1) * (n - 1);
  const size_t step = allReduce ? chunkSize(part, static_cast<int>(n), 0) : part;
  if (step == 0) return 0;
  const size_t slices = ceilDiv(step, slice);
  // The average slice: exact when step divides evenly, close otherwise.
  const size_t average = ceilDiv(step, slices);
  const std::vector<double> h = hopTimes(hops, average);
  const size_t messages = hopsPerSlice * slices;
  const bool sparse = allReduce && part < n;
  const double walk = sparse ? sparseWalk(h, part, hopsPerSlice) : ringWalk(h, messages);
  return std::max(walk, linkBound(hops, h, average, messages, slots));
}

double ringTime(const TunerTopology& t, Collective collective, size_t count, const Candidate& c) {
  if (t.nranks < 2) return 0;
  const auto& set = t.ringSets[c.channels - 1];
  const size_t slice = c.chunkBytes / kModelElementBytes;
  double worst = 0;
  for (int k = 0; k < c.channels; ++k) {
    worst = std::max(worst, oneRingTime(set[k].hops, chunkSize(count, c.channels, k),
                                        collective == Collective::AllReduce, slice, t.linkSlots));
  }
  return worst;
}

// ----------------------------------------------------------- hierarchical

// Three phases, each waiting for the last: a reduce-scatter of L shards in
// every host, the all-reduce of each shard across hosts (all L rings at once,
// their hops already priced sharing the network), the all-gather in every host.
double hierarchicalTime(const TunerTopology& t, size_t count, const Candidate& c) {
  const Hierarchy& h = *t.hierarchy;
  const size_t slice = c.chunkBytes / kModelElementBytes;
  const int perHost = static_cast<int>(h.hosts.front().size());
  double local = 0;
  for (const RingChannel& ring : h.local) {
    local = std::max(
        local, oneRingTime(ring.hops, chunkSize(count, perHost, 0), false, slice, t.linkSlots));
  }
  double across = 0;
  for (size_t p = 0; p < h.across.size(); ++p) {
    const size_t shard = chunkSize(count, perHost, static_cast<int>(p));
    across = std::max(across, oneRingTime(h.across[p].hops, shard, true, slice, t.linkSlots));
  }
  return 2 * local + across;
}

// ------------------------------------------------------------------- tree

struct TreeShape {
  std::vector<TreeLinks> links;  // by plan position
  std::vector<int> preorder;     // root first
};

TreeShape treeShape(int n, int tree) {
  TreeShape s;
  for (int p = 0; p < n; ++p) s.links.push_back(doubleBinaryTree(p, n, tree));
  for (int p = 0; p < n; ++p) {
    if (s.links[p].parent < 0) s.preorder.push_back(p);
  }
  for (size_t i = 0; i < s.preorder.size(); ++i) {
    for (int child : s.links[s.preorder[i]].children) {
      if (child >= 0) s.preorder.push_back(child);
    }
  }
  return s;
}

// One slice of one tree (reduce up, then broadcast down), advancing `clock`
// (by plan position) the way each rank's steps run in the plan.
void treeSlice(const TreeShape& s, const std::function<LinkCost(int, int)>& cost, size_t slice,
               std::vector<double>& clock) {
  const size_t n = s.links.size();
  std::vector<double> upArrival(n, 0), downArrival(n, 0);
  for (auto it = s.preorder.rbegin(); it != s.preorder.rend(); ++it) {
    const int p = *it;
    const TreeLinks& l = s.links[p];
    double ready = clock[p];
    for (int child : l.children) {
      if (child >= 0) ready = std::max(ready, upArrival[child]);
    }
    clock[p] = ready;
    if (l.parent >= 0) {
      const LinkCost link = cost(p, l.parent);
      clock[p] += transfer(slice, link);
      upArrival[p] = clock[p] + link.latency;
    }
  }
  for (int p : s.preorder) {
    const TreeLinks& l = s.links[p];
    if (l.parent >= 0) clock[p] = std::max(clock[p], downArrival[p]);
    for (int child : l.children) {
      if (child < 0) continue;
      const LinkCost link = cost(p, child);
      clock[p] += transfer(slice, link);
      downArrival[child] = clock[p] + link.latency;
    }
  }
}

double treeTime(const TunerTopology& t, size_t count, const Candidate& c) {
  const int n = t.nranks;
  if (n < 2) return 0;
  const TreeShape shapes[2] = {treeShape(n, 0), treeShape(n, 1)};
  auto cost = [&](int from, int to) { return t.pair(t.treeOrder[from], t.treeOrder[to]); };
  const size_t slice = c.chunkBytes / kModelElementBytes;
  const size_t halves[2] = {chunkSize(count, 2, 0), chunkSize(count, 2, 1)};
  std::vector<double> clock(n, 0.0);
  return iterate(ceilDiv(halves[0], slice), [&](size_t i) {
    for (int tree = 0; tree < 2; ++tree) {
      const size_t first = i * slice;
      if (first >= halves[tree]) continue;
      treeSlice(shapes[tree], cost, std::min(slice, halves[tree] - first), clock);
    }
    return *std::max_element(clock.begin(), clock.end());
  });
}

// ----------------------------------------------------------------- direct

double directTime(const TunerTopology& t, size_t count, const Candidate& c) {
  const int n = t.nranks;
  if (n < 2) return 0;
  const size_t slice = c.chunkBytes / kModelElementBytes;
  std::vector<size_t> shard(n);
  for (int r = 0; r < n; ++r) shard[r] = chunkSize(count, n, r);
  auto part = [&](int owner, size_t i) {
    const size_t first = i * slice;
    return first >= shard[owner] ? 0 : std::min(slice, shard[owner] - first);
  };
  std::vector<double> clock(n, 0.0);
  std::vector<double> arrival(static_cast<size_t>(n) * n, 0.0);  // [to * n + from]
  // Phase: every rank sends peers r+1, r+2, ... a slice of `owner(r, peer)`'s
  // shard, then takes the messages from r-1, r-2, ...
  auto phase = [&](size_t i, bool ownShard) {
    for (int r = 0; r < n; ++r) {
      for (int k = 1; k < n; ++k) {
        const int peer = (r + k) % n;
        const size_t elements = part(ownShard ? r : peer, i);
        if (elements == 0) continue;
        const LinkCost link = t.directCost(r, peer);
        clock[r] += transfer(elements, link);
        arrival[static_cast<size_t>(peer) * n + r] = clock[r] + link.latency;
      }
    }
    for (int r = 0; r < n; ++r) {
      for (int k = 1; k < n; ++k) {
        const int from = (r - k + n) % n;
        if (part(ownShard ? from : r, i) == 0) continue;
        clock[r] = std::max(clock[r], arrival[static_cast<size_t>(r) * n + from]);
      }
    }
  };
  return iterate(ceilDiv(shard[0], slice), [&](size_t i) {
    phase(i, false);
    phase(i, true);
    return *std::max_element(clock.begin(), clock.end());
  });
}

// ---------------------------------------------------------------- host tree

// A chain of hops carrying q slices: the first slice walks every hop, each
// later one follows the slowest hop's period (the sender busy σ/β, or the
// FIFO's D messages per round trip).
double chainTime(const std::vector<LinkCost>& hops, size_t count, size_t slice, size_t slots) {
  if (hops.empty() || count == 0) return 0;
  const size_t slices = ceilDiv(count, slice);
  const size_t average = ceilDiv(count, slices);
  const std::vector<double> h = hopTimes(hops, average);
  double walk = 0;
  double period = 0;
  for (size_t j = 0; j < hops.size(); ++j) {
    walk += h[j];
    period = std::max({period, transfer(average, hops[j]), h[j] / static_cast<double>(slots)});
  }
  return walk + static_cast<double>(slices - 1) * period;
}

// Chain reduce to each host's leader, double binary tree among the leaders,
// chain broadcast back: three phases, each waiting for the one before.
double hostTreeTime(const TunerTopology& t, size_t count, const Candidate& c) {
  const size_t slice = c.chunkBytes / kModelElementBytes;
  double up = 0;
  double down = 0;
  std::vector<int> leaders;
  for (const std::vector<int>& host : t.hostRanks) {
    leaders.push_back(host.front());
    std::vector<LinkCost> toLeader;    // position p+1 -> p+2 ... -> leader, as the ring reduce runs
    std::vector<LinkCost> fromLeader;  // leader -> position 1 -> ...
    const size_t n = host.size();
    for (size_t p = 1; p < n; ++p) toLeader.push_back(t.pair(host[p], host[(p + 1) % n]));
    for (size_t p = 0; p + 1 < n; ++p) fromLeader.push_back(t.pair(host[p], host[p + 1]));
    up = std::max(up, chainTime(toLeader, count, slice, t.linkSlots));
    down = std::max(down, chainTime(fromLeader, count, slice, t.linkSlots));
  }
  TunerTopology top;
  top.nranks = static_cast<int>(leaders.size());
  top.pair = [&](int from, int to) { return t.pair(leaders[from], leaders[to]); };
  for (int p = 0; p < top.nranks; ++p) top.treeOrder.push_back(p);
  top.linkSlots = t.linkSlots;
  return up + treeTime(top, count, c) + down;
}

}  // namespace

bool modelled(const TunerTopology& topology, Collective collective, Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::Ring:
      return collective == Collective::AllReduce || collective == Collective::AllGather ||
             collective == Collective::ReduceScatter;
    case Algorithm::Tree:
      return collective == Collective::AllReduce;
    case Algorithm::Direct:
      return collective == Collective::AllReduce && topology.oneHost();
    case Algorithm::Hierarchical:
      return collective == Collective::AllReduce && topology.hierarchy.has_value();
    case Algorithm::HostTree:
      return collective == Collective::AllReduce && hostTreeFits(topology.hostRanks);
    default:
      return false;
  }
}

double predictMicroseconds(const TunerTopology& topology, Collective collective, size_t bytes,
                           const Candidate& candidate) {
  if (!modelled(topology, collective, candidate.algorithm)) {
    raise(ErrorCode::InvalidArgument, "the cost model does not cover {} for {} on {} host(s)",
          toString(candidate.algorithm), toString(collective), topology.hosts);
  }
  if (candidate.channels < 1 || candidate.channels > topology.maxChannels() ||
      candidate.chunkBytes < kModelElementBytes) {
    raise(ErrorCode::InvalidArgument,
          "candidate {} with {} channel(s) of {} (1..{}) and chunk {} B (>= {})",
          toString(candidate.algorithm), candidate.channels, topology.maxChannels(),
          topology.maxChannels(), candidate.chunkBytes, kModelElementBytes);
  }
  const size_t count = bytes / kModelElementBytes;
  switch (candidate.algorithm) {
    case Algorithm::Ring:
      return ringTime(topology, collective, count, candidate);
    case Algorithm::Tree:
      return treeTime(topology, count, candidate);
    case Algorithm::Hierarchical:
      return hierarchicalTime(topology, count, candidate);
    case Algorithm::HostTree:
      return hostTreeTime(topology, count, candidate);
    default:
      return directTime(topology, count, candidate);
  }
}

}  // namespace loom::tuner
