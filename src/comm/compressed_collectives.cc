// Compressed collectives, "two-shot" (DESIGN.md, Codec): every rank encodes
// each chunk of its input once and sends chunk j to its owner j (an all-to-all
// of encoded bytes); the owner decodes all contributions and sums them in fp32
// in rank order 0..n-1, encodes that sum once, and an all-gather forwards the
// owner's encoded bytes unchanged. Every rank, the owner included, decodes the
// same bytes, so results are bit-identical across ranks and runs, and the
// error does not grow with the number of ranks (each value is quantised twice).
//
// The encoded blocks are moved by the ordinary byte collectives (all-to-all and
// all-gather on uint8), so every transport and algorithm carries them. Blocks
// are padded to the largest chunk's encoded size so the byte counts agree.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "collectives/algorithms.h"
#include "comm/operation.h"
#include "compression/codec.h"

namespace loom {
namespace {

struct Layout {
  size_t chunks;      // = nranks
  size_t blockBytes;  // encoded bytes per chunk, padded to the largest
  size_t total;       // elements of the whole tensor
  size_t offset(int j) const { return chunkOffset(total, static_cast<int>(chunks), j); }
  size_t size(int j) const { return chunkSize(total, static_cast<int>(chunks), j); }
};

Operation byteCollective(Collective c, const void* send, void* recv, size_t count) {
  Operation op;
  op.collective = c;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.type = DataType::Uint8;
  return op;
}

/// Grows `v` to at least `n` elements; never shrinks, so steady state allocates nothing.
template <typename T>
T* atLeast(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

/// Owner's half: decode every rank's encoding of chunk `me` and sum in rank
/// order into `acc` (fp32), applying avg.
void sumContributions(const Codec& codec, const uint8_t* received, const Layout& l, int me,
                      const Operation& op, int nranks, float* acc) {
  const size_t n = l.size(me);
  std::fill(acc, acc + n, 0.0f);
  for (int r = 0; r < nranks; ++r) {
    codec.decodeAccumulate(received + static_cast<size_t>(r) * l.blockBytes, codec.encodedBytes(n),
                           n, acc);
  }
  if (op.op == ReduceOp::Avg) {
    for (size_t i = 0; i < n; ++i) acc[i] /= static_cast<float>(nranks);
  }
}

/// First half shared by all-reduce and reduce-scatter: returns this rank's
/// summed chunk in fp32 (held in the comm's scratch).
std::span<const float> reduceScatterEncoded(Comm& comm, const Codec& codec, const Operation& op,
                                            const char* input, const Layout& l, uint64_t counter) {
  size_t es = dataTypeSize(op.type);
  DataType type = op.type;
  auto& scratch = comm.compressionScratch;
  if (op.feedback != nullptr) {
    // Encode input + residual (in fp32, so an fp16 input does not round the
    // residual away again).
    float* compensated = atLeast(scratch.compensated, l.total);
    op.feedback->compensate(input, op.type, {compensated, l.total});
    input = reinterpret_cast<const char*>(compensated);
    type = DataType::Float32;
    es = sizeof(float);
  }
  uint8_t* outgoing = atLeast(scratch.outgoing, l.blockBytes * l.chunks);
  for (int j = 0; j < comm.nranks; ++j) {
    codec.encode(input + l.offset(j) * es, type, l.size(j),
                 outgoing + static_cast<size_t>(j) * l.blockBytes, l.blockBytes,
                 {l.offset(j), counter});
  }
  if (op.feedback != nullptr) {
    // What the owners will see of this rank is decode(encode(compensated)); the
    // difference is this rank's residual for the next call.
    float* decoded = atLeast(scratch.decoded, l.total);
    for (int j = 0; j < comm.nranks; ++j) {
      codec.decode(outgoing + static_cast<size_t>(j) * l.blockBytes, codec.encodedBytes(l.size(j)),
                   l.size(j), DataType::Float32, decoded + l.offset(j));
    }
    op.feedback->update({reinterpret_cast<const float*>(input), l.total}, {decoded, l.total});
  }
  uint8_t* incoming = atLeast(scratch.incoming, l.blockBytes * l.chunks);
  runCollective(comm, byteCollective(Collective::AllToAll, outgoing, incoming, l.blockBytes));
  float* sum = atLeast(scratch.sum, l.size(comm.rank));
  sumContributions(codec, incoming, l, comm.rank, op, comm.nranks, sum);
  return {sum, l.size(comm.rank)};
}

Layout layoutFor(const Codec& codec, size_t total, int nranks) {
  Layout l{static_cast<size_t>(nranks), 0, total};
  l.blockBytes = codec.encodedBytes(chunkSize(total, nranks, 0));  // chunk 0 is the largest
  return l;
}

void allReduce(Comm& comm, const Codec& codec, const Operation& op, uint64_t counter) {
  const Layout l = layoutFor(codec, op.count, comm.nranks);
  const auto* input = static_cast<const char*>(op.send);
  const std::span<const float> mine = reduceScatterEncoded(comm, codec, op, input, l, counter);
  // Encode the owner's sum once; everyone, owner included, decodes these bytes.
  uint8_t* gathered = atLeast(comm.compressionScratch.gathered, l.blockBytes * l.chunks);
  uint8_t* myBlock = gathered + static_cast<size_t>(comm.rank) * l.blockBytes;
  codec.encode(mine.data(), DataType::Float32, mine.size(), myBlock, l.blockBytes,
               {l.offset(comm.rank), counter + 1});
  runCollective(comm, byteCollective(Collective::AllGather, myBlock, gathered, l.blockBytes));
  const size_t es = dataTypeSize(op.type);
  auto* out = static_cast<char*>(op.recv);
  for (int j = 0; j < comm.nranks; ++j) {
    codec.decode(gathered + static_cast<size_t>(j) * l.blockBytes, codec.encodedBytes(l.size(j)),
                 l.size(j), op.type, out + l.offset(j) * es);
  }
}

void reduceScatter(Comm& comm, const Codec& codec, const Operation& op, uint64_t counter) {
  // Chunks are the C API's blocks of recvcount elements: an even split.
  const size_t total = op.count * static_cast<size_t>(comm.nranks);
  Layout l{static_cast<size_t>(comm.nranks), codec.encodedBytes(op.count), total};
  const auto* input = static_cast<const char*>(op.send);
  const std::span<const float> mine = reduceScatterEncoded(comm, codec, op, input, l, counter);
  // Round through the codec once more so the result matches what all-reduce
  // would hand every rank for this block.
  std::vector<uint8_t> encoded(l.blockBytes);
  codec.encode(mine.data(), DataType::Float32, mine.size(), encoded.data(), encoded.size(),
               {l.offset(comm.rank), counter + 1});
  codec.decode(encoded.data(), encoded.size(), op.count, op.type, op.recv);
}

void allGather(Comm& comm, const Codec& codec, const Operation& op, uint64_t counter) {
  if (op.feedback != nullptr) {
    raise(ErrorCode::InvalidArgument,
          "allgather: error feedback applies to all-reduce and reduce-scatter only");
  }
  const size_t block = codec.encodedBytes(op.count);
  std::vector<uint8_t> gathered(block * static_cast<size_t>(comm.nranks));
  uint8_t* mine = gathered.data() + static_cast<size_t>(comm.rank) * block;
  codec.encode(op.send, op.type, op.count, mine, block,
               {static_cast<uint64_t>(comm.rank) * op.count, counter});
  runCollective(comm, byteCollective(Collective::AllGather, mine, gathered.data(), block));
  const size_t es = dataTypeSize(op.type);
  for (int j = 0; j < comm.nranks; ++j) {
    codec.decode(gathered.data() + static_cast<size_t>(j) * block, block, op.count, op.type,
                 static_cast<char*>(op.recv) + static_cast<size_t>(j) * op.count * es);
  }
}

}  // namespace

void runCompressed(Comm& comm, const Operation& op) {
  if (op.count == 0) return;
  // Every rank makes the same calls in the same order, so this counter (the
  // stochastic-rounding stream) agrees across ranks.
  const uint64_t counter = comm.compressedCalls;
  comm.compressedCalls += 2;
  const auto codec = makeCodec(op.codec);
  switch (op.collective) {
    case Collective::AllReduce:
      allReduce(comm, *codec, op, counter);
      break;
    case Collective::ReduceScatter:
      reduceScatter(comm, *codec, op, counter);
      break;
    case Collective::AllGather:
      allGather(comm, *codec, op, counter);
      break;
    default:
      raise(ErrorCode::InternalError, "no compressed form of {}", toString(op.collective));
  }
}

}  // namespace loom
