// What each collective moves: buffer shapes, bus-bandwidth factor, where in-place
// data lives, and what every output element must hold after a checked run.
#ifndef LOOM_PERF_COMMON_COLLECTIVES_H_
#define LOOM_PERF_COMMON_COLLECTIVES_H_

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "ops.h"

namespace perf {

enum class Coll {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  SendRecv,
  Gather,
  Scatter
};

inline constexpr Coll kAllColls[] = {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter,
                                     Coll::Broadcast, Coll::Reduce,    Coll::AllToAll,
                                     Coll::SendRecv,  Coll::Gather,    Coll::Scatter};

inline const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return "allreduce";
    case Coll::AllGather:
      return "allgather";
    case Coll::ReduceScatter:
      return "reducescatter";
    case Coll::Broadcast:
      return "broadcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::AllToAll:
      return "alltoall";
    case Coll::SendRecv:
      return "sendrecv";
    case Coll::Gather:
      return "gather";
    case Coll::Scatter:
      return "scatter";
  }
  return "?";
}

inline Coll parseColl(const std::string& name) {
  for (Coll c : kAllColls) {
    if (name == collName(c)) return c;
  }
  throw std::invalid_argument("unknown collective '" + name + "'");
}

inline bool collReduces(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce;
}

inline bool collRooted(Coll c) {
  return c == Coll::Broadcast || c == Coll::Reduce || c == Coll::Gather || c == Coll::Scatter;
}

/// The reported size counts nranks blocks for collectives whose natural size is the
/// whole assembled buffer (nccl-tests' convention), one block otherwise.
inline size_t blocksInSize(Coll c, int nranks) {
  switch (c) {
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll:
    case Coll::Gather:
    case Coll::Scatter:
      return static_cast<size_t>(nranks);
    default:
      return 1;
  }
}

/// busbw = algbw * factor, so busbw is comparable with a link's bandwidth whatever n:
///  allreduce      2(n-1)/n  a bandwidth-optimal allreduce is a reduce-scatter then an
///                           allgather, each moving (n-1)/n of the data through every rank
///  allgather,     (n-1)/n   each rank must receive the n-1 blocks it lacks, S/n each,
///  reducescatter            S being the total size; reduce-scatter mirrors it
///  alltoall       (n-1)/n   each rank keeps 1/n of its S and sends the rest
///  gather,scatter (n-1)/n   the root receives (sends) every block but its own
///  broadcast      1         a pipelined chain pushes all S through each link once;
///  reduce                   reduce is its mirror
///  sendrecv       1         one message over one link
inline double busFactor(Coll c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Coll::AllReduce:
      return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll:
    case Coll::Gather:
    case Coll::Scatter:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

/// Elements each rank's input (send side) and output (receive side) hold for an API
/// count of `count` (the per-block count the C API takes).
inline size_t inputElems(Coll c, size_t count, int nranks) {
  switch (c) {
    case Coll::ReduceScatter:
    case Coll::AllToAll:
    case Coll::Scatter:
      return count * nranks;
    default:
      return count;
  }
}

inline size_t outputElems(Coll c, size_t count, int nranks) {
  switch (c) {
    case Coll::AllGather:
    case Coll::AllToAll:
    case Coll::Gather:
      return count * nranks;
    default:
      return count;
  }
}

/// Whether this rank's output is defined after the call (rooted reductions and
/// gathers leave other ranks' receive buffers alone).
inline bool hasOutput(Coll c, int rank, int root) {
  return !((c == Coll::Reduce || c == Coll::Gather) && rank != root);
}

/// Where a call reads its input and writes its output, in the caller's two buffers.
struct Layout {
  char* input;
  char* output;
};

/// Loom's C API layouts. In place means: allreduce/broadcast/reduce pass one buffer;
/// allgather and gather read this rank's block from its final place in the output
/// (recvbuff + rank*count); reducescatter and scatter write into the input at
/// (sendbuff + rank*count). Alltoall and sendrecv have no in-place form in loom.h.
inline bool loomHasInPlace(Coll c) { return c != Coll::AllToAll && c != Coll::SendRecv; }

inline Layout loomLayout(Coll c, bool inPlace, char* send, char* recv, size_t count,
                         size_t typeBytes, int rank, int root) {
  if (!inPlace) return {send, recv};
  const size_t offset = static_cast<size_t>(rank) * count * typeBytes;
  switch (c) {
    case Coll::AllGather:
      return {recv + offset, recv};
    case Coll::Gather:
      return rank == root ? Layout{recv + offset, recv} : Layout{send, recv};
    case Coll::ReduceScatter:
      return {send, send + offset};
    case Coll::Scatter:
      return rank == root ? Layout{send, send + offset} : Layout{send, recv};
    default:
      return {recv, recv};
  }
}

/// Everything that fixes one checked call's expected output.
struct ExpectContext {
  Coll coll;
  PerfOp fillOp;  // the op the inputs were filled for (Sum for data movement)
  int rank;
  int nranks;
  int root;
  size_t count;
  std::array<double, kValuePeriod> reduced;  // reducedTable(fillOp, ...)
};

/// Expected value of output element j on ctx.rank.
inline double expectedOutput(const ExpectContext& ctx, size_t j) {
  const size_t n = ctx.count;
  switch (ctx.coll) {
    case Coll::AllReduce:
    case Coll::Reduce:
      return ctx.reduced[j % kValuePeriod];
    case Coll::ReduceScatter:
      return ctx.reduced[(ctx.rank * n + j) % kValuePeriod];
    case Coll::AllGather:
    case Coll::Gather:
      return inputValue(static_cast<int>(j / n), j % n, ctx.fillOp);
    case Coll::Broadcast:
      return inputValue(ctx.root, j, ctx.fillOp);
    case Coll::AllToAll:
      return inputValue(static_cast<int>(j / n), ctx.rank * n + j % n, ctx.fillOp);
    case Coll::SendRecv:
      return inputValue((ctx.rank + ctx.nranks - 1) % ctx.nranks, j, ctx.fillOp);
    case Coll::Scatter:
      return inputValue(ctx.root, ctx.rank * n + j, ctx.fillOp);
  }
  return 0;
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_COLLECTIVES_H_
