// Communication of a layout per step, each collective costed by the tuner
// (tuner::choose on the group's TunerTopology), so a better topology model or
// tuner improves plans too:
//
//   TP  (4 + 2c) all-reduces per layer and micro-batch of b·s·h activations
//       (2 in forward, 2 in backward, 2 more when the forward is recomputed),
//       on the critical path.
//   PP  per micro-batch and direction one send of b·s·h/t per TP rank to the
//       next stage (Megatron's scatter/gather) plus the all-gather that
//       reassembles it; 2·(m + p - 1) of them lie on the 1F1B critical path.
//   DP  one all-reduce of the stage's gradients per step (ZeRO-1:
//       reduce-scatter of gradients, all-gather of updated weights), at the
//       codec's wire bytes per element; a share `dpOverlap` hides behind
//       backward.
#pragma once

#include "layout.h"
#include "model_shape.h"
#include "rank_placement.h"

namespace loom::plan {

struct CommOptions {
  double topkFraction = 0.01;  ///< share of elements top-k keeps
  double dpOverlap = 0.0;      ///< share of DP time hidden behind backward, 0..1
};

struct CommTimes {
  double tpPerMicroBatch = 0;  ///< seconds of TP all-reduces per micro-batch, slowest stage
  double ppPerTransfer = 0;    ///< seconds of one stage-to-stage transfer
  double dpPerStep = 0;        ///< seconds of DP collectives per step, before overlap
};

/// Wire bytes per gradient element for a codec: int8 sends a byte plus a
/// 4-byte scale per 256 elements; top-k 8 bytes (value, index) per kept one.
double wireBytesPerElement(const ModelShape& m, Compression c, double topkFraction);

/// Global ranks of rank 0's TP group, DP group, and its next pipeline stage.
std::vector<int> tpGroupOfRankZero(const Layout& l);
std::vector<int> dpGroupOfRankZero(const Layout& l);

CommTimes communicationTimes(const ModelShape& m, const Layout& l, const CommOptions& options,
                             RankPlacement& placement);

}  // namespace loom::plan
