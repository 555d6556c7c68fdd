// Compressed collectives (DESIGN.md, Codec): which algorithm carries the codec,
// and the all-reduce / reduce-scatter / all-gather built from the algorithms in
// compressed_*.cc. Encoded blocks move through the ordinary byte collectives
// and send/recv, so every transport carries them.
#include "compressed/compressed_common.h"

namespace loom {
namespace {

using compressed::finalCounter;
using compressed::Layout;

std::span<float> reduceScatterWith(CompressedAlgorithm algorithm, Comm& comm, const Codec& codec,
                                   const Operation& op, const Layout& l, uint64_t counter) {
  if (algorithm == CompressedAlgorithm::Ring) {
    return compressed::ringReduceScatter(comm, codec, op, l, counter);
  }
  return compressed::twoShotReduceScatter(comm, codec, op, l, counter);
}

void allReduce(Comm& comm, const Codec& codec, const Operation& op, CompressedAlgorithm algorithm,
               uint64_t counter) {
  if (algorithm == CompressedAlgorithm::SparseAllGather) {
    compressed::sparseAllGatherAllReduce(comm, codec, op, counter);
    return;
  }
  const Layout l = compressed::layoutFor(codec, op.count, comm.nranks);
  const std::span<float> mine = reduceScatterWith(algorithm, comm, codec, op, l, counter);
  compressed::allGatherSums(comm, codec, op, l, mine,
                            finalCounter(algorithm, comm.nranks, counter));
}

void reduceScatter(Comm& comm, const Codec& codec, const Operation& op,
                   CompressedAlgorithm algorithm, uint64_t counter) {
  // Chunks are the C API's blocks of recvcount elements: an even split.
  const size_t total = op.count * static_cast<size_t>(comm.nranks);
  const Layout l{static_cast<size_t>(comm.nranks), codec.encodedBytes(op.count), total};
  const std::span<float> mine = reduceScatterWith(algorithm, comm, codec, op, l, counter);
  compressed::writeScatteredSum(codec, op, l, comm.rank, mine,
                                finalCounter(algorithm, comm.nranks, counter));
}

void allGather(Comm& comm, const Codec& codec, const Operation& op, uint64_t counter) {
  const size_t block = codec.encodedBytes(op.count);
  std::vector<uint8_t> gathered(block * static_cast<size_t>(comm.nranks));
  uint8_t* mine = gathered.data() + static_cast<size_t>(comm.rank) * block;
  codec.encode(op.send, op.type, op.count, mine, block,
               {static_cast<uint64_t>(comm.rank) * op.count, counter});
  runCollective(comm,
                compressed::byteOperation(Collective::AllGather, mine, gathered.data(), block));
  const size_t es = dataTypeSize(op.type);
  for (int j = 0; j < comm.nranks; ++j) {
    codec.decode(gathered.data() + static_cast<size_t>(j) * block, block, op.count, op.type,
                 static_cast<char*>(op.recv) + static_cast<size_t>(j) * op.count * es);
  }
}

}  // namespace

CompressedAlgorithm chooseCompressedAlgorithm(const Comm& comm, const Operation& op) {
  const CompressedAlgorithm asked = op.codec.algorithm;
  if (op.collective == Collective::AllGather) return CompressedAlgorithm::TwoShot;  // one form
  if (asked != CompressedAlgorithm::Auto) return asked;
  // Sparse all-gather moves n top-k lists per rank against two-shot's ~2, but
  // selects only once (the exact sum of what was kept): worth it on few ranks.
  if (op.collective == Collective::AllReduce && op.codec.kind == CodecKind::Topk &&
      comm.nranks <= kSparseAllGatherMaxRanks) {
    return CompressedAlgorithm::SparseAllGather;
  }
  // Two-shot and ring move the same bytes per rank; two-shot's all-to-all
  // crosses the network n-1 times per rank where the ring's hops stay between
  // neighbours, so on large multi-host worlds the ring wins on bisection
  // bandwidth, at a cost in error that grows with n.
  if (!comm.allLocal && comm.nranks > kTwoShotMaxRanksAcrossHosts) return CompressedAlgorithm::Ring;
  return CompressedAlgorithm::TwoShot;
}

namespace compressed {

uint64_t takeCounters(Comm& comm) {
  // A ring uses one per hop plus one for the owners' sums.
  const uint64_t counter = comm.compressedCalls;
  comm.compressedCalls += static_cast<uint64_t>(comm.nranks) + 1;
  return counter;
}

uint64_t finalCounter(CompressedAlgorithm algorithm, int nranks, uint64_t counter) {
  return counter + (algorithm == CompressedAlgorithm::Ring ? static_cast<uint64_t>(nranks) : 1);
}

}  // namespace compressed

void recordCompressedCall(Comm& comm, const Operation& op) {
  uint64_t bytes = op.count * dataTypeSize(op.type);
  if (op.collective == Collective::ReduceScatter) bytes *= static_cast<uint64_t>(comm.nranks);
  CommStats::add(comm.stats.compressedCalls, 1);
  CommStats::add(comm.stats.compressedInputBytes, bytes);
}

void runCompressed(Comm& comm, const Operation& op) {
  if (op.count == 0) return;
  const uint64_t counter = compressed::takeCounters(comm);
  const auto codec = makeCodec(op.codec);
  const CompressedAlgorithm algorithm = chooseCompressedAlgorithm(comm, op);
  switch (op.collective) {
    case Collective::AllReduce:
      allReduce(comm, *codec, op, algorithm, counter);
      break;
    case Collective::ReduceScatter:
      reduceScatter(comm, *codec, op, algorithm, counter);
      break;
    case Collective::AllGather:
      allGather(comm, *codec, op, counter);
      break;
    default:
      raise(ErrorCode::InternalError, "no compressed form of {}", toString(op.collective));
  }
}

}  // namespace loom
