// Algorithms turn a PlanRequest into one rank's RankPlan. They know ranks and
// element ranges only: nothing of links, transports or bytes.
#pragma once

#include <span>
#include <vector>

#include "collectives/plan.h"

namespace loom {

/// Emits the plan for req.algorithm. Throws InvalidArgument if the algorithm
/// does not implement req.collective (e.g. Tree for AllGather) or the request is
/// inconsistent (rank/root out of range). Direct is not a step plan and is
/// rejected here.
RankPlan makePlan(const PlanRequest& req);

/// Most channels one plan spreads an all-reduce over (PlanRequest::channels).
inline constexpr int kMaxPlanChannels = 8;
/// Whether a ring of `c` can be split over channels (PlanRequest::channels):
/// all-reduce, all-gather and reduce-scatter.
inline bool ringSplitsOverChannels(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter;
}

/// Runs a plan made for plan positions on ranks: position p is rank order[p]
/// (a ring order from the topology search). Only peers change, so this is
/// right for collectives whose buffers do not depend on the rank (all-reduce);
/// the plan must have been made with req.rank = this rank's position.
RankPlan placePlan(RankPlan plan, std::span<const int> order);

/// The step-plan family a collective runs when nothing better is known:
/// pairwise for all-to-all and send/recv, star for gather/scatter, ring else.
Algorithm usualAlgorithm(Collective collective);

/// Whether makePlan accepts (collective, algorithm).
bool algorithmSupports(Algorithm algorithm, Collective collective);

/// Splits `count` elements into `parts` contiguous pieces whose sizes differ by
/// at most one, larger ones first. Piece i is [chunkOffset(i), +chunkSize(i)).
size_t chunkOffset(size_t count, int parts, int i);
size_t chunkSize(size_t count, int parts, int i);

/// Ranks grouped by host, each host's ranks in the order of its intra-host ring.
using HostGroups = std::vector<std::vector<int>>;

/// Whether hierarchicalAllReduce can run: at least 2 hosts, each with the
/// same number (at least 2) of ranks.
bool hierarchicalFits(const HostGroups& hosts);

/// `rank`'s part of a hierarchical all-reduce of `count` elements (see
/// Algorithm::Hierarchical) as three plans over ranks, to run one after the
/// other with the same buffers: reduce-scatter inside the host, all-reduce of
/// this rank's shard across hosts, all-gather inside the host. In-place safe.
/// The cross-host phase spreads the shard over `channels` link sets (the
/// phases inside a host run on channel 0).
/// Throws InvalidArgument when !hierarchicalFits(hosts) or `rank` is in no group.
std::vector<RankPlan> hierarchicalAllReduce(const HostGroups& hosts, int rank, size_t count,
                                            int channels = 1);

/// Whether hostTreeAllReduce can run: at least 2 hosts, none empty.
bool hostTreeFits(const HostGroups& hosts);

/// `rank`'s part of a two-level tree all-reduce (Algorithm::HostTree) as three
/// plans to run one after the other: a chain reduce inside the host to its
/// first rank, a double binary tree all-reduce among the hosts' first ranks
/// (an empty plan elsewhere), a chain broadcast inside the host. `inPlace`:
/// the call's input and output are the same memory. Throws InvalidArgument
/// when !hostTreeFits(hosts) or `rank` is in no group.
std::vector<RankPlan> hostTreeAllReduce(const HostGroups& hosts, int rank, size_t count,
                                        bool inPlace);

/// Double binary tree over nranks: for tree t in {0,1}, the parent of `rank`
/// (-1 at the root) and up to two children (-1 when absent). Every rank is an
/// interior node in at most one of the two trees.
struct TreeLinks {
  int parent = -1;
  int children[2] = {-1, -1};
};
TreeLinks doubleBinaryTree(int rank, int nranks, int tree);

}  // namespace loom
