#include <algorithm>
#include <limits>

#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "core/error.h"

namespace loom {
namespace {

void validate(const PlanRequest& req) {
  if (req.nranks < 1) {
    raise(ErrorCode::InvalidArgument, "plan for {} needs at least one rank, got nranks {}",
          toString(req.collective), req.nranks);
  }
  if (req.rank < 0 || req.rank >= req.nranks) {
    raise(ErrorCode::InvalidArgument, "plan for {}: rank {} out of range for {} ranks",
          toString(req.collective), req.rank, req.nranks);
  }
  // Root is checked for every collective: callers that ignore it leave it 0.
  if (req.root < 0 || req.root >= req.nranks) {
    raise(ErrorCode::InvalidArgument, "plan for {}: root/peer {} out of range for {} ranks",
          toString(req.collective), req.root, req.nranks);
  }
  if (req.channels < 1) {
    raise(ErrorCode::InvalidArgument, "plan for {}: {} channels (at least 1)",
          toString(req.collective), req.channels);
  }
  if (!algorithmSupports(req.algorithm, req.collective)) {
    raise(ErrorCode::InvalidArgument, "algorithm {} does not implement {}", toString(req.algorithm),
          toString(req.collective));
  }
  // Buffers of nranks*count elements must be addressable.
  if (req.count > std::numeric_limits<size_t>::max() / static_cast<size_t>(req.nranks)) {
    raise(ErrorCode::InvalidArgument, "plan for {}: count {} times {} ranks overflows",
          toString(req.collective), req.count, req.nranks);
  }
}

}  // namespace

// Families emit steps for every chunk, including empty ones when count is small.
void detail::dropEmpty(RankPlan& plan) {
  for (auto& stream : plan.streams) {
    std::erase_if(stream, [](const Step& s) { return s.count == 0; });
  }
  std::erase_if(plan.streams, [](const std::vector<Step>& s) { return s.empty(); });
}

namespace {

/// Every (algorithm, collective) pair makePlan accepts, and its builder.
/// Direct runs on a shared arena, and Hierarchical and HostTree as phases
/// (hierarchical.cc), so none of them is a plan here.
struct Implementation {
  Algorithm algorithm;
  Collective collective;
  detail::PlanBuilder build;
};

detail::PlanBuilder builderOf(Algorithm algorithm, Collective collective) {
  using A = Algorithm;
  using C = Collective;
  static constexpr Implementation kImplementations[] = {
      {A::Ring, C::AllReduce, detail::ringAllReduce},
      {A::Ring, C::AllGather, detail::ringAllGather},
      {A::Ring, C::ReduceScatter, detail::ringReduceScatter},
      {A::Ring, C::Broadcast, detail::ringBroadcast},
      {A::Ring, C::Reduce, detail::ringReduce},
      {A::Tree, C::AllReduce, detail::treeAllReduce},
      {A::Tree, C::Broadcast, detail::treeBroadcast},
      {A::Tree, C::Reduce, detail::treeReduce},
      {A::Pairwise, C::AllToAll, detail::pairwiseAllToAll},
      {A::Pairwise, C::Send, detail::pairwiseSend},
      {A::Pairwise, C::Recv, detail::pairwiseRecv},
      {A::Star, C::Gather, detail::starGather},
      {A::Star, C::Scatter, detail::starScatter}};
  for (const Implementation& i : kImplementations) {
    if (i.algorithm == algorithm && i.collective == collective) return i.build;
  }
  return nullptr;
}

}  // namespace

bool algorithmSupports(Algorithm algorithm, Collective collective) {
  return builderOf(algorithm, collective) != nullptr;
}

Algorithm usualAlgorithm(Collective collective) {
  switch (collective) {
    case Collective::AllToAll:
    case Collective::Send:
    case Collective::Recv:
      return Algorithm::Pairwise;
    case Collective::Gather:
    case Collective::Scatter:
      return Algorithm::Star;
    default:
      return Algorithm::Ring;
  }
}

RankPlan makePlan(const PlanRequest& req) {
  validate(req);
  if (req.channels > 1) return detail::channelPlan(req);
  RankPlan plan = builderOf(req.algorithm, req.collective)(req);
  detail::dropEmpty(plan);
  return plan;
}

}  // namespace loom
