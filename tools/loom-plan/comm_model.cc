#include "comm_model.h"

#include <cmath>

#include "core/error.h"
#include "memory_model.h"
#include "stage_shape.h"
#include "tuner/tuner.h"

namespace loom::plan {
namespace {

double collectiveSeconds(RankPlacement& placement, const std::vector<int>& ranks,
                         Collective collective, double bytes) {
  if (ranks.size() < 2 || bytes <= 0) return 0.0;
  tuner::Request request;
  request.collective = collective;
  // The model's element is 4 bytes; round so tiny compressed payloads stay legal.
  const auto elements = static_cast<size_t>(std::ceil(bytes / tuner::kModelElementBytes));
  request.bytes = std::max<size_t>(elements, 1) * tuner::kModelElementBytes;
  const tuner::Choice choice = tuner::choose(placement.group(ranks), request);
  if (std::isnan(choice.microseconds)) {
    raise(ErrorCode::InternalError, "the tuner does not model {} on a group of {} ranks",
          toString(collective), ranks.size());
  }
  return choice.microseconds * 1e-6;
}

double sendSeconds(RankPlacement& placement, int from, int to, double bytes) {
  const tuner::TunerTopology& pair = placement.group({from, to});
  const LinkCost cost = pair.pair(0, 1);
  return (cost.latency + bytes / (cost.bandwidth * 1e3)) * 1e-6;
}

}  // namespace

double wireBytesPerElement(const ModelShape& m, Compression c, double topkFraction) {
  switch (c) {
    case Compression::Int8:
      return 1.0 + 4.0 / 256;
    case Compression::TopK:
      return 8.0 * topkFraction;
    case Compression::None:
      break;
  }
  return m.numerics.gradBytes;
}

std::vector<int> tpGroupOfRankZero(const Layout& l) {
  std::vector<int> ranks(l.tp);
  for (int i = 0; i < l.tp; ++i) ranks[i] = i;
  return ranks;
}

std::vector<int> dpGroupOfRankZero(const Layout& l) {
  std::vector<int> ranks(l.dp);
  for (int i = 0; i < l.dp; ++i) ranks[i] = i * l.tp;
  return ranks;
}

CommTimes communicationTimes(const ModelShape& m, const Layout& l, const CommOptions& options,
                             RankPlacement& placement) {
  CommTimes times;
  const double boundaryBytes =
      static_cast<double>(l.microBatchSize) * m.seq * m.hidden * m.numerics.activationBytes;
  const std::vector<int> tpGroup = tpGroupOfRankZero(l);
  if (l.tp > 1) {
    const int layers = layersOnStage(m.layers, 0, l.pp);
    const int perLayer = l.checkpoint ? 6 : 4;
    times.tpPerMicroBatch =
        layers * perLayer *
        collectiveSeconds(placement, tpGroup, Collective::AllReduce, boundaryBytes);
  }
  if (l.pp > 1) {
    const int nextStage = l.tp * l.dp;
    times.ppPerTransfer =
        sendSeconds(placement, 0, nextStage, boundaryBytes / l.tp) +
        collectiveSeconds(placement, tpGroup, Collective::AllGather, boundaryBytes / l.tp);
  }
  if (l.dp > 1) {
    const std::vector<int> dpGroup = dpGroupOfRankZero(l);
    const double params = memoryPerGpu(m, l).params;
    const double gradBytes = params * wireBytesPerElement(m, l.compression, options.topkFraction);
    if (l.zero1) {
      times.dpPerStep =
          collectiveSeconds(placement, dpGroup, Collective::ReduceScatter, gradBytes / l.dp) +
          collectiveSeconds(placement, dpGroup, Collective::AllGather,
                            params * m.numerics.weightBytes / l.dp);
    } else {
      times.dpPerStep = collectiveSeconds(placement, dpGroup, Collective::AllReduce, gradBytes);
    }
  }
  return times;
}

}  // namespace loom::plan
