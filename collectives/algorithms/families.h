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

/// Double binary tree for rooted collectives: `root` sits above both trees,
/// which are doubleBinaryTree over the other nranks-1 ranks, so every rank but
/// the root is interior in at most one tree. The root's only child in tree t
/// is that tree's top; its parent is -1.
TreeLinks rootedDoubleBinaryTree(int rank, int nranks, int root, int tree);

}  // namespace loom::detail
