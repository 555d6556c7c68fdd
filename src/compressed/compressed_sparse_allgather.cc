// Top-k all-reduce by sparse all-gather: every rank selects the top-k of its
// whole contribution once, the (value, index) lists are all-gathered, and every
// rank adds all of them in rank order in fp32. The result is the exact sum of
// what was selected (one selection per rank, none of the sum), identical on
// every rank. Its volume is n lists per rank instead of two-shot's ~2, so it
// pays off on few ranks; the tuner picks it there (chooseCompressedAlgorithm).
#include <algorithm>

#include "compressed/compressed_common.h"
#include "compression/element_io.h"

namespace loom::compressed {

void sparseAllGatherAllReduce(Comm& comm, const Codec& codec, const Operation& op,
                              uint64_t counter) {
  auto& scratch = comm.compressionScratch;
  const size_t total = op.count;
  const EncodeSource source = encodeSource(comm, op, total);
  const Layout whole{1, codec.encodedBytes(total), total};
  uint8_t* gathered = atLeast(scratch.gathered, whole.blockBytes * comm.nranks);
  uint8_t* mine = gathered + static_cast<size_t>(comm.rank) * whole.blockBytes;
  codec.encode(source.data, source.type, total, mine, whole.blockBytes, {0, counter});
  if (op.feedback != nullptr) updateFeedback(comm, codec, op, whole, source.asFloats(total), mine);
  runCollective(comm, byteOperation(Collective::AllGather, mine, gathered, whole.blockBytes));
  float* sum = atLeast(scratch.sum, total);
  std::fill(sum, sum + total, 0.0f);
  for (int r = 0; r < comm.nranks; ++r) {
    codec.decodeAccumulate(gathered + static_cast<size_t>(r) * whole.blockBytes, whole.blockBytes,
                           total, sum);
  }
  finishAverage(op, comm.nranks, {sum, total});
  codec::withStorer(op.recv, op.type, [&](auto store) {
    for (size_t i = 0; i < total; ++i) store(i, sum[i]);
  });
}

}  // namespace loom::compressed
