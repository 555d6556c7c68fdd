// Gather and scatter through the root: every other rank talks to the root
// only, and the root visits its peers in rank order starting after itself.
#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "collectives/algorithms/steps.h"

namespace loom::detail {
namespace {

using namespace steps;

std::vector<Step> gather(const PlanRequest& req) {
  const size_t count = req.count;
  if (req.rank != req.root) return {send(req.root, in(0), count)};
  std::vector<Step> s;
  // In place, the root's input already is output block `root`.
  if (!req.inPlace) s.push_back(copy(in(0), out(block(req.root, count)), count));
  for (int k = 1; k < req.nranks; ++k) {
    const int peer = wrap(req.root + k, req.nranks);
    s.push_back(recv(peer, out(block(peer, count)), count));
  }
  return s;
}

std::vector<Step> scatter(const PlanRequest& req) {
  const size_t count = req.count;
  if (req.rank != req.root) return {recv(req.root, out(0), count)};
  std::vector<Step> s;
  for (int k = 1; k < req.nranks; ++k) {
    const int peer = wrap(req.root + k, req.nranks);
    s.push_back(send(peer, in(block(peer, count)), count));
  }
  // In place, the root's output already is input block `root`.
  if (!req.inPlace) s.push_back(copy(in(block(req.root, count)), out(0), count));
  return s;
}

}  // namespace

RankPlan starGather(const PlanRequest& req) { return oneStream(gather(req)); }
RankPlan starScatter(const PlanRequest& req) { return oneStream(scatter(req)); }

}  // namespace loom::detail
