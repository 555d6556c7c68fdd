#include "compressed/compressed_common.h"

#include <algorithm>

#include "compression/element_io.h"

namespace loom::compressed {

Layout layoutFor(const Codec& codec, size_t total, int nranks) {
  Layout l{static_cast<size_t>(nranks), 0, total};
  l.blockBytes = codec.encodedBytes(chunkSize(total, nranks, 0));
  return l;
}

Operation byteOperation(Collective c, const void* send, void* recv, size_t count, int root) {
  Operation op;
  op.collective = c;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.type = DataType::Uint8;
  op.root = root;
  return op;
}

std::span<const float> contributionF32(Comm& comm, const Operation& op, size_t total) {
  if (op.feedback == nullptr && op.type == DataType::Float32) {
    return {static_cast<const float*>(op.send), total};
  }
  float* out = atLeast(comm.compressionScratch.compensated, total);
  if (op.feedback != nullptr) {
    // In fp32, so an fp16 input does not round the residual away again.
    op.feedback->compensate(op.send, op.type, {out, total});
  } else {
    codec::withLoader(op.send, op.type, [&](auto load) {
      for (size_t i = 0; i < total; ++i) out[i] = load(i);
    });
  }
  return {out, total};
}

EncodeSource encodeSource(Comm& comm, const Operation& op, size_t total) {
  if (op.feedback == nullptr) return {op.send, op.type};
  return {contributionF32(comm, op, total).data(), DataType::Float32};
}

void updateFeedback(Comm& comm, const Codec& codec, const Operation& op, const Layout& l,
                    std::span<const float> contribution, const uint8_t* encoded) {
  if (op.feedback == nullptr) return;
  float* decoded = atLeast(comm.compressionScratch.decoded, l.total);
  for (int j = 0; j < static_cast<int>(l.chunks); ++j) {
    codec.decode(encoded + static_cast<size_t>(j) * l.blockBytes, codec.encodedBytes(l.size(j)),
                 l.size(j), DataType::Float32, decoded + l.offset(j));
  }
  op.feedback->update(contribution, {decoded, l.total});
}

void allGatherSums(Comm& comm, const Codec& codec, const Operation& op, const Layout& l,
                   std::span<const float> mySum, uint64_t counter) {
  uint8_t* gathered = atLeast(comm.compressionScratch.gathered, l.blockBytes * l.chunks);
  uint8_t* myBlock = gathered + static_cast<size_t>(comm.rank) * l.blockBytes;
  codec.encode(mySum.data(), DataType::Float32, mySum.size(), myBlock, l.blockBytes,
               {l.offset(comm.rank), counter});
  runCollective(comm, byteOperation(Collective::AllGather, myBlock, gathered, l.blockBytes));
  const size_t es = dataTypeSize(op.type);
  auto* out = static_cast<char*>(op.recv);
  for (int j = 0; j < comm.nranks; ++j) {
    codec.decode(gathered + static_cast<size_t>(j) * l.blockBytes, codec.encodedBytes(l.size(j)),
                 l.size(j), op.type, out + l.offset(j) * es);
  }
}

void writeScatteredSum(const Codec& codec, const Operation& op, const Layout& l, int rank,
                       std::span<const float> mySum, uint64_t counter) {
  std::vector<uint8_t> encoded(l.blockBytes);
  codec.encode(mySum.data(), DataType::Float32, mySum.size(), encoded.data(), encoded.size(),
               {l.offset(rank), counter});
  codec.decode(encoded.data(), encoded.size(), op.count, op.type, op.recv);
}

void finishAverage(const Operation& op, int nranks, std::span<float> sum) {
  if (op.op != ReduceOp::Avg) return;
  for (float& v : sum) v /= static_cast<float>(nranks);
}

}  // namespace loom::compressed
