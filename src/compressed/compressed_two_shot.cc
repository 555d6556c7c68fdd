// Two-shot compressed reduce-scatter: every rank encodes each chunk of its
// contribution once and sends chunk j to its owner j (an all-to-all of encoded
// bytes); the owner decodes all contributions and sums them in fp32 in rank
// order 0..n-1. Each value is quantised once on the way in (and once more when
// the owner's sum is encoded for the all-gather), so the error does not grow
// with the number of ranks.
#include <algorithm>

#include "compressed/compressed_common.h"

namespace loom::compressed {

std::span<float> twoShotReduceScatter(Comm& comm, const Codec& codec, const Operation& op,
                                      const Layout& l, uint64_t counter) {
  auto& scratch = comm.compressionScratch;
  const EncodeSource source = encodeSource(comm, op, l.total);
  uint8_t* outgoing = atLeast(scratch.outgoing, l.blockBytes * l.chunks);
  for (int j = 0; j < comm.nranks; ++j) {
    codec.encode(source.at(l.offset(j)), source.type, l.size(j),
                 outgoing + static_cast<size_t>(j) * l.blockBytes, l.blockBytes,
                 {l.offset(j), counter});
  }
  if (op.feedback != nullptr) {
    updateFeedback(comm, codec, op, l, source.asFloats(l.total), outgoing);
  }
  uint8_t* incoming = atLeast(scratch.incoming, l.blockBytes * l.chunks);
  runCollective(comm, byteOperation(Collective::AllToAll, outgoing, incoming, l.blockBytes));
  const size_t n = l.size(comm.rank);
  float* sum = atLeast(scratch.sum, n);
  std::fill(sum, sum + n, 0.0f);
  for (int r = 0; r < comm.nranks; ++r) {
    codec.decodeAccumulate(incoming + static_cast<size_t>(r) * l.blockBytes, codec.encodedBytes(n),
                           n, sum);
  }
  finishAverage(op, comm.nranks, {sum, n});
  return {sum, n};
}

}  // namespace loom::compressed
