#include "device_paths/direct_plan.h"

#include <algorithm>

#include "core/error.h"

namespace loom {
namespace {

/// Builds one rank's steps with element offsets turned into pointers.
class Steps {
 public:
  explicit Steps(DataType type) : es_(dataTypeSize(type)) {}

  void copy(int phase, char* dst, const char* src, size_t count) {
    if (count > 0 && dst != src)
      plan.phase[phase].push_back({DirectStepKind::kCopy, dst, src, count});
  }
  /// dst = inputs[own] (op) every other input, own first so that an input
  /// sharing dst's memory (in place) is read before anything is written there.
  void reduceInto(int phase, char* dst, std::span<const char* const> inputs, int own, size_t count,
                  ReduceOp op) {
    if (count == 0) return;
    copy(phase, dst, inputs[own], count);
    for (int p = 0; p < static_cast<int>(inputs.size()); ++p) {
      if (p != own) plan.phase[phase].push_back({DirectStepKind::kReduce, dst, inputs[p], count});
    }
    if (op == ReduceOp::Avg && inputs.size() > 1) {
      plan.phase[phase].push_back({DirectStepKind::kFinalize, dst, nullptr, count});
    }
  }
  size_t bytes(size_t elements) const { return elements * es_; }

  DirectPlan plan;

 private:
  size_t es_;
};

/// Elements [begin(j), begin(j + 1)) of `count` form chunk j of n.
size_t chunkBegin(size_t count, int n, int j) {
  return count / static_cast<size_t>(n) * static_cast<size_t>(j) +
         std::min(static_cast<size_t>(j), count % static_cast<size_t>(n));
}

}  // namespace

bool hasDirectPlan(Collective c) { return c != Collective::Send && c != Collective::Recv; }

DirectPlan directPlan(Collective c, size_t count, DataType type, ReduceOp op, int root, int rank,
                      std::span<const DirectBuffers> buffers) {
  const int n = static_cast<int>(buffers.size());
  if (rank < 0 || rank >= n || root < 0 || root >= n) {
    raise(ErrorCode::InvalidArgument, "direct plan: rank {} / root {} outside {} ranks", rank, root,
          n);
  }
  Steps s(type);
  const DirectBuffers& me = buffers[static_cast<size_t>(rank)];
  std::vector<const char*> inputs(static_cast<size_t>(n));
  switch (c) {
    case Collective::AllReduce: {
      // Reduce-scatter by chunks (rank r owns chunk r, reads it from everyone),
      // then each rank copies the other chunks from their owners' outputs.
      s.plan.twoPhase = n > 1;
      const size_t begin = chunkBegin(count, n, rank);
      const size_t size = chunkBegin(count, n, rank + 1) - begin;
      for (int p = 0; p < n; ++p) inputs[p] = buffers[p].send + s.bytes(begin);
      s.reduceInto(0, me.recv + s.bytes(begin), inputs, rank, size, op);
      for (int p = 0; p < n; ++p) {
        if (p == rank) continue;
        const size_t b = chunkBegin(count, n, p);
        s.copy(1, me.recv + s.bytes(b), buffers[p].recv + s.bytes(b),
               chunkBegin(count, n, p + 1) - b);
      }
      break;
    }
    case Collective::ReduceScatter:
      for (int p = 0; p < n; ++p) inputs[p] = buffers[p].send + s.bytes(count) * rank;
      s.reduceInto(0, me.recv, inputs, rank, count, op);
      break;
    case Collective::Reduce:
      if (rank == root) {
        for (int p = 0; p < n; ++p) inputs[p] = buffers[p].send;
        s.reduceInto(0, me.recv, inputs, rank, count, op);
      }
      break;
    case Collective::AllGather:
      for (int p = 0; p < n; ++p) s.copy(0, me.recv + s.bytes(count) * p, buffers[p].send, count);
      break;
    case Collective::Broadcast:
      s.copy(0, me.recv, buffers[root].send, count);
      break;
    case Collective::AllToAll:
      for (int p = 0; p < n; ++p) {
        s.copy(0, me.recv + s.bytes(count) * p, buffers[p].send + s.bytes(count) * rank, count);
      }
      break;
    case Collective::Gather:
      if (rank == root) {
        for (int p = 0; p < n; ++p) s.copy(0, me.recv + s.bytes(count) * p, buffers[p].send, count);
      }
      break;
    case Collective::Scatter:
      s.copy(0, me.recv, buffers[root].send + s.bytes(count) * rank, count);
      break;
    default:
      raise(ErrorCode::InvalidArgument, "direct plan: {} has no direct form", toString(c));
  }
  return std::move(s.plan);
}

}  // namespace loom
