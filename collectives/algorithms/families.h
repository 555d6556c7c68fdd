// The algorithm families behind makePlan. Internal to collectives/algorithms:
// make_plan.cc validates the request and dispatches here, so each family may
// assume 0 <= rank, root < nranks and a supported collective.
#pragma once

#include "collectives/algorithms.h"

namespace loom::detail {

RankPlan ringPlan(const PlanRequest& req);
RankPlan treePlan(const PlanRequest& req);
RankPlan pairwisePlan(const PlanRequest& req);
RankPlan starPlan(const PlanRequest& req);
/// req.channels > 1: piece k of the (per-rank) count as a ring of the same
/// collective on channel k. Throws InvalidArgument for anything but the ring
/// all-reduce, all-gather and reduce-scatter.
RankPlan channelPlan(const PlanRequest& req);

/// The halves of the ring all-reduce over `nranks` ring positions, chunks
/// being chunkOffset/chunkSize of `count`. Reduce-scatter: position r ends
/// with chunk r reduced from every input in out(chunkOffset(r)) (`finalize`
/// on that last step). All-gather: position r starts with chunk r in the
/// output and ends with every chunk. nranks >= 2.
std::vector<Step> ringReduceScatterChunks(int rank, int nranks, size_t count, bool finalize);
std::vector<Step> ringAllGatherChunks(int rank, int nranks, size_t count);

/// Removes steps of zero elements (and streams left empty). Both ends of a
/// transfer drop the same ones because matched steps have equal counts.
void dropEmpty(RankPlan& plan);

/// Double binary tree for rooted collectives: `root` sits above both trees,
/// which are doubleBinaryTree over the other nranks-1 ranks, so every rank but
/// the root is interior in at most one tree. The root's only child in tree t
/// is that tree's top; its parent is -1.
TreeLinks rootedDoubleBinaryTree(int rank, int nranks, int root, int tree);

}  // namespace loom::detail
