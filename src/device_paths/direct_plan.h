// Collectives where every rank can address every other rank's buffers (ranks
// of one process on one GPU): each rank computes its own output straight from
// its peers' buffers with copies and element-wise reductions, in at most two
// phases. Plain data, like collectives/plan.h, so the plan is tested on host
// memory on every machine; the CUDA path (device_paths/device_direct.cc) runs the same
// steps as device copies and reduce kernels on the caller's stream.
//
// Hazards are ruled out by construction: within a phase, what a rank writes is
// never what another rank reads or writes, so the ranks' steps may run in any
// interleaving. A phase starts only when every rank has finished the one
// before (on the device: events), and the call ends only when every rank has
// finished reading (so no rank's later work overwrites a buffer being read).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "collectives/plan.h"
#include "core/types.h"

namespace loom {

/// One rank's buffers for the call.
struct DirectBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
};

enum class DirectStepKind {
  kCopy,      ///< dst[0, count) = src[0, count)
  kReduce,    ///< dst[i] = dst[i] (op) src[i]
  kFinalize,  ///< dst[i] = dst[i] / nranks (Avg)
};

struct DirectStep {
  DirectStepKind kind;
  char* dst;
  const char* src;  ///< unused by kFinalize
  size_t count;     ///< elements
};

/// A rank's steps; phase 1 may read what any rank wrote in phase 0.
struct DirectPlan {
  std::vector<DirectStep> phase[2];
  /// Whether the ranks meet between the phases. The same on every rank (it
  /// depends on the collective only), even where a rank's phase 1 is empty:
  /// the meeting is collective.
  bool twoPhase = false;
  bool twoPhases() const { return twoPhase; }
};

/// Whether `c` has a direct plan (every collective but send/recv).
bool hasDirectPlan(Collective c);

/// The steps rank `rank` runs for collective `c` of `count` elements (the
/// C API's count: per rank block for all-gather, reduce-scatter, all-to-all,
/// gather, scatter). `buffers[p]` are rank p's pointers, in-place layouts
/// included. Steps never copy a range onto itself.
DirectPlan directPlan(Collective c, size_t count, DataType type, ReduceOp op, int root, int rank,
                      std::span<const DirectBuffers> buffers);

}  // namespace loom
