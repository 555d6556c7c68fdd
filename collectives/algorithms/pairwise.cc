// Pairwise exchanges: all-to-all, and point-to-point send/recv.
#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "collectives/algorithms/steps.h"

namespace loom::detail {
namespace {

using namespace steps;

// In round k rank r exchanges blocks with peer (k - r) mod n, which pairs
// ranks symmetrically: r's peer p has r as its peer in the same round. Over
// n rounds each rank meets every peer once and itself once (its own block).
// Because a round sends block p before receiving into block p, slice by
// slice, the exchange is safe in place without scratch, which a shift
// schedule (send to r+k, receive from r-k) is not.
std::vector<Step> allToAll(const PlanRequest& req) {
  const int n = req.nranks;
  const size_t count = req.count;
  std::vector<Step> s;
  for (int k = 0; k < n; ++k) {
    const int peer = wrap(k - req.rank, n);
    const size_t at = block(peer, count);
    if (peer == req.rank) {
      if (!req.inPlace) s.push_back(copy(in(at), out(at), count));
    } else {
      s.push_back(send(peer, in(at), count));
      s.push_back(recv(peer, out(at), count));
    }
  }
  return s;
}

}  // namespace

RankPlan pairwiseAllToAll(const PlanRequest& req) { return oneStream(allToAll(req)); }
RankPlan pairwiseSend(const PlanRequest& req) {
  return oneStream({send(req.root, in(0), req.count)});
}
RankPlan pairwiseRecv(const PlanRequest& req) {
  return oneStream({recv(req.root, out(0), req.count)});
}

}  // namespace loom::detail
