// The direct algorithm for ranks that share one host: every rank copies its
// piece of the message into its own arena region in shared memory and
// publishes a round number; then ranks read each other's regions directly.
// All-reduce is reduce-scatter by reading all (each rank reduces its shard in
// rank order 0..n-1) followed by all-gather by reading all; below a size
// threshold every rank reduces the whole piece itself, saving one wait.
// Either way every rank's result comes from one fixed reduction order, so
// all-reduce outputs are bit-identical across ranks.
//
// Regions are double-buffered by round parity. Before a rank rewrites its
// regions of parity p in round s it waits until every rank published round
// s-1, which a rank only does after it finished reading round s-2 (the last
// round of parity p). That one rule makes reuse safe for every collective.
#pragma once

#include <cstdint>
#include <span>

#include "collectives/executor/step_executor.h"
#include "collectives/executor/waiter.h"
#include "transports/shm/shm_domain.h"

namespace loom {

class DirectExecutor {
 public:
  /// `arenas`: every rank's arena, indexed by rank; `round`: the communicator's
  /// direct round counter (same on all ranks).
  DirectExecutor(std::span<const ArenaView> arenas, int rank, size_t arenaBytes, uint64_t& round,
                 Waiter& waiter, size_t oneShotBytes);

  void allReduce(const char* in, char* out, size_t count, size_t elementSize,
                 const ReduceContext& rc);
  void allGather(const char* in, char* out, size_t count, size_t elementSize);
  void reduceScatter(const char* in, char* out, size_t recvCount, size_t elementSize,
                     const ReduceContext& rc);
  void broadcast(const char* in, char* out, size_t count, size_t elementSize, int root);
  void reduce(const char* in, char* out, size_t count, size_t elementSize, const ReduceContext& rc,
              int root);
  /// Bytes this rank wrote into its shared regions for peers to read.
  uint64_t bytesSent() const { return bytesSent_; }

 private:
  /// One round through the cache-line-sized small slots.
  void allReduceSmall(const char* in, char* out, size_t count, size_t elementSize,
                      const ReduceContext& rc);
  /// Starts round `round_+1`: waits until its parity's regions are free.
  int beginRound();
  void ringPeers();
  void publishInput();
  void publishOutput();
  void waitInput(int rank);
  void waitAllInputs();
  void waitAllOutputs();
  /// out = in_0 (+) in_1 (+) ... over all ranks' input regions at byte offset `at`.
  void reduceAll(char* out, size_t at, size_t count, const ReduceContext& rc, int parity);

  std::span<const ArenaView> arenas_;
  int rank_;
  int nranks_;
  size_t arenaBytes_;
  uint64_t& round_;
  Waiter& waiter_;
  size_t oneShotBytes_;
  uint64_t bytesSent_ = 0;  // written into this rank's shared regions for peers
};

}  // namespace loom
