#include "tuner/tuner.h"

#include <cmath>
#include <limits>

#include "collectives/algorithms.h"
#include "core/error.h"

namespace loom::tuner {
namespace {

constexpr size_t kSmallestChunk = size_t{4} << 10;

// Chunks to try: powers of two from 4 KiB up to the largest the links carry
// (and never beyond what one step needs), or just the overridden one.
std::vector<size_t> chunkCandidates(const Request& r) {
  if (r.overrides.chunkBytes) return {*r.overrides.chunkBytes};
  std::vector<size_t> out;
  const size_t top = std::max(kModelElementBytes, r.maxChunkBytes);
  for (size_t c = std::min(kSmallestChunk, top); c < top; c *= 2) {
    out.push_back(c);
    if (c >= r.bytes) return out;
  }
  out.push_back(top);
  return out;
}

std::vector<int> channelCandidates(const TunerTopology& t, const Request& r, Algorithm a) {
  if (a != Algorithm::Ring) return {1};
  if (r.overrides.channels) return {std::clamp(*r.overrides.channels, 1, t.maxChannels())};
  std::vector<int> out;
  for (int c = 1; c <= t.maxChannels(); ++c) out.push_back(c);
  return out;
}

void checkRequest(const Request& r) {
  if (r.maxChunkBytes == 0)
    raise(ErrorCode::InvalidArgument, "tuner request with a 0-byte chunk limit");
  if (r.overrides.chunkBytes && *r.overrides.chunkBytes < kModelElementBytes) {
    raise(ErrorCode::InvalidArgument, "chunk size {} B is below {} B", *r.overrides.chunkBytes,
          kModelElementBytes);
  }
}

}  // namespace

std::vector<Choice> modelledCandidates(const TunerTopology& topology, const Request& request) {
  checkRequest(request);
  std::vector<Choice> out;
  for (Algorithm a : {Algorithm::Direct, Algorithm::Tree, Algorithm::Ring, Algorithm::Hierarchical,
                      Algorithm::HostTree}) {
    if (!modelled(topology, request.collective, a)) continue;
    for (int channels : channelCandidates(topology, request, a)) {
      Choice best{{a, channels, 0}, std::numeric_limits<double>::infinity()};
      for (size_t chunk : chunkCandidates(request)) {
        const Candidate c{a, channels, chunk};
        const double t = predictMicroseconds(topology, request.collective, request.bytes, c);
        if (t < best.microseconds) best = {c, t};
      }
      out.push_back(best);
    }
  }
  return out;
}

Choice choose(const TunerTopology& topology, const Request& request) {
  const auto forced = request.overrides.algorithm;
  std::optional<Choice> best;
  for (const Choice& c : modelledCandidates(topology, request)) {
    if (forced && c.candidate.algorithm != *forced) continue;
    if (!best || c.microseconds < best->microseconds) best = c;
  }
  if (best) return *best;
  const size_t chunk = request.overrides.chunkBytes.value_or(request.maxChunkBytes);
  const Algorithm algorithm = forced.value_or(usualAlgorithm(request.collective));
  return {{algorithm, 1, chunk}, std::nan("")};
}

topo::HopOptions loomHopOptions() {
  topo::HopOptions options;
  options.channelBandwidth = kKernelChannelGBps;
  return options;
}

TunerTopology tunerTopologyFor(const topo::Topology& topology, const std::vector<int>& rankNodes,
                               const topo::HopOptions& hops) {
  const topo::RankGraph graph(
      topology, rankNodes.empty() ? topo::defaultRankNodes(topology) : rankNodes, hops);
  return describeTopology(graph, topo::searchRings(graph));
}

}  // namespace loom::tuner
