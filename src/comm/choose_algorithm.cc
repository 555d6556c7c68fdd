// Which algorithm (and slice size) runs a collective. Ranks spanning hosts ask
// the tuner (src/tuner: an alpha-beta model over the communicator's hosts and
// network, see docs/tuner.md); on one host the direct algorithm over the
// shared arena is what the model picks anyway, so a size/locality rule
// decides without building a model. LOOM_ALGO, LOOM_CHUNK_SIZE and
// LOOM_NCHANNELS override both. An all-reduce over the network then spreads
// over as many channels (link sets) as fill it (tuner/network_channels.h).
#include "collectives/algorithms.h"
#include "comm/operation.h"
#include "core/log.h"
#include "tuner/network_channels.h"
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

/// A small all-reduce climbs and descends the double binary tree: about
/// 2 log2(n) hops of latency where the ring takes 2 (n - 1).
bool treeFits(const Comm& comm, Collective c, size_t bytes) {
  return c == Collective::AllReduce && comm.nranks > 2 && bytes <= comm.config.treeMaxBytes;
}

Algorithm ruleOfThumb(const Comm& comm, Collective c, size_t bytes) {
  const bool directOk = comm.allLocal && directSupports(c);
  if (directOk && bytes <= comm.config.directMaxBytes) return Algorithm::Direct;
  if (treeFits(comm, c, bytes)) return Algorithm::Tree;
  return usualAlgorithm(c);
}

/// Link sets for this call: the ring all-reduce, all-gather and reduce-scatter
/// may use those that reach every peer, the hierarchical all-reduce's
/// cross-host phase those over the network. LOOM_NCHANNELS asks for all of
/// them, else as many as fill the network; either way no piece (of the whole
/// message: all ranks' blocks) is below LOOM_CHANNEL_MIN bytes.
int channelsFor(const Comm& comm, Collective c, Algorithm a, size_t bytes) {
  const int available = a == Algorithm::Ring && ringSplitsOverChannels(c) ? comm.ringChannels
                        : a == Algorithm::Hierarchical && c == Collective::AllReduce
                            ? comm.networkChannels
                            : 1;
  if (available <= 1) return 1;
  int wanted = 1;
  if (comm.config.channels) {
    wanted = available;
  } else if (comm.tuner != nullptr) {
    wanted = tuner::channelsToFill(comm.tuner->networkGBps, comm.tuner->connectionGBps, available);
  }
  return tuner::channelsForBytes(wanted, bytes, comm.config.channelMinBytes);
}

}  // namespace

Algorithm chooseWalkAlgorithm(const Comm& comm, Collective c, size_t bytes) {
  // LOOM_ALGO may name the tree for all-reduce and broadcast, whose tree
  // plans need no scratch (a tree reduce's interior ranks do), or the ring.
  if (const std::optional<Algorithm> asked = comm.config.algorithm) {
    if (*asked == Algorithm::Ring && algorithmSupports(Algorithm::Ring, c)) return Algorithm::Ring;
    if (*asked == Algorithm::Tree && (c == Collective::AllReduce || c == Collective::Broadcast)) {
      return Algorithm::Tree;
    }
  }
  return treeFits(comm, c, bytes) ? Algorithm::Tree : usualAlgorithm(c);
}

PlanRequest planRequestFor(const Comm& comm, const Operation& op, Algorithm algorithm,
                           int channels) {
  PlanRequest req;
  req.collective = op.collective;
  req.algorithm = algorithm;
  req.rank = comm.rank;
  req.nranks = comm.nranks;
  req.root = op.root;
  req.count = op.count;
  req.inPlace = isInPlace(comm, op);
  req.channels = channels;
  return req;
}

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
  const auto withChannels = [&](AlgorithmChoice chosen) {
    chosen.channels = channelsFor(comm, c, chosen.algorithm, bytes);
    return chosen;
  };
  if (comm.config.algorithm) {
    const Algorithm asked = *comm.config.algorithm;
    if (canRun(asked)) {
      choice.algorithm = asked;
      return withChannels(choice);
    }
    // LOOM_ALGO names one algorithm for all collectives; those it cannot run
    // fall through to the default rule.
  }
  if (comm.tuner == nullptr || !modelled(c)) {
    choice.algorithm = ruleOfThumb(comm, c, bytes);
    return withChannels(choice);
  }
  tuner::Request request;
  request.collective = c;
  request.bytes = bytes;
  request.maxChunkBytes = comm.config.sliceBytes();
  if (comm.config.chunkBytes) request.overrides.chunkBytes = comm.config.chunkBytes;
  // The model's channels are rings over distinct paths; between hosts there is
  // one path, which channels share: the algorithm is chosen as for one, and
  // the channel count from what one connection carries (channelsFor).
  request.overrides.channels = 1;
  const tuner::Choice picked = tuner::choose(*comm.tuner, request);
  choice.algorithm = picked.candidate.algorithm;
  if (!canRun(choice.algorithm)) choice.algorithm = Algorithm::Ring;
  if (picked.candidate.chunkBytes > 0) {
    choice.sliceBytes = std::min(choice.sliceBytes, picked.candidate.chunkBytes);
  }
  return withChannels(choice);
}

}  // namespace loom
