// Plan simulator: runs every rank's plan over ideal in-memory links, in one
// thread, with the executor's ordering rules, and reports results, traffic and
// the first problem found (deadlock, mismatched message sizes, out-of-range
// buffer access). It checks algorithms for any world size without transports,
// and its round count is the skeleton of a cost model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/plan.h"
#include "core/types.h"

namespace loom {

/// How the streams of one rank share its progress.
enum class SimStreamOrder : uint8_t {
  /// Like StepExecutor: one cursor per channel (Step::channel), each with its
  /// own FIFO on every link; within a channel, iteration i runs slice i of
  /// every step of stream 0, then of stream 1, ... A blocked step holds its
  /// whole channel.
  Merged,
  /// One cursor per stream, advanced round-robin; a blocked stream does not
  /// hold the others. Each stream gets its own FIFO on every link (its own
  /// channel), since streams sharing a FIFO could reorder messages; an
  /// executor that runs streams independently needs the same.
  Independent,
};

struct SimOptions {
  size_t sliceElements = size_t{1} << 16;  ///< executor slice, in elements (>= 1)
  size_t fifoDepth = 2;                    ///< messages a directed link holds (>= 1)
  ReduceOp op = ReduceOp::Sum;             ///< Avg divides by nranks on finalize
  SimStreamOrder streamOrder = SimStreamOrder::Merged;
  /// simulateCollective only: whether an in-place call's Input and Output
  /// share memory (as the C API's pointers do) or are two copies with the
  /// in-place layout's contents (plans must be correct either way).
  bool aliasInPlace = true;
  /// simulateCollective with Algorithm::Hierarchical or HostTree only: ranks
  /// grouped by host (HostGroups in collectives/algorithms.h).
  std::vector<std::vector<int>> hosts;
};

/// One rank's memory for one job. Input and Output are ranges of `memory`;
/// they may overlap (in place). Scratch is allocated by the simulator.
struct SimBuffers {
  std::vector<double> memory;
  size_t inputOffset = 0;
  size_t inputElements = 0;
  size_t outputOffset = 0;
  size_t outputElements = 0;
};

/// One plan on one rank; a rank's jobs run concurrently (a group).
struct SimJob {
  RankPlan plan;
  SimBuffers buffers;
};

struct SimStats {
  std::vector<size_t> messagesSent;  ///< per rank
  std::vector<size_t> elementsSent;  ///< per rank
  size_t maxSteps = 0;               ///< most steps in one rank's plans
  /// Synchronous rounds until done: each cursor runs at most one (step, slice)
  /// per round and a message sent in round k can be received from round k+1.
  size_t rounds = 0;
};

/// Runs the jobs (`jobs[rank]`) to completion, updating their memory. Throws
/// Error(InternalError) naming rank, stream and step on deadlock, on a message
/// whose size differs from the receiver's slice, on a peer out of range, on a
/// buffer access out of range or into Input, and on messages left unreceived.
SimStats simulatePlans(std::vector<std::vector<SimJob>>& jobs, const SimOptions& options);

struct SimCollective {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  int nranks = 1;
  size_t count = 0;
  int root = 0;
  bool inPlace = false;
  int channels = 1;  ///< PlanRequest::channels (ring and hierarchical all-reduce)
};

struct SimResult {
  std::vector<std::vector<double>> outputs;  ///< per rank, outputElements long
  SimStats stats;
};

/// Builds every rank's plan with makePlan and simulates it. `inputs[rank]`
/// holds inputElements(...) values. Output elements a plan never writes read
/// as NaN. Send and Recv pair up across ranks, so simulate them with
/// simulatePlans.
SimResult simulateCollective(const SimCollective& call,
                             const std::vector<std::vector<double>>& inputs,
                             const SimOptions& options);

}  // namespace loom
