// Channels: an all-reduce spread over several independent link sets. Piece k
// of the count (chunkOffset/chunkSize over the channel count) runs as its own
// ring on channel k. Each piece is a whole all-reduce, so the pieces never
// wait for one another: while one channel's slice is being reduced, another's
// is on the wire, and each set of connections carries 1/channels of the bytes.
#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "core/error.h"

namespace loom {

RankPlan detail::channelPlan(const PlanRequest& req) {
  if (req.collective != Collective::AllReduce || req.algorithm != Algorithm::Ring) {
    raise(ErrorCode::InvalidArgument,
          "{} channels: only the ring all-reduce is split over channels, not {} {}", req.channels,
          toString(req.algorithm), toString(req.collective));
  }
  if (req.channels > kMaxPlanChannels) {
    raise(ErrorCode::InvalidArgument, "{} channels asked; a plan has at most {}", req.channels,
          kMaxPlanChannels);
  }
  RankPlan plan;
  for (int k = 0; k < req.channels; ++k) {
    PlanRequest piece = req;
    piece.channels = 1;
    piece.count = chunkSize(req.count, req.channels, k);
    RankPlan part = ringPlan(piece);
    dropEmpty(part);
    // All-reduce input and output share one layout, so one shift places both.
    const size_t offset = chunkOffset(req.count, req.channels, k);
    for (auto& stream : part.streams) {
      for (Step& step : stream) {
        for (BufferRef* ref : {&step.src, &step.dst}) {
          ref->offset += ref->buffer == BufferId::Scratch ? plan.scratchElements : offset;
        }
        step.channel = static_cast<uint8_t>(k);
      }
      plan.streams.push_back(std::move(stream));
    }
    plan.scratchElements += part.scratchElements;
  }
  return plan;
}

}  // namespace loom
