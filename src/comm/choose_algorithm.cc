// Which algorithm (and slice size) runs a collective. Ranks spanning hosts ask
// the tuner (src/tuner: an alpha-beta model over the communicator's hosts and
// network, see docs/tuner.md); on one host the direct algorithm over the
// shared arena is what the model picks anyway, so a size/locality rule
// decides without building a model. LOOM_ALGO, LOOM_CHUNK_SIZE and
// LOOM_NCHANNELS override both.
#include "collectives/algorithms.h"
#include "comm/operation.h"
#include "core/log.h"
#include "tuner/tuner.h"

namespace loom {
namespace {

bool directSupports(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather ||
         c == Collective::ReduceScatter || c == Collective::Broadcast || c == Collective::Reduce;
}

bool modelled(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter;
}

Algorithm ruleOfThumb(const Comm& comm, Collective c, size_t bytes) {
  const bool directOk = comm.allLocal && directSupports(c);
  if (directOk && bytes <= comm.config.directMaxBytes) return Algorithm::Direct;
  if (c == Collective::AllReduce && comm.nranks > 2 && bytes <= comm.config.treeMaxBytes) {
    return Algorithm::Tree;
  }
  return usualAlgorithm(c);
}

}  // namespace

AlgorithmChoice chooseAlgorithm(const Comm& comm, Collective c, size_t bytes) {
  AlgorithmChoice choice{Algorithm::Ring, comm.config.sliceBytes()};
  // Whether `a` can run `c` on this communicator's ranks and hosts.
  const auto canRun = [&](Algorithm a) {
    switch (a) {
      case Algorithm::Direct:
        return comm.allLocal && directSupports(c);
      case Algorithm::Hierarchical:
        return c == Collective::AllReduce && hierarchicalFits(comm.hostGroups);
      case Algorithm::HostTree:
        return c == Collective::AllReduce && hostTreeFits(comm.hostGroups);
      default:
        return algorithmSupports(a, c);
    }
  };
  if (comm.config.algorithm) {
    const Algorithm asked = *comm.config.algorithm;
    if (canRun(asked)) {
      choice.algorithm = asked;
      return choice;
    }
    // LOOM_ALGO names one algorithm for all collectives; those it cannot run
    // fall through to the default rule.
  }
  if (comm.tuner == nullptr || !modelled(c)) {
    choice.algorithm = ruleOfThumb(comm, c, bytes);
    return choice;
  }
  tuner::Request request;
  request.collective = c;
  request.bytes = bytes;
  request.maxChunkBytes = comm.config.sliceBytes();
  if (comm.config.chunkBytes) request.overrides.chunkBytes = comm.config.chunkBytes;
  // The host executor runs one channel (docs/tuner.md); more are modelled only.
  request.overrides.channels = 1;
  const tuner::Choice picked = tuner::choose(*comm.tuner, request);
  choice.algorithm = picked.candidate.algorithm;
  if (!canRun(choice.algorithm)) choice.algorithm = Algorithm::Ring;
  if (picked.candidate.chunkBytes > 0) {
    choice.sliceBytes = std::min(choice.sliceBytes, picked.candidate.chunkBytes);
  }
  return choice;
}

}  // namespace loom
