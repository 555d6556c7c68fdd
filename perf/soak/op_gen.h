// The soak's operation sequence: drawn from the shared Rng, so identical on
// every rank, and nothing in it depends on the rank.
#ifndef LOOM_PERF_SOAK_OP_GEN_H_
#define LOOM_PERF_SOAK_OP_GEN_H_

#include <loom/loom.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rng.h"

namespace soak {

enum class Coll {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  SendRecvRing,     ///< a group: send to rank + shift, receive from rank - shift
  GroupAllReduces,  ///< a group of 2-3 all-reduces with their own type, op and count
  kCount
};

const char* collName(Coll c);

/// One Loom call (several for the group kinds).
struct Call {
  loomDataType_t type;
  loomRedOp_t op;  ///< reductions only
  size_t count;    ///< the count argument Loom receives
  bool inPlace;
  uint64_t seed;  ///< input values derive from it (see values.h)
};

struct SoakOp {
  uint64_t index;
  Coll coll;
  int root;  ///< root, or the ring shift for SendRecvRing
  std::vector<Call> calls;
};

/// Draws operation `index`; maxBytes bounds one rank's message (count * size).
SoakOp drawOp(Rng& rng, uint64_t index, uint64_t seed, int nranks, size_t maxBytes);

/// Bytes one rank's user buffers carry for `op` (nccl-tests "size"): the
/// larger of its input and output per call.
size_t opBytes(const SoakOp& op, int nranks);

}  // namespace soak

#endif  // LOOM_PERF_SOAK_OP_GEN_H_
