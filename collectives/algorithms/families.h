// The algorithm families behind makePlan. Internal to collectives/algorithms:
// make_plan.cc validates the request and dispatches here, so each builder may
// assume 0 <= rank, root < nranks.
#pragma once

#include "collectives/algorithms.h"

namespace loom::detail {

/// One rank's plan of one collective by one algorithm: makePlan's table
/// (make_plan.cc) names a builder for every pair it accepts.
using PlanBuilder = RankPlan (*)(const PlanRequest& req);

// Ring (ring.cc): one stream.
RankPlan ringAllReduce(const PlanRequest& req);
RankPlan ringAllGather(const PlanRequest& req);
RankPlan ringReduceScatter(const PlanRequest& req);
RankPlan ringBroadcast(const PlanRequest& req);
RankPlan ringReduce(const PlanRequest& req);
// Double binary tree (tree.cc): half of the count on each tree, a stream each.
RankPlan treeAllReduce(const PlanRequest& req);
RankPlan treeBroadcast(const PlanRequest& req);
RankPlan treeReduce(const PlanRequest& req);
// Pairwise exchanges (pairwise.cc) and the star through the root (star.cc).
RankPlan pairwiseAllToAll(const PlanRequest& req);
RankPlan pairwiseSend(const PlanRequest& req);
RankPlan pairwiseRecv(const PlanRequest& req);
RankPlan starGather(const PlanRequest& req);
RankPlan starScatter(const PlanRequest& req);
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
