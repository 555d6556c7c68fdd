// Ring compressed reduce-scatter: n-1 hops around the ring. At hop s rank r
// sends the partial sum of chunk (r-1-s) mod n to its right neighbour and
// receives chunk (r-2-s) mod n from its left; what arrives is decoded, this
// rank's own chunk is added in fp32, and the result is re-encoded for the next
// hop. After the last hop rank r holds the sum of chunk r. Each link carries
// only neighbour traffic, which suits rings spanning hosts; the price is that
// every hop quantises the partial sum again, so the error grows with the number
// of ranks (docs/compression.md measures how much).
#include <algorithm>

#include "compressed/compressed_common.h"

namespace loom::compressed {
namespace {

int wrap(int i, int n) { return ((i % n) + n) % n; }

/// One hop: send `out` to the right neighbour while receiving `in` from the left.
void exchange(Comm& comm, const uint8_t* out, uint8_t* in, size_t bytes) {
  const int right = wrap(comm.rank + 1, comm.nranks);
  const int left = wrap(comm.rank - 1, comm.nranks);
  const Operation ops[2] = {byteOperation(Collective::Send, out, nullptr, bytes, right),
                            byteOperation(Collective::Recv, nullptr, in, bytes, left)};
  const Operation* pointers[2] = {&ops[0], &ops[1]};
  runPointToPoint(comm, pointers);
}

}  // namespace

std::span<float> ringReduceScatter(Comm& comm, const Codec& codec, const Operation& op,
                                   const Layout& l, uint64_t counter) {
  auto& scratch = comm.compressionScratch;
  const int n = comm.nranks;
  const int r = comm.rank;
  const std::span<const float> contribution = contributionF32(comm, op, l.total);
  if (op.feedback != nullptr) {
    // The residual is what encoding this rank's own contribution drops; what
    // later hops drop of the partial sums is shared by all ranks and is not
    // fed back (docs/compression.md).
    uint8_t* own = atLeast(scratch.outgoing, l.blockBytes * l.chunks);
    for (int j = 0; j < n; ++j) {
      codec.encode(contribution.data() + l.offset(j), DataType::Float32, l.size(j),
                   own + static_cast<size_t>(j) * l.blockBytes, l.blockBytes,
                   {l.offset(j), counter});
    }
    updateFeedback(comm, codec, op, l, contribution, own);
  }
  // Two blocks: the one being sent and the one arriving.
  uint8_t* blocks = atLeast(scratch.incoming, 2 * l.blockBytes);
  uint8_t* sending = blocks;
  uint8_t* arriving = blocks + l.blockBytes;
  float* partial = atLeast(scratch.sum, l.size(0));
  int chunk = wrap(r - 1, n);
  codec.encode(contribution.data() + l.offset(chunk), DataType::Float32, l.size(chunk), sending,
               l.blockBytes, {l.offset(chunk), counter});
  for (int hop = 0; hop < n - 1; ++hop) {
    exchange(comm, sending, arriving, l.blockBytes);
    chunk = wrap(r - 2 - hop, n);
    const size_t size = l.size(chunk);
    std::copy_n(contribution.data() + l.offset(chunk), size, partial);
    codec.decodeAccumulate(arriving, codec.encodedBytes(size), size, partial);
    if (hop + 1 < n - 1) {
      codec.encode(partial, DataType::Float32, size, sending, l.blockBytes,
                   {l.offset(chunk), counter + 1 + static_cast<uint64_t>(hop)});
    }
  }
  // With one rank there is no hop: the sum is the contribution itself.
  if (n == 1) std::copy_n(contribution.data(), l.total, partial);
  const std::span<float> mine{partial, l.size(r)};
  finishAverage(op, n, mine);
  return mine;
}

}  // namespace loom::compressed
