#include "op_gen.h"

#include <algorithm>
#include <bit>

#include "types.h"

namespace soak {

namespace {

bool isReduction(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce ||
         c == Coll::GroupAllReduces;
}

// Collectives loom.h gives an in-place layout (validate.cc also accepts
// gather's and scatter's); all-to-all and send/recv have none.
bool hasInPlace(Coll c) { return c != Coll::AllToAll && c != Coll::SendRecvRing; }

// Log-uniform message size in [0, maxBytes]: a uniformly drawn bit length,
// then uniform within that octave. Integer-only, so every rank agrees.
size_t drawBytes(Rng& rng, size_t maxBytes) {
  const int octaves = std::bit_width(maxBytes);
  const int k = static_cast<int>(rng.below(static_cast<uint64_t>(octaves) + 1));
  if (k == 0) return 0;
  const size_t lo = size_t{1} << (k - 1);
  const size_t hi = std::min(maxBytes, (size_t{1} << k) - 1);
  return lo + rng.below(hi - lo + 1);
}

Call drawCall(Rng& rng, Coll c, size_t maxBytes, uint64_t seed) {
  Call call{};
  call.type = static_cast<loomDataType_t>(rng.below(loomNumTypes));
  call.op = isReduction(c) ? static_cast<loomRedOp_t>(rng.below(loomNumOps)) : loomSum;
  call.count = drawBytes(rng, maxBytes) / loomTypeSize(call.type);
  call.inPlace = hasInPlace(c) && rng.below(2) == 1;
  call.seed = seed;
  return call;
}

}  // namespace

const char* collName(Coll c) {
  static const char* const kNames[] = {
      "allreduce", "allgather", "reducescatter", "broadcast",     "reduce",
      "alltoall",  "gather",    "scatter",       "sendrecv-ring", "group-allreduce"};
  return static_cast<unsigned>(c) < static_cast<unsigned>(Coll::kCount)
             ? kNames[static_cast<int>(c)]
             : "?";
}

SoakOp drawOp(Rng& rng, uint64_t index, uint64_t seed, int nranks, size_t maxBytes) {
  SoakOp op;
  op.index = index;
  op.coll = static_cast<Coll>(rng.below(static_cast<uint64_t>(Coll::kCount)));
  // A ring on one rank would be a send to itself; run an all-reduce instead.
  if (op.coll == Coll::SendRecvRing && nranks == 1) op.coll = Coll::AllReduce;
  op.root = static_cast<int>(rng.below(static_cast<uint64_t>(nranks)));
  if (op.coll == Coll::SendRecvRing) {
    op.root = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(nranks - 1)));
  }
  const int calls = op.coll == Coll::GroupAllReduces ? 2 + static_cast<int>(rng.below(2)) : 1;
  for (int i = 0; i < calls; ++i) {
    op.calls.push_back(drawCall(rng, op.coll, maxBytes, hash3(seed, index, i)));
  }
  return op;
}

size_t opBytes(const SoakOp& op, int nranks) {
  size_t total = 0;
  for (const Call& call : op.calls) {
    const size_t bytes = call.count * loomTypeSize(call.type);
    switch (op.coll) {
      case Coll::AllGather:
      case Coll::ReduceScatter:
      case Coll::AllToAll:
      case Coll::Gather:
      case Coll::Scatter:
        total += bytes * static_cast<size_t>(nranks);
        break;
      default:
        total += bytes;
        break;
    }
  }
  return total;
}

}  // namespace soak
