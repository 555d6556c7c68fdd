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

bool algorithmSupports(Algorithm algorithm, Collective collective) {
  switch (algorithm) {
    case Algorithm::Ring:
      return collective == Collective::AllReduce || collective == Collective::AllGather ||
             collective == Collective::ReduceScatter || collective == Collective::Broadcast ||
             collective == Collective::Reduce;
    case Algorithm::Tree:
      return collective == Collective::AllReduce || collective == Collective::Broadcast ||
             collective == Collective::Reduce;
    case Algorithm::Pairwise:
      return collective == Collective::AllToAll || collective == Collective::Send ||
             collective == Collective::Recv;
    case Algorithm::Star:
      return collective == Collective::Gather || collective == Collective::Scatter;
    case Algorithm::Direct:        // runs on a shared arena, not as steps
    case Algorithm::Hierarchical:  // these two run as phases (hierarchical.cc), not as one plan
    case Algorithm::HostTree:
      return false;
  }
  return false;
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
  RankPlan plan;
  switch (req.algorithm) {
    case Algorithm::Ring:
      plan = detail::ringPlan(req);
      break;
    case Algorithm::Tree:
      plan = detail::treePlan(req);
      break;
    case Algorithm::Pairwise:
      plan = detail::pairwisePlan(req);
      break;
    case Algorithm::Star:
      plan = detail::starPlan(req);
      break;
    case Algorithm::Direct:
    case Algorithm::Hierarchical:
    case Algorithm::HostTree:
      break;  // rejected by validate
  }
  detail::dropEmpty(plan);
  return plan;
}

}  // namespace loom
