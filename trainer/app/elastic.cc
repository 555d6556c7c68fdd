#include "app/elastic.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "app/trainer.h"

namespace loom::train {
namespace {

/// A failure the survivors can go on from: a peer died, stalled or revoked.
bool peerFailure(const loom::Exception& e) {
  return e.result() == loomRemoteError || e.result() == loomRevoked;
}

/// The replicas (DP indices) all of whose ranks are among `alive` (world ranks
/// of the grid `shape`).
std::set<int> completeReplicas(const GridShape& shape, const std::vector<int>& alive) {
  std::set<int> complete;
  const std::set<int> living(alive.begin(), alive.end());
  for (int d = 0; d < shape.dp; ++d) {
    bool whole = true;
    for (int p = 0; p < shape.pp && whole; ++p) {
      for (int t = 0; t < shape.tp && whole; ++t) {
        whole = living.count(worldRankOf(shape, {d, t, p})) != 0;
      }
    }
    if (whole) complete.insert(d);
  }
  return complete;
}

/// Snapshots of the state at the start of the current step and the one
/// before: survivors may disagree by one step on how far they got (a peer can
/// finish the step's last collective before another sees the death).
struct StepStates {
  int step = -1;  // `current` is the state at the start of this step
  Trainer::Snapshot current;
  Trainer::Snapshot previous;

  void record(int at, Trainer::Snapshot s) {
    previous = std::move(current);
    current = std::move(s);
    step = at;
  }
  const Trainer::Snapshot& startOf(int at) const { return at == step ? current : previous; }
};

/// Who is left after a failure, and what this rank does about it.
struct Recovery {
  bool leave = false;  // this rank's replica lost a rank
  int redoStep = 0;
};

/// Shrinks `world` to the ranks of complete replicas (collective over the
/// survivors) and agrees on the step to redo. `oldRank` is this rank's rank in
/// the grid `shape` before the failure; `done` the steps it completed.
Recovery shrinkToCompleteReplicas(loom::Comm& world, TrainOptions& options, int oldRank, int done) {
  Recovery recovery;
  loom::Comm survivors = world.shrink({}, LOOM_SHRINK_ABORT);
  std::vector<int32_t> mine = {oldRank};
  std::vector<int32_t> alive(static_cast<size_t>(survivors.size()));
  survivors.allGather(std::span<const int32_t>(mine), std::span<int32_t>(alive));
  const GridShape shape = options.grid;
  const std::set<int> complete = completeReplicas(shape, {alive.begin(), alive.end()});
  std::vector<int> leaving;  // ranks of `survivors` whose replica is broken
  for (int r = 0; r < survivors.size(); ++r) {
    if (complete.count(coordsOf(shape, alive[static_cast<size_t>(r)]).dp) == 0)
      leaving.push_back(r);
  }
  if (complete.count(coordsOf(shape, oldRank).dp) == 0) {
    recovery.leave = true;  // the others exclude this rank; it takes no part
    return recovery;
  }
  if (complete.empty()) {
    throw std::runtime_error("no data-parallel replica is complete any more");
  }
  world = leaving.empty() ? std::move(survivors) : survivors.shrink(leaving);
  const int perReplica = options.samplesPerRank();
  options.grid.dp = static_cast<int>(complete.size());
  options.batch = perReplica * options.grid.dp;
  // The step to redo: the first one not every survivor completed.
  std::vector<double> least = {static_cast<double>(done)};
  world.allReduce(std::span<double>(least), loomMin);
  recovery.redoStep = static_cast<int>(least[0]);
  return recovery;
}

}  // namespace

InjectedFault injectedFault() {
  InjectedFault fault;
  if (const char* text = std::getenv("LOOM_TRAIN_KILL")) {
    if (std::sscanf(text, "%d:%d", &fault.rank, &fault.step) != 2) fault = {};
  }
  return fault;
}

bool runElasticTraining(loom::Comm& world, TrainOptions options, const Corpus& corpus,
                        const ElasticCallbacks& callbacks) {
  const InjectedFault fault = injectedFault();
  const int startRank = world.rank();
  int gridRank = startRank;  // this rank's place in the current grid
  auto trainer = std::make_unique<Trainer>(world.get(), options, corpus);
  if (callbacks.onStart) callbacks.onStart(*trainer, startRank == 0);
  StepStates states;
  int step = 0;
  while (step < options.steps) {
    if (states.step != step) states.record(step, trainer->snapshot());
    try {
      if (startRank == fault.rank && step == fault.step) ::kill(::getpid(), SIGKILL);
      const StepStats stats = trainer->step(step);
      callbacks.onStep(stats, world.rank() == 0);
      ++step;
      continue;
    } catch (const loom::Exception& e) {
      if (!peerFailure(e)) throw;
      std::fprintf(stderr, "loom-train: rank %d: step %d failed (%s); recovering\n", startRank,
                   step, e.what());
      std::fflush(stderr);
    }
    const auto failedAt = std::chrono::steady_clock::now();
    trainer->revokeAll();
    trainer.reset();
    const Recovery recovery = shrinkToCompleteReplicas(world, options, gridRank, step);
    if (recovery.leave) return false;
    // Survivors are at most one step apart: the redo step is this one or the one before.
    if (recovery.redoStep != step && recovery.redoStep != step - 1) {
      throw std::runtime_error("survivors disagree on the step to redo");
    }
    gridRank = world.rank();
    trainer = std::make_unique<Trainer>(world.get(), options, corpus);
    trainer->restore(states.startOf(recovery.redoStep));
    step = recovery.redoStep;
    states = {};
    if (callbacks.onRecovered) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - failedAt).count();
      callbacks.onRecovered(step, world.size(), options.grid.dp, seconds, world.rank() == 0);
    }
  }
  return true;
}

}  // namespace loom::train
