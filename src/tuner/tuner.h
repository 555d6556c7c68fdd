// The tuner: picks algorithm, chunk size and channel count for one call by
// minimising the cost model (cost_model.h) over the candidates, and honours
// the user's overrides (LOOM_ALGO, LOOM_CHUNK_SIZE, LOOM_NCHANNELS), which the
// caller reads from the environment and passes in as values.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "collectives/plan.h"
#include "topology/graph.h"
#include "tuner/cost_model.h"
#include "tuner/tuner_topology.h"

namespace loom::tuner {

struct Overrides {
  std::optional<Algorithm> algorithm;  ///< LOOM_ALGO
  std::optional<size_t> chunkBytes;    ///< LOOM_CHUNK_SIZE
  std::optional<int> channels;         ///< LOOM_NCHANNELS (clamped to the rings found)
};

struct Request {
  Collective collective = Collective::AllReduce;
  size_t bytes = 0;  ///< count * element size, as in PlanRequest
  /// Largest chunk the links can carry in one message (the transports' slot).
  size_t maxChunkBytes = size_t{256} << 10;
  Overrides overrides;
};

struct Choice {
  Candidate candidate;
  /// Predicted time; NaN when the model does not cover the choice (an
  /// overridden algorithm, or a collective outside the model).
  double microseconds = 0.0;
};

/// Every candidate the model covers for this request, each with its best
/// chunk (or the overridden one), in a fixed order: direct, tree, ring with
/// 1..maxChannels channels (or the overridden count), hierarchical. Empty when the
/// collective is outside the model.
std::vector<Choice> modelledCandidates(const TunerTopology& topology, const Request& request);

/// The fastest modelled candidate; with an algorithm override, that algorithm
/// (its best modelled chunk and channels where covered). A collective outside
/// the model gets its usual family (Pairwise for all-to-all and send/recv,
/// Star for gather/scatter, Ring otherwise) with NaN time. Throws
/// Error(InvalidArgument) for a zero maxChunkBytes or an overridden chunk
/// below kModelElementBytes.
Choice choose(const TunerTopology& topology, const Request& request);

/// GB/s one channel of Loom's kernel path moves between two GPUs: one thread
/// block walking its ring. Measured on one H200 (2026-12-04, all-reduce of
/// 256 MiB, 8 ranks of 8 channels: 74.8 GB/s bus bandwidth, 9.35 per
/// channel; docs/performance.md). So an NVSwitch's 450 GB/s wants many
/// channels, and the ring search adds them while the total grows.
inline constexpr double kKernelChannelGBps = 9.35;

/// How Loom's own runs see hops: RankGraph's defaults, each channel capped
/// at kKernelChannelGBps.
topo::HopOptions loomHopOptions();

/// Convenience for the communicator: ranks placed on `rankNodes` of
/// `topology` (empty: defaultRankNodes), rings searched, model ready for
/// choose(). The result keeps no reference to `topology`. Another library's
/// channels (the planner's NCCL runs) pass their own `hops`.
TunerTopology tunerTopologyFor(const topo::Topology& topology, const std::vector<int>& rankNodes,
                               const topo::HopOptions& hops = loomHopOptions());

}  // namespace loom::tuner
