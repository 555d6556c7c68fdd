#include "collectives/algorithms.h"
#include "comm/operation.h"
#include "core/log.h"

namespace loom {
namespace {

bool directSupports(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather ||
         c == Collective::ReduceScatter || c == Collective::Broadcast || c == Collective::Reduce;
}

Algorithm defaultAlgorithm(Collective c) {
  switch (c) {
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

}  // namespace

// A size/locality rule for now; the topology issue replaces it with a cost model.
Algorithm chooseAlgorithm(const Comm& comm, Collective c, size_t bytes) {
  const bool directOk = comm.allLocal && directSupports(c);
  if (comm.config.algorithm) {
    const Algorithm asked = *comm.config.algorithm;
    if (asked == Algorithm::Direct ? directOk : algorithmSupports(asked, c)) return asked;
    // LOOM_ALGO names one algorithm for all collectives; those it cannot run
    // fall through to the default rule.
  }
  if (directOk && bytes <= comm.config.directMaxBytes) return Algorithm::Direct;
  if (c == Collective::AllReduce && comm.nranks > 2 && bytes <= comm.config.treeMaxBytes) {
    return Algorithm::Tree;
  }
  return defaultAlgorithm(c);
}

}  // namespace loom
