// Pieces the compressed collectives share (compressed_*.cc): how a tensor is
// cut into per-rank chunks and padded encoded blocks, scratch reuse, and the
// steps every algorithm ends with. Internal to src/compressed.
#pragma once

#include <span>
#include <vector>

#include "collectives/algorithms.h"
#include "comm/operation.h"
#include "compression/codec.h"

namespace loom::compressed {

/// A tensor of `total` elements cut into `chunks` (= nranks) near-equal pieces,
/// each encoded into a block of `blockBytes` (padded to the largest chunk's
/// encoding, so every rank moves the same byte counts).
struct Layout {
  size_t chunks = 1;
  size_t blockBytes = 0;
  size_t total = 0;
  size_t offset(int j) const { return chunkOffset(total, static_cast<int>(chunks), j); }
  size_t size(int j) const { return chunkSize(total, static_cast<int>(chunks), j); }
};

/// This call's first stochastic-rounding counter; advances the
/// communicator's past every counter one call may use. Every rank makes the
/// same calls in the same order, so counters agree across ranks and paths.
uint64_t takeCounters(Comm& comm);
/// The counter of the owners' final encoding, after the reduce-scatter's.
uint64_t finalCounter(CompressedAlgorithm algorithm, int nranks, uint64_t counter);

/// The all-reduce layout: chunk 0 is the largest.
Layout layoutFor(const Codec& codec, size_t total, int nranks);

/// An ordinary collective (or send/recv) of `count` bytes.
Operation byteOperation(Collective c, const void* send, void* recv, size_t count, int root = 0);

/// Grows `v` to at least `n` elements; never shrinks, so steady state allocates nothing.
template <typename T>
T* atLeast(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

/// This rank's contribution in fp32: the input plus the error-feedback residual
/// when op.feedback is set, else the input itself (fp32) or converted (kept in
/// comm scratch).
std::span<const float> contributionF32(Comm& comm, const Operation& op, size_t total);

/// What a rank encodes as its own contribution: its input as it is (the codecs
/// read fp16/bf16 directly), or input + residual in fp32 with error feedback.
struct EncodeSource {
  const void* data = nullptr;
  DataType type = DataType::Float32;
  const void* at(size_t element) const {
    return static_cast<const char*>(data) + element * dataTypeSize(type);
  }
  /// The fp32 contribution; only with error feedback (type Float32).
  std::span<const float> asFloats(size_t total) const {
    return {static_cast<const float*>(data), total};
  }
};
EncodeSource encodeSource(Comm& comm, const Operation& op, size_t total);

/// With op.feedback: residual = contribution - what `encoded` (this rank's own
/// encoding of its contribution, chunk j at j * blockBytes) decodes to.
void updateFeedback(Comm& comm, const Codec& codec, const Operation& op, const Layout& l,
                    std::span<const float> contribution, const uint8_t* encoded);

/// Owner's final step of an all-reduce: encode this rank's summed chunk once,
/// all-gather the encoded blocks, and decode every block into op.recv. Every
/// rank, owner included, decodes the same bytes: outputs are bit-identical.
void allGatherSums(Comm& comm, const Codec& codec, const Operation& op, const Layout& l,
                   std::span<const float> mySum, uint64_t counter);

/// Reduce-scatter's final step: round this rank's sum through the codec once
/// (as all-reduce would hand it out) and write it to op.recv.
void writeScatteredSum(const Codec& codec, const Operation& op, const Layout& l, int rank,
                       std::span<const float> mySum, uint64_t counter);

/// Divides by nranks for avg.
void finishAverage(const Operation& op, int nranks, std::span<float> sum);

/// Two-shot reduce-scatter (compressed_two_shot.cc): returns this rank's chunk sum.
std::span<float> twoShotReduceScatter(Comm& comm, const Codec& codec, const Operation& op,
                                      const Layout& l, uint64_t counter);
/// Ring reduce-scatter (compressed_ring.cc): returns this rank's chunk sum.
/// Uses counters counter .. counter + nranks - 2 for its hops.
std::span<float> ringReduceScatter(Comm& comm, const Codec& codec, const Operation& op,
                                   const Layout& l, uint64_t counter);
/// Top-k all-reduce by sparse all-gather (compressed_sparse_allgather.cc).
void sparseAllGatherAllReduce(Comm& comm, const Codec& codec, const Operation& op,
                              uint64_t counter);

}  // namespace loom::compressed
