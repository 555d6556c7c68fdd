#include <span>

#include "collectives/algorithms.h"
#include "core/error.h"

namespace loom {

RankPlan placePlan(RankPlan plan, std::span<const int> order) {
  const auto place = [&](int position) {
    if (position < 0) return position;
    if (static_cast<size_t>(position) >= order.size()) {
      raise(ErrorCode::InternalError, "plan peer {} outside a placement of {} ranks", position,
            order.size());
    }
    return order[static_cast<size_t>(position)];
  };
  for (auto& stream : plan.streams) {
    for (Step& step : stream) {
      step.sendPeer = place(step.sendPeer);
      step.recvPeer = place(step.recvPeer);
    }
  }
  return plan;
}

}  // namespace loom
