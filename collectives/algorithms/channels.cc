// Channels: a ring collective spread over several independent link sets.
// Piece k of the per-rank count (chunkOffset/chunkSize over the channel count)
// runs as its own ring on channel k. Each piece is a whole collective, so the
// pieces never wait for one another: while one channel's slice is being
// reduced, another's is on the wire, and each set of connections carries
// 1/channels of the bytes.
//
// All-reduce buffers share one layout, so a piece is a plain shift. All-gather
// output and reduce-scatter input hold one block per rank: piece k of block b
// lives at b * count + offset(k), so the piece's own blocks (b * size(k)) are
// moved there one by one.
#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "core/error.h"

namespace loom {

namespace {

/// Where a piece's buffers sit in the whole call's buffers.
struct PieceLayout {
  size_t count;        // the call's per-rank count
  size_t offset;       // the piece's first element within each rank's block
  size_t pieceCount;   // the piece's per-rank count (> 0)
  BufferId blocked;    // the buffer holding one block per rank, or Scratch if none
  size_t scratchBase;  // the scratch of earlier pieces
};

void place(BufferRef& ref, size_t elements, const PieceLayout& piece) {
  if (ref.buffer == BufferId::Scratch) {
    ref.offset += piece.scratchBase;
    return;
  }
  if (ref.buffer != piece.blocked) {
    ref.offset += piece.offset;
    return;
  }
  const size_t block = ref.offset / piece.pieceCount;
  const size_t within = ref.offset % piece.pieceCount;
  // Ring steps move one block (or a chunk of one); a range across two blocks
  // would not be contiguous once the blocks are spread out.
  if (within + elements > piece.pieceCount) {
    raise(ErrorCode::InternalError,
          "channel piece: a step of {} elements at {} crosses a block of {}", elements, ref.offset,
          piece.pieceCount);
  }
  ref.offset = block * piece.count + piece.offset + within;
}

BufferId blockedBuffer(Collective c) {
  if (c == Collective::AllGather) return BufferId::Output;
  if (c == Collective::ReduceScatter) return BufferId::Input;
  return BufferId::Scratch;
}

}  // namespace

RankPlan detail::channelPlan(const PlanRequest& req) {
  if (!ringSplitsOverChannels(req.collective) || req.algorithm != Algorithm::Ring) {
    raise(ErrorCode::InvalidArgument,
          "{} channels: only ring all-reduce, all-gather and reduce-scatter are split over "
          "channels, not {} {}",
          req.channels, toString(req.algorithm), toString(req.collective));
  }
  if (req.channels > kMaxPlanChannels) {
    raise(ErrorCode::InvalidArgument, "{} channels asked; a plan has at most {}", req.channels,
          kMaxPlanChannels);
  }
  RankPlan plan;
  for (int k = 0; k < req.channels; ++k) {
    PlanRequest pieceRequest = req;
    pieceRequest.channels = 1;
    pieceRequest.count = chunkSize(req.count, req.channels, k);
    if (pieceRequest.count == 0) continue;
    RankPlan part = makePlan(pieceRequest);
    const PieceLayout piece{req.count, chunkOffset(req.count, req.channels, k), pieceRequest.count,
                            blockedBuffer(req.collective), plan.scratchElements};
    for (auto& stream : part.streams) {
      for (Step& step : stream) {
        place(step.src, step.count, piece);
        place(step.dst, step.count, piece);
        step.channel = static_cast<uint8_t>(k);
      }
      plan.streams.push_back(std::move(stream));
    }
    plan.scratchElements += part.scratchElements;
  }
  return plan;
}

}  // namespace loom
